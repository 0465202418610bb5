// See block_scales.h.
#include "reference/block_scales.h"

#include <string.h>

#include "common/groups.h"
#include "formats/block_quant.h"
#include "formats/codecs.h"

namespace gg::ref {
namespace {

// Scale entries along one dimension of `length` elements.
int64_t scale_count(int64_t length, int64_t block, bool tokens, int64_t groups) {
  return tokens && block > 1 ? ragged_block_capacity(length, block, groups)
                             : blocks_of(length, block);
}

// Scale coordinate of the block that starts at element `begin`.
int64_t first_scale(int64_t begin, int64_t block, bool tokens, const GroupTable& table, int32_t g) {
  return tokens && block > 1 ? first_block(table, g, block) : begin / block;
}

// GG_BLOCK_ROWWISE: the region's one block along the blocked dimension. Its
// entry is the only one of a data row (cols) or column (rows); along a
// ragged dimension the block is the whole group and its entry is g, so the
// scale matrix has one entry per group there whatever the sizes.
BlockScales rowwise_scales_of(const gg_tensor& tensor, int32_t g, const Region& region,
                              bool blocks_along_cols, bool blocked_tokens,
                              const GroupTable& table) {
  const int64_t blocks = blocked_tokens ? static_cast<int64_t>(table.groups.size()) : 1;
  const int64_t first = blocked_tokens ? g : 0;
  const int64_t rows = tensor.shape[tensor.rank - 2];
  const int64_t cols = tensor.shape[tensor.rank - 1];
  const int64_t row_length = blocks_along_cols ? blocks : cols;
  const int64_t region_rows = region.row_end - region.row_begin;
  const int64_t region_cols = region.col_end - region.col_begin;
  const int64_t matrix_bytes =
      (blocks_along_cols ? rows : blocks) * row_length * block_scale_bytes(GG_BLOCK_ROWWISE);
  return BlockScales{GG_BLOCK_ROWWISE,
                     group_pointer(tensor.block_scales, tensor, g, matrix_bytes),
                     blocks_along_cols ? 1 : std::max<int64_t>(1, region_rows),
                     blocks_along_cols ? std::max<int64_t>(1, region_cols) : 1,
                     blocks_along_cols ? region.row_begin : first,
                     blocks_along_cols ? first : region.col_begin,
                     row_length};
}

}  // namespace

int64_t block_scale_bytes(gg_block_scaling scaling) {
  return scaling == GG_BLOCK_1X128 || scaling == GG_BLOCK_128X128 || scaling == GG_BLOCK_ROWWISE
             ? 4
             : 1;
}

BlockScales block_scales_of(const gg_tensor& tensor, int32_t g, const Region& region,
                            bool blocks_along_cols, TokenDim tokens, const GroupTable& table) {
  if (tensor.block_scaling == GG_BLOCK_NONE) {
    return BlockScales{GG_BLOCK_NONE,
                       nullptr,
                       std::max<int64_t>(1, region.row_end - region.row_begin),
                       std::max<int64_t>(1, region.col_end - region.col_begin),
                       0,
                       0,
                       1};
  }
  const bool token_rows = table.ragged && tokens == TokenDim::kRows;
  const bool token_cols = table.ragged && tokens == TokenDim::kCols;
  if (tensor.block_scaling == GG_BLOCK_ROWWISE) {
    return rowwise_scales_of(tensor, g, region, blocks_along_cols,
                             blocks_along_cols ? token_cols : token_rows, table);
  }
  const int64_t size = fmt::block_size(tensor.block_scaling);
  int64_t block_rows = blocks_along_cols ? 1 : size;
  int64_t block_cols = blocks_along_cols ? size : 1;
  if (tensor.block_scaling == GG_BLOCK_128X128) block_rows = block_cols = size;

  const int64_t groups = static_cast<int64_t>(table.groups.size());
  const int64_t rows = tensor.shape[tensor.rank - 2];
  const int64_t cols = tensor.shape[tensor.rank - 1];
  const int64_t row_length = scale_count(cols, block_cols, token_cols, groups);
  const int64_t matrix_bytes = scale_count(rows, block_rows, token_rows, groups) * row_length *
                               block_scale_bytes(tensor.block_scaling);
  return BlockScales{tensor.block_scaling,
                     group_pointer(tensor.block_scales, tensor, g, matrix_bytes),
                     block_rows,
                     block_cols,
                     first_scale(region.row_begin, block_rows, token_rows, table, g),
                     first_scale(region.col_begin, block_cols, token_cols, table, g),
                     row_length};
}

double block_scale_value(const BlockScales& scales, int64_t index) {
  const uint8_t* bytes = static_cast<const uint8_t*>(scales.base);
  switch (scales.scaling) {
    case GG_BLOCK_NONE:
      return 1.0;
    case GG_BLOCK_MX32:
      return fmt::e8m0_to_float(bytes[index]);
    case GG_BLOCK_NV16:
      return fmt::ue4m3_to_float(bytes[index]);
    case GG_BLOCK_1X128:
    case GG_BLOCK_128X128:
    case GG_BLOCK_ROWWISE: {
      float value;
      memcpy(&value, bytes + index * 4, sizeof value);
      return value;
    }
  }
  return 1.0;
}

}  // namespace gg::ref

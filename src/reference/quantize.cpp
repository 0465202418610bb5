// Reference grouped quantize: rowwise and columnwise outputs in every format.
//
// Two passes over the input. The first takes each group's amax (and the
// tensor's, their maximum), which per-tensor and per-group scales need before
// any element is coded. The second walks each requested output group by group
// in the output's own coordinates (the columnwise output reads the input
// transposed) and, block by block, decides the block's scale from its amax
// and codes its elements, each decision by the one function of
// formats/block_quant.h that the GPU kernels call too. A block's extent and
// its scale entry come from block_scales.h, the same rule the GEMM reads
// scales with; without block scales a group's region is a single block.
#include <stdint.h>
#include <string.h>

#include <vector>

#include "formats/block_quant.h"
#include "formats/codecs.h"
#include "reference/block_scales.h"
#include "reference/group_table.h"
#include "reference/matrix_view.h"
#include "reference/reference.h"

namespace gg::ref {
namespace {

enum class Scheme {
  kFp8Current,  // fp8, one fp32 scale per tensor or group from its amax
  kFp8Block,    // fp8, one fp32 scale per 1 x 128 or 128 x 128 block or per row
  kMx,          // fp8 or e2m1, one e8m0 scale per 32 elements
  kNvfp4        // e2m1, one ue4m3 scale per 16 elements and an fp32 tensor scale
};

Scheme scheme_of(const gg_tensor& out) {
  switch (out.block_scaling) {
    case GG_BLOCK_NONE:
      return Scheme::kFp8Current;
    case GG_BLOCK_MX32:
      return Scheme::kMx;
    case GG_BLOCK_NV16:
      return Scheme::kNvfp4;
    case GG_BLOCK_1X128:
    case GG_BLOCK_128X128:
    case GG_BLOCK_ROWWISE:
      break;
  }
  return Scheme::kFp8Block;
}

// The input seen in an output's coordinates.
struct Source {
  MatrixView input;
  bool transposed;
  float at(int64_t row, int64_t col) const {
    return fmt::decode(input.dtype, input.base,
                       transposed ? input.index(col, row) : input.index(row, col));
  }
};

// Largest |x| in the region, by the kernels' rule (a NaN wins).
float region_amax(const Source& source, const Region& region) {
  float amax = 0.0f;
  for (int64_t r = region.row_begin; r < region.row_end; ++r) {
    for (int64_t c = region.col_begin; c < region.col_end; ++c) {
      amax = fmt::amax_accumulate(amax, source.at(r, c));
    }
  }
  return amax;
}

// The fp32 scale of a whole tensor or group; 1 where the output has none, so
// every output dequantizes as element * block scale * scale.
float outer_scale_from_amax(Scheme scheme, const gg_tensor& out, float amax) {
  if (out.scale_extent == GG_SCALE_NONE) return 1.0f;
  switch (scheme) {
    case Scheme::kFp8Current:
      return fmt::fp8_scale_from_amax(amax, out.dtype);
    case Scheme::kNvfp4:
      return fmt::nvfp4_tensor_scale(amax);
    case Scheme::kFp8Block:
    case Scheme::kMx:
      break;
  }
  return 1.0f;
}

// Codes every element of `block` with code_of(x) into `out`.
template <class CodeOf>
void store_codes(const MatrixView& out, const Source& source, const Region& block, CodeOf code_of) {
  uint8_t* bytes = static_cast<uint8_t*>(out.base);
  for (int64_t r = block.row_begin; r < block.row_end; ++r) {
    for (int64_t c = block.col_begin; c < block.col_end; ++c) {
      const uint8_t code = code_of(source.at(r, c));
      const int64_t index = out.index(r, c);
      if (out.dtype == GG_DTYPE_E2M1) {
        fmt::e2m1_set(bytes, index, code);
      } else {
        bytes[index] = code;
      }
    }
  }
}

// Decides the scale of one block, stores it at entry `scale_index`, and
// codes the block's elements.
void quantize_block(Scheme scheme, const MatrixView& out, const BlockScales& scales,
                    int64_t scale_index, const Source& source, const Region& block,
                    float outer_scale) {
  const gg_dtype dtype = out.dtype;
  uint8_t* scale_bytes = static_cast<uint8_t*>(scales.base);
  switch (scheme) {
    case Scheme::kFp8Current:
      store_codes(out, source, block,
                  [&](float x) { return fmt::fp8_quantize_element(x, outer_scale, dtype); });
      break;
    case Scheme::kFp8Block: {
      const float scale = fmt::fp8_scale_from_amax(region_amax(source, block), dtype);
      memcpy(scale_bytes + scale_index * static_cast<int64_t>(sizeof scale), &scale, sizeof scale);
      store_codes(out, source, block,
                  [&](float x) { return fmt::fp8_quantize_element(x, scale, dtype); });
      break;
    }
    case Scheme::kMx: {
      const uint8_t scale = fmt::mx_block_scale(region_amax(source, block), dtype);
      scale_bytes[scale_index] = scale;
      store_codes(out, source, block,
                  [&](float x) { return fmt::mx_quantize_element(x, scale, dtype); });
      break;
    }
    case Scheme::kNvfp4: {
      const uint8_t scale = fmt::nvfp4_block_scale(region_amax(source, block), outer_scale);
      scale_bytes[scale_index] = scale;
      store_codes(out, source, block,
                  [&](float x) { return fmt::nvfp4_quantize_element(x, scale, outer_scale); });
      break;
    }
  }
}

void quantize_output(const gg_quantize_desc& desc, const gg_tensor& out, bool columnwise,
                     const GroupTable& table, const std::vector<float>& group_amax,
                     float tensor_amax) {
  const Scheme scheme = scheme_of(out);
  const TokenDim tokens = columnwise ? TokenDim::kCols : TokenDim::kRows;
  const bool per_group = out.scale_extent == GG_SCALE_GROUP;
  for (int32_t g = 0; g < desc.num_groups; ++g) {
    const float outer_scale = outer_scale_from_amax(
        scheme, out, per_group ? group_amax[static_cast<size_t>(g)] : tensor_amax);
    // A per-tensor scale is the same for every group: storing it again is harmless.
    if (out.scale_extent != GG_SCALE_NONE) out.scale[per_group ? g : 0] = outer_scale;

    const MatrixView matrix = matrix_of(out, g);
    const Source source{matrix_of(desc.input, g), columnwise};
    const Region region =
        group_region(matrix.rows, matrix.cols, tokens, table.groups[static_cast<size_t>(g)]);
    const BlockScales scales = block_scales_of(out, g, region, true, tokens, table);
    if (out.block_scaling == GG_BLOCK_ROWWISE) {
      // Each output row is one block, an empty one too (an empty group of the
      // columnwise output): amax 0 writes its scale as 1, so every entry of
      // the scales is defined. An output of no elements may have no scale
      // storage (groupgemm.h), so nothing is written for it.
      if (matrix.rows == 0 || matrix.cols == 0) continue;
      for (int64_t r = region.row_begin; r < region.row_end; ++r) {
        const Region row{r, r + 1, region.col_begin, region.col_end};
        quantize_block(scheme, matrix, scales, scales.index(r - region.row_begin, 0), source, row,
                       outer_scale);
      }
      continue;
    }
    for_each_block(region, scales, [&](const Region& block, int64_t scale_index) {
      quantize_block(scheme, matrix, scales, scale_index, source, block, outer_scale);
    });
  }
}

}  // namespace

void grouped_quantize(const gg_quantize_desc& desc, uint32_t* flags) {
  const gg_tensor& input = desc.input;
  const GroupTable table =
      desc.group_sizes.sizes != nullptr
          ? read_groups(desc.group_sizes, desc.num_groups, input.shape[0], flags)
          : stacked_groups(desc.num_groups, input.shape[1]);

  std::vector<float> group_amax(static_cast<size_t>(desc.num_groups));
  float tensor_amax = 0.0f;
  for (int32_t g = 0; g < desc.num_groups; ++g) {
    const MatrixView matrix = matrix_of(input, g);
    const Region region = group_region(matrix.rows, matrix.cols, TokenDim::kRows,
                                       table.groups[static_cast<size_t>(g)]);
    group_amax[static_cast<size_t>(g)] = region_amax(Source{matrix, false}, region);
    tensor_amax = fmt::amax_accumulate(tensor_amax, group_amax[static_cast<size_t>(g)]);
    if (desc.amax != nullptr) desc.amax[g] = group_amax[static_cast<size_t>(g)];
  }

  if (desc.rowwise.data != nullptr) {
    quantize_output(desc, desc.rowwise, false, table, group_amax, tensor_amax);
  }
  if (desc.columnwise.data != nullptr) {
    quantize_output(desc, desc.columnwise, true, table, group_amax, tensor_amax);
  }
}

}  // namespace gg::ref

// Where the block scales of one region of one matrix live, and a walk over
// the region's blocks.
//
// The rule, shared by GEMM operands and quantize outputs: a block spans
// `block_rows x block_cols` elements (1 x bs or bs x 1 along the blocked
// dimension, 128 x 128 for GG_BLOCK_128X128, the whole blocked extent of the
// region for GG_BLOCK_ROWWISE); the scale matrix is packed row major with one
// entry per block. Along the token dimension of a ragged
// tensor, blocks longer than one element restart at every group start, so
// group g's blocks begin at first_block(table, g, block) and that dimension
// of the scale matrix is its capacity, ragged_block_capacity(M, block, G);
// a rowwise block there is the whole group, entry g of G.
// Every other dimension counts blocks from 0. A region without block scales
// is walked as one block, so callers need no second loop for that case.
#pragma once

#include <stdint.h>

#include <algorithm>

#include "groupgemm/groupgemm.h"
#include "reference/group_table.h"
#include "reference/matrix_view.h"

namespace gg::ref {

struct BlockScales {
  gg_block_scaling scaling;
  void* base;                      // this matrix's scale matrix; NULL without block scales
  int64_t block_rows, block_cols;  // elements per block
  int64_t first_row, first_col;    // scale coordinates of the region's first block
  int64_t row_length;              // scale entries per scale row
  // Entry of block (i, j), counted from the region's first block.
  int64_t index(int64_t i, int64_t j) const { return (first_row + i) * row_length + first_col + j; }
};

// The blocks of `region` of matrix g of `tensor`, group g of `table`.
// `blocks_along_cols`: 1 x bs blocks when true, bs x 1 when false.
BlockScales block_scales_of(const gg_tensor& tensor, int32_t g, const Region& region,
                            bool blocks_along_cols, TokenDim tokens, const GroupTable& table);

// Bytes of one scale entry: e8m0 and ue4m3 take one, fp32 (1x128, 128x128,
// rowwise) four.
int64_t block_scale_bytes(gg_block_scaling scaling);

// The value of scale entry `index` (1 when the tensor has no block scales).
double block_scale_value(const BlockScales& scales, int64_t index);

// Calls visit(block, index) for every block of `region`, in row-major block
// order, with `block` cut at the region's edges.
template <class Visit>
void for_each_block(const Region& region, const BlockScales& scales, Visit&& visit) {
  for (int64_t i = 0, r = region.row_begin; r < region.row_end; ++i, r += scales.block_rows) {
    for (int64_t j = 0, c = region.col_begin; c < region.col_end; ++j, c += scales.block_cols) {
      const Region block{r, std::min(r + scales.block_rows, region.row_end), c,
                         std::min(c + scales.block_cols, region.col_end)};
      visit(block, scales.index(i, j));
    }
  }
}

}  // namespace gg::ref

// The scales of one verify operand, drawn at random, and the factor each
// element is multiplied by: groupgemm.h's value = element x block scale x
// fp32 scale.
//
// Block scales run along the contraction and are packed row major over the
// matrix as stored, one matrix after another, in the shape
// gg_block_scale_shape gives; where the contraction is the tokens of a
// ragged operand (ragged-K), blocks restart at every group start, group g's
// first block following all blocks of the groups before it. 128 x 128
// blocks (stacked weights) tile both dimensions. That layout is written out
// here on its own, not taken from the library, so that `verify` checks the
// library's reading of it. Every value drawn is a short power-of-two
// multiple (a few significant bits), so element x block scale x fp32 scale
// is exact in a double.
#pragma once

#include <stdint.h>

#include <vector>

#include "cli/problem.h"
#include "cli/random.h"

namespace gg::cli {

// Where an operand sits in its problem.
struct OperandRole {
  MatrixSet set;            // logical matrices
  gg_layout layout;         // as stored
  int contraction;          // the logical dimension summed over: 0 rows, 1 cols
  bool token_rows;          // logical rows are tokens (else matrix g belongs to group g)
  bool ragged_contraction;  // the contraction is those tokens (ragged-K)
};

// The roles of a problem's operands: ragged-M contracts the lhs along its
// columns (K) and the weights along their rows; ragged-K contracts both
// along their token rows.
OperandRole lhs_role(const Problem& problem);
OperandRole rhs_role(const Problem& problem);
// The block scaling each operand carries under the problem's input scaling.
gg_block_scaling lhs_blocks(const Problem& problem);
gg_block_scaling rhs_blocks(const Problem& problem);

// An operand's block scales as stored: `count` matrices of rows x cols
// entries (gg_block_scale_shape), each entry_bytes wide.
struct BlockScaleShape {
  int64_t count = 0, rows = 0, cols = 0;
  size_t entry_bytes = 0;
  double bytes() const {
    return static_cast<double>(count) * static_cast<double>(rows) * static_cast<double>(cols) *
           static_cast<double>(entry_bytes);
  }
};
// Throws Failure when the library refuses the shape.
BlockScaleShape block_scale_shape(const OperandRole& role, gg_block_scaling blocks,
                                  int32_t groups);
// The bytes of the block scales a product reads for the given sizes: the
// entries of the routed token rows (ragged-K: of each group's blocks) and
// of the weights of non-empty groups.
double live_block_scale_bytes(const Problem& problem, const std::vector<int64_t>& sizes);
// The stored bytes of block scale 1 (e8m0, ue4m3 or fp32), entry_bytes long.
std::vector<uint8_t> unit_block_scale(gg_block_scaling blocks);

class OperandScales {
 public:
  OperandScales() = default;  // no scales: every factor is 1
  // Scales drawn from `random`; `first_scale` is the fp32 scale of the
  // tensor, or of group 0 (the others halve it, cycling over three). Throws Failure when the
  // library refuses the shape.
  OperandScales(const OperandRole& role, const std::vector<int64_t>& sizes, gg_block_scaling blocks,
                gg_scale_extent extent, float first_scale, Random& random);

  // Block scale x fp32 scale of logical element (matrix, row, col); 1 for
  // token rows past sum(sizes), which belong to no group.
  double factor(int64_t matrix, int64_t row, int64_t col) const;

  std::vector<uint8_t> block_bytes;  // as stored: e8m0, ue4m3 or fp32 entries
  std::vector<float> scale;          // none, 1 or G fp32 values

 private:
  int64_t entry(int64_t matrix, int64_t row, int64_t col, int32_t group) const;

  OperandRole role_{};
  gg_block_scaling blocks_ = GG_BLOCK_NONE;
  gg_scale_extent extent_ = GG_SCALE_NONE;
  int block_dim_ = 0;  // stored dimension the blocks run along
  int64_t scale_rows_ = 0, scale_cols_ = 0;
  std::vector<double> block_values_;   // one per entry
  std::vector<int32_t> group_of_row_;  // token rows only; -1 past sum(sizes)
  std::vector<int64_t> group_start_, first_block_;
};

}  // namespace gg::cli

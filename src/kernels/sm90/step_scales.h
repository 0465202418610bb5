// Where the sm90 block-scaled fp8 kernel finds the fp32 scales of one
// k-step (GG_HD, so tests/plan checks them on the CPU against the
// reference's own indexing). Ragged-M with 1 x 128 activations and 128 x 128
// weights: a 128-deep k-step is one block of both along K, so step ks reads
// k-block ks of the lhs row's scales and of the output column's n-block.
// Ragged-K with 1 x 128 blocks along the tokens of both operands (the
// weight gradient's columnwise copies): a group's k-steps start at its first
// token, so step ks is the group's token block ks in both. Ragged-M with
// MX32 blocks of both operands along K (mxfp8 on fp8 wgmma): step ks holds
// blocks 4 ks to 4 ks + 3 of each row's scales.
#pragma once

#include <stdint.h>

#include "common/hd.h"
#include "kernels/portable/operand_decode.h"
#include "plan/plan.h"

namespace gg::sm90 {

// Entry of lhs row `row`'s scale of k-step ks: [M, ceil(K/128)] (1 x 128).
GG_HD int64_t lhs_step_scale_entry(const portable::QuantOperand& lhs, int64_t row, int ks) {
  return row * lhs.scale_row_length + ks;
}

// Entry of output column `col`'s scale of k-step ks in its group's rhs
// scales, [ceil(N/128), ceil(K/128)] (128 x 128).
GG_HD int64_t rhs_step_scale_entry(const portable::QuantOperand& rhs, int64_t col, int ks) {
  return (col / 128) * rhs.scale_row_length + ks;
}

// Entry of row `row`'s scale of k-step ks of a ragged-K group whose first
// token block is block column `first_block` (the group table's prefix of
// token blocks): [P or Q, blocks of all groups] (1 x 128 along the tokens).
GG_HD int64_t token_step_scale_entry(const portable::QuantOperand& q, int64_t row,
                                     int first_block, int ks) {
  return row * q.scale_row_length + first_block + ks;
}

// Entry of block j of k-step ks in the MX32 scale row of `outer` (an lhs
// token row, or an output column in its group's rhs scales), [rows,
// ceil(K/32)]; -1 past K's last block, whose products are zeros.
GG_HD int64_t mx_step_scale_entry(const portable::QuantOperand& q, int64_t outer, int ks, int j) {
  const int64_t block = int64_t{ks} * kSm90MxBlocksPerStep + j;
  return block < q.scale_row_length ? outer * q.scale_row_length + block : -1;
}

}  // namespace gg::sm90

// Where the sm90 block-scaled fp8 kernel finds the fp32 scales of one
// k-step (GG_HD, so tests/plan checks them on the CPU against the
// reference's own indexing). Ragged-M with 1 x 128 activations and 128 x 128
// weights: a 128-deep k-step is one block of both along K, so step ks reads
// k-block ks of the lhs row's scales and of the output column's n-block.
#pragma once

#include <stdint.h>

#include "common/hd.h"
#include "kernels/portable/operand_decode.h"

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

}  // namespace gg::sm90

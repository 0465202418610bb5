// How the portable kernel feeds mma.sync.m16n8k16 and reads its results.
// GG_HD, so tests/plan checks the chain ldmatrix -> mma -> output position on
// the CPU against the PTX ISA's fragment tables.
//
// Operands arrive as 16 (outer) x 16 (depth) blocks in four registers
// (operand_layout.h): r[0] outers 0-7 x depths 0-7, r[1] outers 8-15 x
// depths 0-7, r[2] outers 0-7 x depths 8-15, r[3] outers 8-15 x depths 8-15.
// An lhs block is the A operand as it stands. An rhs block holds two 8-column
// B operands: columns 8h .. 8h+7 take {r[h], r[2 + h]}, the low then the high
// depths.
#pragma once

#include "common/hd.h"

namespace gg::portable {

// Register of an rhs block that holds the B operand's `depth_half` (0: depths
// 0-7, 1: depths 8-15) for the 8 columns `column_half` (0: 0-7, 1: 8-15).
GG_HD int rhs_register(int column_half, int depth_half) { return column_half + 2 * depth_half; }

// Position in its 16 x 8 block of accumulator e (0..3) of lane `lane`.
GG_HD int accumulator_row(int lane, int e) { return lane / 4 + 8 * (e / 2); }
GG_HD int accumulator_col(int lane, int e) { return 2 * (lane % 4) + e % 2; }

}  // namespace gg::portable

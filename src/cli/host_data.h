// The host copy of a verify problem: every operand as logical values (for
// the fp64 product and the comparison) and as stored bytes and scales (for
// the library).
//
// Values are uniform in [-1, 1), rounded to the operand's dtype so both
// views hold the same numbers (e2m1 elements: each of the 16 codes equally
// often), then multiplied by their block and fp32 scales (operand_scales.h),
// as the library dequantizes them. Memory that a correct path must not use is
// poisoned: ragged input rows past sum(sizes) are NaN, so reading them for a
// result shows up as NaN in the output; with beta = 0 the output's live part
// starts as NaN, so reading it (instead of ignoring it) shows up too. Output
// rows past sum(sizes) hold finite values the comparison expects unchanged.
#pragma once

#include <stdint.h>

#include <vector>

#include "cli/operand_scales.h"
#include "cli/problem.h"

namespace gg::cli {

struct HostOperand {
  std::vector<double> values;  // logical order: [matrix][row][col], times their scales
  std::vector<uint8_t> bytes;  // storage order and dtype (e2m1: two a byte, even one low)
  OperandScales scales;        // block scales and fp32 scale, as the input format asks
};

struct HostProblem {
  HostOperand lhs, rhs, out, bias;
};

HostProblem make_host_problem(const Problem& problem, const std::vector<int64_t>& sizes,
                              uint64_t seed);

// The logical values stored in `bytes` of an output (always layout N).
std::vector<double> decode_output(const Problem& problem, const std::vector<uint8_t>& bytes);

}  // namespace gg::cli

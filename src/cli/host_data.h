// The host copy of a verify problem: every operand as logical values (for
// the fp64 product and the comparison) and as stored bytes (for the library).
//
// Values are uniform in [-1, 1), rounded to the operand's dtype so both
// views hold the same numbers. Memory that a correct path must not use is
// poisoned: ragged input rows past sum(sizes) are NaN, so reading them for a
// result shows up as NaN in the output; with beta = 0 the output's live part
// starts as NaN, so reading it (instead of ignoring it) shows up too. Output
// rows past sum(sizes) hold finite values the comparison expects unchanged.
#pragma once

#include <stdint.h>

#include <vector>

#include "cli/problem.h"

namespace gg::cli {

struct HostOperand {
  std::vector<double> values;  // logical order: [matrix][row][col]
  std::vector<uint8_t> bytes;  // storage order and dtype
};

struct HostProblem {
  HostOperand lhs, rhs, out, bias;
  float lhs_scale = 1.0f;  // fp8 inputs only
  float rhs_scale = 1.0f;
};

HostProblem make_host_problem(const Problem& problem, const std::vector<int64_t>& sizes,
                              uint64_t seed);

// The logical values stored in `bytes` of an output (always layout N).
std::vector<double> decode_output(const Problem& problem, const std::vector<uint8_t>& bytes);

}  // namespace gg::cli

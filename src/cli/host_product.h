// The fp64 product: what a problem's output must be, computed on the host
// straight from the definition in groupgemm.h: the operands dequantized
// (element x block scale x fp32 scale, host_data.h), then products and sums
// in double, one rounding to the output dtype. `verify` compares the library's
// reference path against it, since the reference cannot check itself.
#pragma once

#include <stdint.h>

#include <vector>

#include "cli/host_data.h"
#include "cli/problem.h"

namespace gg::cli {

// The whole output in logical order; ragged-M rows past sum(sizes) keep
// their initial values.
std::vector<double> fp64_product(const Problem& problem, const std::vector<int64_t>& sizes,
                                 const HostProblem& host);

// What enters each output element, |alpha| sum |a||b| + |beta c| + |bias|
// (unrounded): the scale of its accumulation error. Ragged-M rows past
// sum(sizes) keep their initial values.
std::vector<double> fp64_magnitudes(const Problem& problem, const std::vector<int64_t>& sizes,
                                    const HostProblem& host);

}  // namespace gg::cli

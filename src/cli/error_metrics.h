// How far a computed output is from the expected one.
//
// An element passes when |actual - expected| <= u·|expected| + c·rms, where
// rms is the root mean square of the expected values.
//   u = one unit in the last place of the output dtype relative to the
//       value (2^-7 bf16, 2^-10 fp16, 2^-23 fp32): two correct paths round
//       nearly equal sums, which can land one unit apart and no further;
//   c = (contraction + 8) · 2^-24: an fp32 accumulation over `contraction`
//       terms in another order, and the epilogue's few fp32 roundings, err
//       by far less than this fraction of the typical output, which also
//       covers results that cancel to near zero.
// fp8 operands on a GPU path may meet Hopper's fp8 tensor cores, whose
// adder is narrower than fp32: there an element may also err by
//   m·magnitude, m = (ceil(contraction / 32) + 8) · 2^-13,
// magnitude = |alpha| sum|a||b| + |beta c| + |bias| of that element, 2^-13
// for each 32-deep wgmma and a few more for the epilogue (the bound the GPU
// tests use, tests/gpu/output_check.h, from errors measured on an H100).
// A 1% error in bf16 fails; NaN never passes.
#pragma once

#include <stdint.h>

#include <vector>

#include "groupgemm/groupgemm.h"

namespace gg::cli {

struct Tolerance {
  double relative;  // u
  double of_rms;    // c
  double of_magnitude = 0.0;  // m
};

struct ErrorMetrics {
  double max_abs = 0.0;
  double max_rel = 0.0;  // over elements whose expected value is not zero
  double rel_l2 = 0.0;   // ||actual - expected|| / ||expected||
  int64_t over_tolerance = 0;
  int64_t compared = 0;
};

// `fp8_tensor_cores`: the product may run on them (m above; else m = 0).
Tolerance output_tolerance(gg_dtype out_dtype, int64_t contraction, bool fp8_tensor_cores = false);

// Compares the first `count` elements; `magnitudes` (one per element) where
// tolerance.of_magnitude is not 0.
ErrorMetrics compare_outputs(const std::vector<double>& actual, const std::vector<double>& expected,
                             int64_t count, Tolerance tolerance,
                             const std::vector<double>* magnitudes = nullptr);

}  // namespace gg::cli

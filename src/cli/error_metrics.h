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
// A 1% error in bf16 fails; NaN never passes.
#pragma once

#include <stdint.h>

#include <vector>

#include "groupgemm/groupgemm.h"

namespace gg::cli {

struct Tolerance {
  double relative;  // u
  double of_rms;    // c
};

struct ErrorMetrics {
  double max_abs = 0.0;
  double max_rel = 0.0;  // over elements whose expected value is not zero
  double rel_l2 = 0.0;   // ||actual - expected|| / ||expected||
  int64_t over_tolerance = 0;
  int64_t compared = 0;
};

Tolerance output_tolerance(gg_dtype out_dtype, int64_t contraction);

// Compares the first `count` elements.
ErrorMetrics compare_outputs(const std::vector<double>& actual, const std::vector<double>& expected,
                             int64_t count, Tolerance tolerance);

}  // namespace gg::cli

// Error metrics: see error_metrics.h.
#include "cli/error_metrics.h"

#include <algorithm>
#include <cmath>

namespace gg::cli {

namespace {

constexpr int64_t kEpilogueRoundings = 8;
constexpr int64_t kWgmmaDepth = 32;  // fp8 elements one wgmma sums
constexpr int64_t kEpilogueChunks = 8;

}  // namespace

Tolerance output_tolerance(gg_dtype out_dtype, int64_t contraction, bool fp8_tensor_cores) {
  // Significand bits after the point: bf16 7, fp16 10, fp32 23.
  const int fraction_bits = out_dtype == GG_DTYPE_BF16 ? 7 : out_dtype == GG_DTYPE_FP16 ? 10 : 23;
  const int64_t chunks = (contraction + kWgmmaDepth - 1) / kWgmmaDepth + kEpilogueChunks;
  return {std::ldexp(1.0, -fraction_bits),
          static_cast<double>(contraction + kEpilogueRoundings) * std::ldexp(1.0, -24),
          fp8_tensor_cores ? static_cast<double>(chunks) * std::ldexp(1.0, -13) : 0.0};
}

ErrorMetrics compare_outputs(const std::vector<double>& actual, const std::vector<double>& expected,
                             int64_t count, Tolerance tolerance,
                             const std::vector<double>* magnitudes) {
  ErrorMetrics metrics;
  metrics.compared = count;
  double expected_squares = 0.0;
  for (int64_t i = 0; i < count; ++i) expected_squares += expected[i] * expected[i];
  const double rms = count > 0 ? std::sqrt(expected_squares / static_cast<double>(count)) : 0.0;
  const double floor = tolerance.of_rms * rms;
  double error_squares = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const double error = std::fabs(actual[i] - expected[i]);
    // NaN compares false everywhere: count it, and let it poison the figures.
    const double accumulation =
        magnitudes != nullptr ? tolerance.of_magnitude * (*magnitudes)[i] : 0.0;
    if (!(error <= tolerance.relative * std::fabs(expected[i]) + floor + accumulation))
      ++metrics.over_tolerance;
    error_squares += error * error;
    metrics.max_abs = std::isnan(error) ? error : std::max(metrics.max_abs, error);
    if (expected[i] != 0.0) {
      const double relative = error / std::fabs(expected[i]);
      metrics.max_rel = std::isnan(relative) ? relative : std::max(metrics.max_rel, relative);
    }
  }
  metrics.rel_l2 = expected_squares > 0.0 ? std::sqrt(error_squares / expected_squares)
                                          : std::sqrt(error_squares);
  return metrics;
}

}  // namespace gg::cli

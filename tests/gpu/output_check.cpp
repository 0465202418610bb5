// See output_check.h.
#include "gpu/output_check.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "gpu/values.h"

namespace gg::test {
namespace {

constexpr size_t kFailuresShown = 8;
constexpr double kEps32 = 0x1p-23;
constexpr double kFp8ChunkEps = 0x1p-13;  // per 32-deep wgmma (output_check.h)
constexpr int64_t kFp8Chunk = 32;

int64_t fp8_chunks(int64_t depth) { return (depth + kFp8Chunk - 1) / kFp8Chunk; }

// The relative-norm limit; for fp8 tensor cores it grows as the square root
// of the chunks summed, as independent errors do.
double norm_tolerance(gg_dtype dtype, Accumulation accumulation, int64_t max_depth) {
  const double rounding = dtype == GG_DTYPE_FP32 ? 0x1p-16 : dtype_epsilon(dtype) / 2;
  if (accumulation != Accumulation::kFp8TensorCores) return rounding;
  return std::max(rounding, 0x1p-12 * std::sqrt(static_cast<double>(fp8_chunks(max_depth) + 1)));
}

// The accumulation's error of one element, per unit of `scale`.
double accumulation_error(Accumulation accumulation, int64_t depth) {
  if (accumulation == Accumulation::kFp8TensorCores) {
    return 2.0 * static_cast<double>(fp8_chunks(depth) + 8) * kFp8ChunkEps;
  }
  return 2.0 * static_cast<double>(depth + 4) * kEps32;
}

}  // namespace

OutputCheck::OutputCheck(std::string what, gg_dtype dtype, bool exact,
                         Accumulation accumulation)
    : what_(std::move(what)), dtype_(dtype), exact_(exact), accumulation_(accumulation) {}

void OutputCheck::add(const ElementIndex& at, float got, float want, double scale, int64_t depth) {
  ++checked_;
  max_depth_ = std::max(max_depth_, depth);
  const double error = std::fabs(static_cast<double>(got) - static_cast<double>(want));
  const double bound = exact_ ? 0.0
                              : dtype_epsilon(dtype_) * std::fabs(want) +
                                    accumulation_error(accumulation_, depth) * scale +
                                    dtype_min_subnormal(dtype_);
  // NaN compares false, so a NaN on either side fails here.
  const bool ok = std::isfinite(got) && std::isfinite(want) && error <= bound;
  if (ok) {
    error_squares_ += error * error;
    want_squares_ += static_cast<double>(want) * want;
    return;
  }
  ++failed_;
  if (first_failures_.size() < kFailuresShown) {
    std::ostringstream line;
    line.precision(9);
    line << "[" << at.batch << ", " << at.row << ", " << at.col << "] got " << got << " want "
         << want << " |diff| " << error << " bound " << bound;
    first_failures_.push_back(line.str());
  }
}

void OutputCheck::report() const {
  if (failed_ > 0) {
    std::ostringstream message;
    message << what_ << ": " << failed_ << " of " << checked_ << " elements "
            << (exact_ ? "differ from the reference" : "outside the bound")
            << " ([batch, row, col] of the output; first " << first_failures_.size() << "):";
    for (const auto& line : first_failures_) message << "\n  " << line;
    ADD_FAILURE() << message.str();
    return;
  }
  if (want_squares_ > 0) {
    const double relative = std::sqrt(error_squares_ / want_squares_);
    EXPECT_LE(relative, norm_tolerance(dtype_, accumulation_, max_depth_))
        << what_ << ": relative L2 error over " << checked_ << " elements";
  }
}

}  // namespace gg::test

// Host problem data: see host_data.h.
#include "cli/host_data.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "cli/elements.h"
#include "cli/host_memory.h"
#include "cli/random.h"

namespace gg::cli {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// The fp32 scales of scaled inputs (of group 0): powers of two, so they
// cost no rounding.
constexpr float kLhsScale = 0.5f;
constexpr float kRhsScale = 0.25f;
// Block scales come from a stream of their own, so a format's elements are
// the same numbers with block scales as without.
constexpr uint64_t kScaleStream = 0x5ca1e5;
// What a poisoned e2m1 element (e2m1 has no NaN) holds instead: 6, its largest.
constexpr uint8_t kE2m1Poison = 0x7;

double e2m1_value(uint8_t code) {
  static const double kMagnitudes[] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  return (code & 8 ? -1.0 : 1.0) * kMagnitudes[code & 7];
}

// "G x rows x cols elements" (no G for a single matrix).
std::string dims_text(const MatrixSet& set) {
  const std::string matrix = std::to_string(set.rows) + " x " + std::to_string(set.cols);
  return (set.stacked ? std::to_string(set.count) + " x " : "") + matrix + " elements";
}

// Stores `value` (a NaN poisons) at storage index `stored` of `dtype`, and
// returns the element's value as stored.
double store_element(gg_dtype dtype, double value, int64_t stored, std::vector<uint8_t>& bytes) {
  if (dtype != GG_DTYPE_E2M1) {
    const size_t width = element_bytes(dtype);
    encode_element(dtype, value, &bytes[static_cast<size_t>(stored) * width]);
    return decode_element(dtype, &bytes[static_cast<size_t>(stored) * width]);
  }
  const uint8_t code =
      std::isnan(value) ? kE2m1Poison : static_cast<uint8_t>(std::min(15.0, (value + 1.0) * 8.0));
  bytes[static_cast<size_t>(stored / 2)] |= static_cast<uint8_t>(code << (4 * (stored % 2)));
  return std::isnan(value) ? kNaN : e2m1_value(code);
}

// Fills operand `name` with `value(row)`, called once per element in
// logical order (so a seed fixes every value), stored as `dtype`, times
// its scales.
template <typename ValueOf>
HostOperand make_operand(const char* name, const MatrixSet& set, gg_layout layout, gg_dtype dtype,
                         OperandScales scales, ValueOf value) {
  HostOperand operand;
  operand.scales = std::move(scales);
  const double elements = static_cast<double>(set.count) * static_cast<double>(set.rows) *
                          static_cast<double>(set.cols);  // may pass int64 for sizes refused here
  const double stored_bytes = dtype == GG_DTYPE_E2M1
                                  ? std::ceil(elements / 2)
                                  : elements * static_cast<double>(element_bytes(dtype));
  allocate_host(elements * sizeof(double) + stored_bytes,
                std::string("the ") + name + " (" + dims_text(set) + ", as fp64 and as stored)",
                [&] {
                  operand.values.resize(static_cast<size_t>(elements));
                  operand.bytes.assign(static_cast<size_t>(stored_bytes), 0);
                });
  int64_t logical = 0;
  for (int64_t matrix = 0; matrix < set.count; ++matrix) {
    for (int64_t row = 0; row < set.rows; ++row) {
      for (int64_t col = 0; col < set.cols; ++col, ++logical) {
        const int64_t stored = storage_index(set, layout, matrix, row, col);
        operand.values[static_cast<size_t>(logical)] =
            store_element(dtype, value(row), stored, operand.bytes) *
            operand.scales.factor(matrix, row, col);
      }
    }
  }
  return operand;
}

}  // namespace

HostProblem make_host_problem(const Problem& problem, const std::vector<int64_t>& sizes,
                              uint64_t seed) {
  Random random(seed);
  Random scale_random(seed ^ kScaleStream);
  const int64_t live_rows = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  const auto live_or_nan = [&](int64_t row) { return row < live_rows ? random.symmetric() : kNaN; };
  const auto any = [&](int64_t) { return random.symmetric(); };
  const bool ragged_k = problem.op == GG_OP_RAGGED_K;
  const bool read_out = problem.beta != 0.0;
  const InputScaling& scaling = problem.input_scaling;
  const OperandRole lhs = lhs_role(problem);
  const OperandRole rhs = rhs_role(problem);
  OperandScales lhs_scales(lhs, sizes, lhs_blocks(problem), scaling.extent, kLhsScale,
                           scale_random);
  OperandScales rhs_scales(rhs, sizes, rhs_blocks(problem), scaling.extent, kRhsScale,
                           scale_random);

  HostProblem host;
  host.lhs = make_operand("lhs", lhs.set, lhs.layout, problem.input_dtype, std::move(lhs_scales),
                          live_or_nan);
  if (ragged_k) {
    host.rhs = make_operand("rhs", rhs.set, rhs.layout, problem.input_dtype, std::move(rhs_scales),
                            live_or_nan);
    host.out = make_operand("output", out_matrices(problem), GG_LAYOUT_N, problem.out_dtype, {},
                            [&](int64_t) { return read_out ? random.symmetric() : kNaN; });
  } else {
    host.rhs =
        make_operand("rhs", rhs.set, rhs.layout, problem.input_dtype, std::move(rhs_scales), any);
    host.out = make_operand(
        "output", out_matrices(problem), GG_LAYOUT_N, problem.out_dtype, {},
        [&](int64_t row) { return row < live_rows && !read_out ? kNaN : random.symmetric(); });
  }
  if (problem.bias) {
    host.bias =
        make_operand("bias", bias_matrices(problem), GG_LAYOUT_N, problem.out_dtype, {}, any);
  }
  return host;
}

std::vector<double> decode_output(const Problem& problem, const std::vector<uint8_t>& bytes) {
  const size_t width = element_bytes(problem.out_dtype);
  std::vector<double> values;
  allocate_host(static_cast<double>(bytes.size() / width * sizeof(double)), "the output as fp64",
                [&] { values.resize(bytes.size() / width); });
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = decode_element(problem.out_dtype, &bytes[i * width]);
  return values;
}

}  // namespace gg::cli

// Host problem data: see host_data.h.
#include "cli/host_data.h"

#include <limits>
#include <numeric>
#include <string>

#include "cli/elements.h"
#include "cli/host_memory.h"
#include "cli/random.h"

namespace gg::cli {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Per-tensor scales of fp8 inputs: powers of two, so they cost no rounding.
constexpr float kLhsFp8Scale = 0.5f;
constexpr float kRhsFp8Scale = 0.25f;

// "G x rows x cols elements" (no G for a single matrix).
std::string dims_text(const MatrixSet& set) {
  const std::string matrix = std::to_string(set.rows) + " x " + std::to_string(set.cols);
  return (set.stacked ? std::to_string(set.count) + " x " : "") + matrix + " elements";
}

// Fills operand `name` with `value(row)`, called once per element in
// logical order (so a seed fixes every value), and rounds it to `dtype`.
template <typename ValueOf>
HostOperand make_operand(const char* name, const MatrixSet& set, gg_layout layout, gg_dtype dtype,
                         ValueOf value) {
  HostOperand operand;
  const size_t width = element_bytes(dtype);
  const double elements = static_cast<double>(set.count) * static_cast<double>(set.rows) *
                          static_cast<double>(set.cols);  // may pass int64 for sizes refused here
  allocate_host(elements * static_cast<double>(sizeof(double) + width),
                std::string("the ") + name + " (" + dims_text(set) + ", as fp64 and as stored)",
                [&] {
                  operand.values.resize(static_cast<size_t>(set.elements()));
                  operand.bytes.resize(static_cast<size_t>(set.elements()) * width);
                });
  int64_t logical = 0;
  for (int64_t matrix = 0; matrix < set.count; ++matrix) {
    for (int64_t row = 0; row < set.rows; ++row) {
      for (int64_t col = 0; col < set.cols; ++col, ++logical) {
        const int64_t stored = storage_index(set, layout, matrix, row, col);
        encode_element(dtype, value(row), &operand.bytes[stored * width]);
        operand.values[logical] = decode_element(dtype, &operand.bytes[stored * width]);
      }
    }
  }
  return operand;
}

}  // namespace

HostProblem make_host_problem(const Problem& problem, const std::vector<int64_t>& sizes,
                              uint64_t seed) {
  Random random(seed);
  const int64_t live_rows = std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
  const auto live_or_nan = [&](int64_t row) { return row < live_rows ? random.symmetric() : kNaN; };
  const auto any = [&](int64_t) { return random.symmetric(); };
  const bool ragged_k = problem.op == GG_OP_RAGGED_K;
  const bool read_out = problem.beta != 0.0;

  HostProblem host;
  host.lhs = make_operand("lhs", lhs_matrices(problem), problem.lhs_layout, problem.input_dtype,
                          live_or_nan);
  if (ragged_k) {
    host.rhs = make_operand("rhs", rhs_matrices(problem), problem.rhs_layout, problem.input_dtype,
                            live_or_nan);
    host.out = make_operand("output", out_matrices(problem), GG_LAYOUT_N, problem.out_dtype,
                            [&](int64_t) { return read_out ? random.symmetric() : kNaN; });
  } else {
    host.rhs = make_operand("rhs", rhs_matrices(problem), problem.rhs_layout, problem.input_dtype,
                            any);
    host.out = make_operand(
        "output", out_matrices(problem), GG_LAYOUT_N, problem.out_dtype,
        [&](int64_t row) { return row < live_rows && !read_out ? kNaN : random.symmetric(); });
  }
  if (problem.bias) {
    host.bias =
        make_operand("bias", bias_matrices(problem), GG_LAYOUT_N, problem.out_dtype, any);
  }
  if (is_fp8(problem.input_dtype)) {
    host.lhs_scale = kLhsFp8Scale;
    host.rhs_scale = kRhsFp8Scale;
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

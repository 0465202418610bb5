// The fp64 product: see host_product.h. Loops run along rows of the
// row-major logical operands so a verify-sized problem takes well under a
// second.
#include "cli/host_product.h"

#include <cmath>

#include "cli/elements.h"
#include "cli/host_memory.h"

namespace gg::cli {

namespace {

// The product, or (kMagnitude) what enters each element: every value taken
// by its magnitude, the epilogue's sum left unrounded.
template <bool kMagnitude>
double value_of(double x) {
  return kMagnitude ? std::fabs(x) : x;
}

template <bool kMagnitude>
double epilogue(const Problem& problem, double acc, double old_out, double bias) {
  const double kept = problem.beta != 0.0 ? problem.beta * old_out : 0.0;  // beta 0 never reads out
  if (kMagnitude) return std::fabs(problem.alpha) * acc + std::fabs(kept) + std::fabs(bias);
  return representable(problem.out_dtype, problem.alpha * acc + kept + bias);
}

template <bool kMagnitude>
void ragged_m(const Problem& problem, const std::vector<int64_t>& sizes, const HostProblem& host,
              std::vector<double>& out) {
  const int64_t k = problem.lhs_cols;
  const int64_t n = problem.rhs_cols;
  std::vector<double> acc(n);
  int64_t start = 0;
  for (int32_t g = 0; g < problem.groups; ++g) {
    const double* rhs = &host.rhs.values[g * k * n];
    for (int64_t row = start; row < start + sizes[g]; ++row) {
      acc.assign(n, 0.0);
      for (int64_t c = 0; c < k; ++c) {
        const double a = value_of<kMagnitude>(host.lhs.values[row * k + c]);
        for (int64_t j = 0; j < n; ++j) acc[j] += a * value_of<kMagnitude>(rhs[c * n + j]);
      }
      for (int64_t j = 0; j < n; ++j) {
        const double bias = problem.bias ? host.bias.values[g * n + j] : 0.0;
        out[row * n + j] =
            epilogue<kMagnitude>(problem, acc[j], host.out.values[row * n + j], bias);
      }
    }
    start += sizes[g];
  }
}

template <bool kMagnitude>
void ragged_k(const Problem& problem, const std::vector<int64_t>& sizes, const HostProblem& host,
              std::vector<double>& out) {
  const int64_t p = problem.lhs_cols;
  const int64_t q = problem.rhs_cols;
  std::vector<double> acc(p * q);
  int64_t start = 0;
  for (int32_t g = 0; g < problem.groups; ++g) {
    acc.assign(p * q, 0.0);
    for (int64_t row = start; row < start + sizes[g]; ++row) {
      for (int64_t i = 0; i < p; ++i) {
        const double a = value_of<kMagnitude>(host.lhs.values[row * p + i]);
        for (int64_t j = 0; j < q; ++j)
          acc[i * q + j] += a * value_of<kMagnitude>(host.rhs.values[row * q + j]);
      }
    }
    for (int64_t i = 0; i < p * q; ++i) {
      out[g * p * q + i] =
          epilogue<kMagnitude>(problem, acc[i], host.out.values[g * p * q + i], 0.0);
    }
    start += sizes[g];
  }
}

template <bool kMagnitude>
std::vector<double> product(const Problem& problem, const std::vector<int64_t>& sizes,
                            const HostProblem& host) {
  std::vector<double> out;
  allocate_host(static_cast<double>(host.out.values.size() * sizeof(double)),
                kMagnitude ? "the output's magnitudes" : "the fp64 product",
                [&] { out = host.out.values; });
  if (problem.op == GG_OP_RAGGED_K) {
    ragged_k<kMagnitude>(problem, sizes, host, out);
  } else {
    ragged_m<kMagnitude>(problem, sizes, host, out);
  }
  return out;
}

}  // namespace

std::vector<double> fp64_product(const Problem& problem, const std::vector<int64_t>& sizes,
                                 const HostProblem& host) {
  return product<false>(problem, sizes, host);
}

std::vector<double> fp64_magnitudes(const Problem& problem, const std::vector<int64_t>& sizes,
                                    const HostProblem& host) {
  return product<true>(problem, sizes, host);
}

}  // namespace gg::cli

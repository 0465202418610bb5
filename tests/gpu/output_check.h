// Judges a GPU output against the reference output, three ways: bit-exact
// where the inputs make the result exact, an elementwise bound everywhere
// else, and a global relative norm over the whole output.
//
// Elementwise bound. Both sides accumulate in fp32 (or wider), in orders of
// their own. With `scale` bounding what enters an element, |alpha| *
// sum|a||b| + |beta * c| + |bias|, each side is within (depth + 4) * eps32 *
// scale of the exact value (depth products and a few epilogue roundings),
// and rounding two nearby values to the output type can split them by one
// output ulp, at most eps_out * |want|. So
//   |got - want| <= eps_out * |want| + 2 * (depth + 4) * eps32 * scale + tiny
// where tiny is the output type's smallest subnormal.
//
// Relative norm. ||got - want|| / ||want|| must stay below half an output
// ulp for bf16 and fp16 outputs (rounding splits are rare and one ulp each);
// for fp32 outputs below 2^-16, about a hundred times the expected
// order-dependent accumulation error at the depths these tests use.
//
// fp8 tensor cores (Hopper wgmma on e4m3/e5m2) sum in an adder narrower
// than fp32: measured on an H100, errors of 2^-15 to 2^-11 of what enters
// the element at depths of 33 to 2048, whether or not the kernel promotes
// every 128-deep step into fp32, and relative norms of 1e-4 to 8e-4. There
// the bound counts 2^-13 per 32-deep chunk (one wgmma) and 8 chunks more
// for the epilogue and the shallowest groups (a few elements of a
// 256-group weight gradient of 1 to 4 tokens a group were off by up to 14
// 2^-13), instead of eps32 per product, and the relative norm must stay
// below 2^-12 sqrt(chunks + 1) of the deepest element. A wrong scale, block
// or product is off by about |want|, which is at least ~1/sqrt(depth) of
// `scale` for these tests' random signs, and its norm by about 1: far
// above both.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

#include "groupgemm/groupgemm.h"

namespace gg::test {

// How the GPU side sums an element's products.
enum class Accumulation {
  kFp32,            // CUDA cores, bf16/fp16 tensor cores
  kFp8TensorCores,  // wgmma on fp8 operands
};

struct ElementIndex {
  int64_t batch, row, col;
};

class OutputCheck {
 public:
  // `exact`: values must be equal (+0 and -0 count as equal: the sign of an
  // exact zero sum depends on the summation order).
  OutputCheck(std::string what, gg_dtype dtype, bool exact,
              Accumulation accumulation = Accumulation::kFp32);

  void add(const ElementIndex& at, float got, float want, double scale, int64_t depth);
  // Adds a test failure describing what went wrong, if anything did.
  void report() const;

 private:
  std::string what_;
  gg_dtype dtype_;
  bool exact_;
  Accumulation accumulation_;
  int64_t checked_ = 0;
  int64_t max_depth_ = 0;
  int64_t failed_ = 0;
  std::vector<std::string> first_failures_;
  double error_squares_ = 0;
  double want_squares_ = 0;
};

}  // namespace gg::test

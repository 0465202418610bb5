// One grouped-GEMM test case: builds random operands from a setup, runs the
// reference, and checks every output element against a naive loop written
// here from groupgemm.h's formulas (model values in long double, block-scale
// positions from the layout rules spelled out per operand role), and every
// element the op must not write against its old bits.
//
// With CodeRange::kWindow everywhere, operands and scales carry so few
// significant bits over so narrow an exponent range that every product and
// sum is exact in double: the reference must then equal the model rounded
// once, bit for bit. kFull draws every finite code; the check then allows the
// reference's double rounding error before its one rounding to the output
// (sums past the output's range must come out as infinities).
#pragma once

#include <stdint.h>

#include <vector>

#include "groupgemm/groupgemm.h"
#include "host_tensor.h"
#include "layout_model.h"

namespace gg::test {

struct OperandFormat {
  gg_dtype dtype = GG_DTYPE_BF16;
  gg_block_scaling block = GG_BLOCK_NONE;
  gg_scale_extent extent = GG_SCALE_NONE;
  CodeRange range = CodeRange::kWindow;
};

struct GemmSetup {
  gg_op op = GG_OP_RAGGED_M;
  int64_t m = 0;                 // tokens (rows of the ragged tensors)
  int64_t n = 0, k = 0;          // ragged-M: out [M, N], contraction K
  int64_t p = 0, q = 0;          // ragged-K: out [G, P, Q]
  std::vector<int64_t> sizes;    // G = sizes.size(); raw, may be bad
  std::vector<int64_t> offsets;  // empty: prefix-sum layout
  gg_index_type index_type = GG_INDEX_INT32;
  OperandFormat lhs, rhs;
  gg_dtype out_dtype = GG_DTYPE_FP32;
  gg_layout lhs_layout = GG_LAYOUT_N;
  gg_layout rhs_layout = GG_LAYOUT_N;
  bool pointer_array = false;  // rhs (ragged-M) or out (ragged-K)
  float alpha = 1.0f;
  float beta = 0.0f;
  std::vector<float> alpha_per_group;  // empty: alpha
  std::vector<float> beta_per_group;   // empty: beta
  bool bias = false;
  gg_dtype bias_dtype = GG_DTYPE_BF16;
  bool poison_out = true;  // old outputs NaN; else random window values
  int64_t row_pad = 2;
  uint32_t seed = 1;
};

class GemmCase {
 public:
  explicit GemmCase(const GemmSetup& setup);
  GemmCase(const GemmCase&) = delete;
  GemmCase& operator=(const GemmCase&) = delete;

  // Runs the reference; returns the GG_DEVICE_* flags it raised.
  uint32_t run();
  // Checks every output element against the model; returns the number of
  // elements the op wrote (for tests that also count).
  int64_t check() const;

  gg_gemm_desc desc{};
  HostTensor lhs, rhs, out, bias;

 private:
  long double lhs_value(int32_t g, int64_t token, int64_t other) const;
  long double rhs_value(int32_t g, int64_t first, int64_t second) const;
  long double epilogue(int32_t g, size_t out_at, long double sum, long double magnitude,
                       int64_t terms, long double* error_bound) const;
  bool exact() const;

  GemmSetup setup_;
  int32_t groups_;
  std::vector<ModelGroup> model_;
  std::vector<uint8_t> sizes_bytes_, offsets_bytes_;
  std::vector<uint32_t> out_before_;  // codes of out before the run
};

}  // namespace gg::test

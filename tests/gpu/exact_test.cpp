// Bit-exact checks. Inputs are small integers, alpha and beta powers of two,
// the previous output and the bias integers: every product and every partial
// sum is an exact fp32 value whatever the order, so each output element is
// the one rounding of an exact value and the path must equal the reference
// exactly, for every input dtype, output dtype and layout.
#include <gtest/gtest.h>

#include "gpu/gemm_case.h"
#include "gpu/path_test.h"

namespace gg::test {
namespace {

class Exact : public PathTest<gg_path> {
 protected:
  // Every input x output dtype of `s`: plain, with a full epilogue, and
  // accumulating (beta = 1, no bias).
  void expect_exact_all_dtypes(GemmSpec s) {
    s.values = ValueSet::kSmallIntegers;
    const std::string name = s.name;
    for (gg_dtype input : {GG_DTYPE_BF16, GG_DTYPE_FP16}) {
      for (gg_dtype out : {GG_DTYPE_BF16, GG_DTYPE_FP16, GG_DTYPE_FP32}) {
        s.input = input;
        s.out = out;
        s.name = name;
        s.alpha = {1.0f, {}};
        s.beta = {0.0f, {}};
        s.bias.reset();
        run_and_check(s, path(), stream(), Match::kExact);
        s.name = name + ", epilogue";
        s.alpha = {0.5f, {}};
        s.beta = {0.0f, {2.0f, 0.0f, -1.0f, 0.25f, 0.0f}};
        if (s.op == GG_OP_RAGGED_M) s.bias = GG_DTYPE_FP32;
        run_and_check(s, path(), stream(), Match::kExact);
        s.name = name + ", accumulate";
        s.beta = {1.0f, {}};
        s.bias.reset();
        run_and_check(s, path(), stream(), Match::kExact);
      }
    }
  }

  static GemmSpec spec(std::string name, gg_op op) {
    GemmSpec s;
    s.name = std::move(name);
    s.op = op;
    s.m = 200;
    s.n = 24;
    s.k = 40;
    s.sizes = {0, 37, 64, 1, 90};
    return s;
  }
};

TEST_P(Exact, SmallIntegersRaggedM) {
  for (gg_layout layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
    for (bool pointers : {false, true}) {
      GemmSpec s = spec(
          std::string("rhs ") + (layout == GG_LAYOUT_T ? "T" : "N") + (pointers ? " pointers" : ""),
          GG_OP_RAGGED_M);
      s.rhs_layout = layout;
      s.pointer_array = pointers;
      expect_exact_all_dtypes(s);
    }
  }
}

TEST_P(Exact, SmallIntegersRaggedK) {
  for (gg_layout lhs : {GG_LAYOUT_N, GG_LAYOUT_T}) {
    for (gg_layout rhs : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      GemmSpec s = spec(std::string("lhs ") + (lhs == GG_LAYOUT_T ? "T" : "N") + " rhs " +
                            (rhs == GG_LAYOUT_T ? "T" : "N"),
                        GG_OP_RAGGED_K);
      s.lhs_layout = lhs;
      s.rhs_layout = rhs;
      s.pointer_array = lhs == rhs;  // both output forms, each twice
      expect_exact_all_dtypes(s);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, Exact, ::testing::ValuesIn(gpu_paths()), ParamName());

}  // namespace
}  // namespace gg::test

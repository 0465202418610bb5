// Determinism: the same call on the same inputs gives the same bits, run
// after run. Shapes favour the places where order could vary: many groups of
// uneven sizes for ragged-M, and for ragged-K one group deep enough that a
// path may split its contraction.
#include <gtest/gtest.h>

#include "gpu/gemm_case.h"
#include "gpu/path_test.h"
#include "gpu/routing.h"

namespace gg::test {
namespace {

class Determinism : public PathTest<gg_path> {
 protected:
  void expect_repeatable(const GemmSpec& s) {
    GemmCase gemm(s, path());
    SCOPED_TRACE(gemm.label());
    ASSERT_TRUE(gemm.run(stream()));
    const HostImage first = gemm.download_output();
    gemm.expect_correct();
    for (int repeat = 1; repeat <= 2; ++repeat) {
      ASSERT_TRUE(gemm.run(stream()));
      EXPECT_TRUE(gemm.download_output().blocks == first.blocks)
          << "run " << repeat << " differs from the first run in some bits";
    }
  }
};

TEST_P(Determinism, RaggedM) {
  std::mt19937_64 rng = test_rng("sizes");
  GemmSpec s;
  s.name = "ragged-M";
  s.op = GG_OP_RAGGED_M;
  s.rhs_layout = GG_LAYOUT_T;
  s.out = GG_DTYPE_FP32;
  s.m = 2048;
  s.n = 264;
  s.k = 512;
  s.sizes = random_sizes(32, 2000, rng);
  expect_repeatable(s);
}

TEST_P(Determinism, RaggedK) {
  GemmSpec s;
  s.name = "ragged-K";
  s.op = GG_OP_RAGGED_K;
  s.out = GG_DTYPE_FP32;
  s.m = 4096;
  s.n = 136;
  s.k = 136;
  s.sizes = {3900, 0, 100, 96};
  expect_repeatable(s);
  s.name = "ragged-K fp32 accumulate";
  s.beta.value = 1.0f;
  expect_repeatable(s);
  s.name = "ragged-K bf16 out";
  s.out = GG_DTYPE_BF16;
  s.beta.value = 0.5f;
  expect_repeatable(s);
}

INSTANTIATE_TEST_SUITE_P(Paths, Determinism, ::testing::ValuesIn(gpu_paths()), ParamName());

}  // namespace
}  // namespace gg::test

// Ragged-M (fprop, dgrad) against the reference, for every path x input dtype
// x output dtype: every rhs layout (stacked N and T, pointer arrays of N and
// T matrices) and every epilogue (alpha, beta scalar or per group, bias).
// Shapes are moderate and N, K deliberately not multiples of a tile; the row
// capacity exceeds the routed tokens, so rows past the groups are checked too.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <thread>

#include "gpu/gemm_case.h"
#include "gpu/path_test.h"
#include "gpu/routing.h"

namespace gg::test {
namespace {

class RaggedM : public PathDtypeTest {
 protected:
  GemmSpec spec(std::string name) const {
    GemmSpec s;
    s.name = std::move(name);
    s.op = GG_OP_RAGGED_M;
    s.input = input();
    s.out = out();
    return s;
  }

  // `sizes` in m rows, 264 columns (past one 256-wide tile), both rhs
  // layouts, plain and with beta, bias and per-expert weights.
  void check_wide_output(const std::string& name, int64_t m, const std::vector<int64_t>& sizes) {
    for (gg_layout layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      GemmSpec s = spec(name + (layout == GG_LAYOUT_T ? " rhs T" : " rhs N"));
      s.rhs_layout = layout;
      s.m = m;
      s.n = 264;
      s.k = 72;
      s.sizes = sizes;
      run_and_check(s, path(), stream());
      s.name += ", beta, bias, per-expert";
      s.beta.value = 0.5f;
      s.bias = GG_DTYPE_BF16;
      s.pointer_array = true;
      run_and_check(s, path(), stream());
    }
  }
};

TEST_P(RaggedM, Layouts) {
  for (gg_layout layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
    for (bool pointers : {false, true}) {
      GemmSpec s = spec(std::string(layout == GG_LAYOUT_T ? "rhs T" : "rhs N") +
                        (pointers ? " pointers" : " stacked"));
      s.rhs_layout = layout;
      s.pointer_array = pointers;
      s.m = 512;
      s.n = layout == GG_LAYOUT_T ? 264 : 136;
      s.k = layout == GG_LAYOUT_T ? 136 : 264;
      std::mt19937_64 rng = test_rng(s.name);
      s.sizes = random_sizes(8, 480, rng);
      run_and_check(s, path(), stream());
    }
  }
}

TEST_P(RaggedM, SmallZeroUnusedRows) {
  // GG_GEMM_ZERO_UNUSED_ROWS: the rows past the last group come back +0 from
  // the same launch: rows of whole 16-byte chunks, and 16-byte-aligned rows
  // of 200 bytes (bf16, fp16) with padding after them (which stays
  // untouched); no groups at all; sizes that overflow the capacity (nothing
  // left to zero).
  struct Case {
    const char* name;
    int64_t n, k, padding;
    std::vector<int64_t> sizes;
    uint32_t expected_flags;
  };
  const std::vector<Case> cases = {
      {"16-byte rows", 136, 72, 0, {37, 0, 100, 5}, 0},
      {"100 columns, padded", 100, 76, 4, {1, 63, 64, 65}, 0},
      {"every group empty", 136, 72, 0, {0, 0, 0}, 0},
      {"sizes past the capacity", 136, 72, 0, {200, 150}, GG_DEVICE_SIZES_EXCEED_ROWS},
  };
  for (const Case& c : cases) {
    for (gg_layout layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      GemmSpec s = spec(std::string(c.name) + (layout == GG_LAYOUT_T ? " rhs T" : " rhs N"));
      s.zero_unused_rows = true;
      s.rhs_layout = layout;
      s.m = 300;
      s.n = c.n;
      s.k = c.k;
      s.padding = c.padding;
      s.sizes = c.sizes;
      s.expected_flags = c.expected_flags;
      run_and_check(s, path(), stream());
    }
  }
}

TEST_P(RaggedM, SmallWideTileEdges) {
  // Groups averaging 150 rows: the sm90 path's 128 x 256 tile, with 1, 64,
  // 65, 1, 64, 65 and 44 rows in a group's last tile (its two consumers'
  // 64-row halves full, partial or empty); one group is empty.
  check_wide_output("wide tile edges", 1200, {1, 64, 65, 129, 192, 193, 0, 300});
}

TEST_P(RaggedM, SmallFewRowsAGroup) {
  // Groups averaging 8 rows (0 to 30): the sm90 path's 64 x 256 tile, whose
  // consumers split the columns.
  check_wide_output("few rows", 128, {0, 1, 7, 8, 9, 20, 3, 10, 0, 0, 16, 30, 2, 1, 5, 8});
}

TEST_P(RaggedM, GroupCounts) {
  // One group, filling the rows or not; 256 groups averaging 16 rows, about
  // a quarter of them empty.
  check_wide_output("G=1", 333, {333});
  check_wide_output("G=1 partial", 333, {250});
  std::mt19937_64 rng = test_rng("group counts");
  check_wide_output("G=256", 4096, random_sizes(256, 4000, rng));
}

TEST_P(RaggedM, RunsOnAThreadThatMadeNoCudaCall) {
  // As torch's autograd thread: no runtime call has bound the device's
  // context there, which the driver calls of a launch (tensor maps) need.
  GemmSpec s = spec("fresh thread");
  s.m = 256;
  s.n = 136;
  s.k = 72;
  s.sizes = {100, 0, 56};
  GemmCase gemm(s, path());
  SCOPED_TRACE(gemm.label());
  gemm.prepare_output();
  ::testing::AssertionResult launched = ::testing::AssertionSuccess();
  std::thread([&] { launched = gemm.launch(stream()); }).join();
  ASSERT_TRUE(launched);
  ASSERT_EQ(cudaStreamSynchronize(stream()), cudaSuccess);
  gemm.expect_correct();
}

TEST_P(RaggedM, Epilogues) {
  // Empty groups on purpose: an epilogue must not touch their (absent) rows.
  const std::vector<int64_t> sizes = {37, 0, 128, 5, 0, 64, 129, 1};
  const std::vector<float> alphas = {0.5f, -1.0f, 2.0f, 0.25f, 1.0f, -0.75f, 1.5f, 3.0f};
  // Groups with beta_g = 0 keep a NaN-poisoned output: it must not be read.
  const std::vector<float> betas = {0.0f, 1.0f, -0.5f, 0.0f, 2.0f, 0.0f, 0.75f, 0.0f};
  auto base = [&](std::string name, gg_layout layout, bool pointers) {
    GemmSpec s = spec(std::move(name));
    s.m = 400;
    s.n = 136;
    s.k = 72;
    s.sizes = sizes;
    s.rhs_layout = layout;
    s.pointer_array = pointers;
    return s;
  };
  std::vector<GemmSpec> cases;
  cases.push_back(base("alpha", GG_LAYOUT_T, false));
  cases.back().alpha.value = -1.5f;
  cases.push_back(base("beta", GG_LAYOUT_N, false));
  cases.back().beta.value = 0.5f;
  cases.push_back(base("per-group alpha and beta", GG_LAYOUT_T, true));
  cases.back().alpha.per_group = alphas;
  cases.back().beta.per_group = betas;
  cases.push_back(base("bias bf16", GG_LAYOUT_T, false));
  cases.back().bias = GG_DTYPE_BF16;
  cases.push_back(base("bias fp32 alpha beta", GG_LAYOUT_N, true));
  cases.back().bias = GG_DTYPE_FP32;
  cases.back().alpha.value = 0.5f;
  cases.back().beta.value = -1.0f;
  cases.push_back(base("bias per-group alpha and beta", GG_LAYOUT_N, false));
  cases.back().bias = GG_DTYPE_FP32;
  cases.back().alpha.per_group = alphas;
  cases.back().beta.per_group = betas;
  if (out() == GG_DTYPE_FP32) {
    cases.push_back(base("beta 1 accumulates", GG_LAYOUT_T, false));
    cases.back().beta.value = 1.0f;
  }
  for (const GemmSpec& s : cases) run_and_check(s, path(), stream());
}

INSTANTIATE_TEST_SUITE_P(Paths, RaggedM, all_path_dtypes(), ParamName());

}  // namespace
}  // namespace gg::test

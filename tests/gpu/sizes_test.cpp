// Edge group sizes and edge shapes, for both ops on every path: tile edges
// (63, 64, 65, 127, 128, 129 for 64- and 128-row tiles), single rows, one hot
// group, all groups empty, empty dimensions, tokens below the row capacity,
// unaligned row counts, G = 1, 256 and 4096, the smallest N and K (8), N and
// K off every tile, explicit offsets with gaps, int64 sizes, padded rows, and
// a few larger problems. Each case runs ragged-M (rhs T, the fprop layout)
// and ragged-K; a case may pick the output dtype to widen coverage.
#include <gtest/gtest.h>

#include "gpu/gemm_case.h"
#include "gpu/path_test.h"
#include "gpu/routing.h"

namespace gg::test {
namespace {

class Sizes : public PathTest<gg_path> {
 protected:
  // Runs `s` once as ragged-M and once as ragged-K, the same shape.
  void check_both_ops(GemmSpec s) {
    s.op = GG_OP_RAGGED_M;
    s.rhs_layout = GG_LAYOUT_T;
    run_and_check(s, path(), stream());
    s.op = GG_OP_RAGGED_K;
    s.rhs_layout = GG_LAYOUT_N;
    run_and_check(s, path(), stream());
  }

  static GemmSpec spec(std::string name, int64_t m, int64_t n, int64_t k,
                       std::vector<int64_t> sizes) {
    GemmSpec s;
    s.name = std::move(name);
    s.m = m;
    s.n = n;
    s.k = k;
    s.sizes = std::move(sizes);
    return s;
  }
};

TEST_P(Sizes, TileEdges) {
  const std::vector<int64_t> sizes = cyclic_sizes(12, {63, 64, 65, 127, 128, 129});
  GemmSpec s = spec("tile edges", sum_of(sizes), 136, 136, sizes);
  check_both_ops(s);
  s.name = "tile edges, fp32 out";
  s.out = GG_DTYPE_FP32;
  check_both_ops(s);
}

TEST_P(Sizes, SingleRows) {
  check_both_ops(spec("all ones", 72, 72, 72, cyclic_sizes(64, {1})));
  check_both_ops(spec("ones and zeros", 40, 72, 72, cyclic_sizes(48, {1, 0, 2, 0})));
}

TEST_P(Sizes, OneHotGroup) {
  check_both_ops(spec("first hot", 1024, 136, 136, one_hot_sizes(16, 1000, 0)));
  check_both_ops(spec("middle hot", 1024, 136, 136, one_hot_sizes(16, 1000, 5)));
  check_both_ops(spec("last hot", 1024, 136, 136, one_hot_sizes(16, 1024, 15)));
}

TEST_P(Sizes, AllEmpty) {
  GemmSpec s = spec("all empty", 256, 72, 72, std::vector<int64_t>(8, 0));
  check_both_ops(s);
  // Ragged-K must still write beta * out for every (empty) group.
  s.name = "all empty, beta";
  s.beta.value = 0.5f;
  check_both_ops(s);
}

TEST_P(Sizes, EmptyDimensions) {
  // A dimension of 0, beta 0.5: ragged-M with K = 0 writes beta * out (and
  // the bias), ragged-K with no tokens beta * out for every group; M, N, P
  // or Q = 0 leaves nothing to write. The portable path runs them; sm90
  // refuses each, naming the dimension (and AUTO picks the portable path:
  // path_choice_test).
  struct Case {
    const char* name;
    int64_t m, n, k;
    std::vector<int64_t> sizes;
  };
  const Case cases[] = {{"M=0", 0, 136, 72, {0, 0, 0}},
                        {"N=0", 200, 0, 72, {50, 0, 100}},
                        {"K=0", 200, 136, 0, {50, 0, 100}}};
  for (const Case& c : cases) {
    GemmSpec s = spec(c.name, c.m, c.n, c.k, c.sizes);
    s.beta.value = 0.5f;
    check_both_ops(s);
    s.name += ", bias";
    s.bias = GG_DTYPE_BF16;
    s.op = GG_OP_RAGGED_M;
    run_and_check(s, path(), stream());
  }
}

TEST_P(Sizes, TokensBelowCapacity) {
  std::mt19937_64 rng = test_rng("sizes");
  check_both_ops(spec("300 of 512 rows", 512, 136, 136, random_sizes(8, 300, rng)));
  check_both_ops(spec("1 of 512 rows", 512, 136, 136, one_hot_sizes(8, 1, 3)));
}

TEST_P(Sizes, UnalignedRows) {
  std::mt19937_64 rng = test_rng("sizes");
  check_both_ops(spec("odd sizes", 1001, 136, 72, cyclic_sizes(12, {13, 7, 31, 1, 0, 99})));
  check_both_ops(spec("random sizes", 1001, 72, 136, random_sizes(10, 997, rng)));
}

TEST_P(Sizes, OneGroup) {
  check_both_ops(spec("G=1 full", 333, 136, 136, {333}));
  check_both_ops(spec("G=1 partial", 333, 136, 136, {250}));
}

TEST_P(Sizes, Groups256) {
  std::mt19937_64 rng = test_rng("sizes");
  GemmSpec s = spec("G=256", 4096, 64, 64, random_sizes(256, 4000, rng));
  s.out = GG_DTYPE_FP32;
  check_both_ops(s);
}

TEST_P(Sizes, Groups4096) {
  std::mt19937_64 rng = test_rng("sizes");
  check_both_ops(spec("G=4096", 8192, 32, 32, random_sizes(4096, 8000, rng)));
}

TEST_P(Sizes, SmallestShapes) {
  std::mt19937_64 rng = test_rng("sizes");
  const std::vector<int64_t> sizes = random_sizes(6, 250, rng);
  check_both_ops(spec("n=8 k=8", 256, 8, 8, sizes));
  check_both_ops(spec("n=8 k=136", 256, 8, 136, sizes));
  check_both_ops(spec("n=136 k=8", 256, 136, 8, sizes));
}

TEST_P(Sizes, ShapesOffTheTile) {
  std::mt19937_64 rng = test_rng("sizes");
  const std::vector<int64_t> sizes = random_sizes(6, 500, rng);
  for (int64_t n : {8, 24, 136, 264}) {
    for (int64_t k : {24, 264}) {
      GemmSpec s = spec("n=" + std::to_string(n) + " k=" + std::to_string(k), 512, n, k, sizes);
      s.out = n == 24 ? GG_DTYPE_FP32 : GG_DTYPE_BF16;
      check_both_ops(s);
    }
  }
}

TEST_P(Sizes, ExplicitOffsets) {
  // Groups out of order, with gaps between them and after the last one: the
  // gap rows belong to no group and must stay untouched.
  GemmSpec s = spec("offsets with gaps", 512, 136, 72, {50, 100, 0, 100, 7});
  s.offsets = {300, 0, 250, 120, 400};
  check_both_ops(s);
  s.name = "offsets with gaps, int64";
  s.index_type = GG_INDEX_INT64;
  check_both_ops(s);
}

TEST_P(Sizes, Int64Sizes) {
  std::mt19937_64 rng = test_rng("sizes");
  GemmSpec s = spec("int64 sizes", 700, 136, 136, random_sizes(8, 640, rng));
  s.index_type = GG_INDEX_INT64;
  check_both_ops(s);
}

TEST_P(Sizes, PaddedRows) {
  // Row padding holds NaN: a kernel reading past a row's end would show it,
  // and one writing past it changes poison that must stay.
  std::mt19937_64 rng = test_rng("sizes");
  GemmSpec s = spec("padded rows", 512, 136, 72, random_sizes(8, 480, rng));
  s.padding = 8;
  check_both_ops(s);
  s.name = "padded rows, layouts T";
  s.lhs_layout = GG_LAYOUT_T;
  s.out = GG_DTYPE_FP32;
  s.op = GG_OP_RAGGED_K;
  s.rhs_layout = GG_LAYOUT_T;
  run_and_check(s, path(), stream());
  s.name = "padded rows, widths not a multiple of 8";
  s.n = 100;
  s.k = 60;
  s.padding = 4;
  s.lhs_layout = GG_LAYOUT_N;
  check_both_ops(s);
  s.out = GG_DTYPE_BF16;
  s.beta.value = 0.5f;
  s.name = "padded rows, widths not a multiple of 8, beta";
  check_both_ops(s);
  s.name = "padded rows, widths not a multiple of 8, beta, bias";
  s.op = GG_OP_RAGGED_M;
  s.rhs_layout = GG_LAYOUT_N;
  s.bias = GG_DTYPE_BF16;
  run_and_check(s, path(), stream());
  s.n = 136;
  s.k = 72;
  s.padding = 8;
  s.beta.value = 0.0f;
  s.name = "padded rows, rhs pointers";
  s.op = GG_OP_RAGGED_M;
  s.lhs_layout = GG_LAYOUT_N;
  s.pointer_array = true;
  s.bias = GG_DTYPE_BF16;
  s.beta.value = 0.5f;
  run_and_check(s, path(), stream());
}

TEST_P(Sizes, Larger) {
  std::mt19937_64 rng = test_rng("sizes");
  GemmSpec s = spec("m=2048 n=512 k=512", 2048, 512, 512, random_sizes(8, 2000, rng));
  check_both_ops(s);
  s.name = "m=2048 n=1024 k=256 fp32 out";
  s.n = 1024;
  s.k = 256;
  s.out = GG_DTYPE_FP32;
  check_both_ops(s);
}

INSTANTIATE_TEST_SUITE_P(Paths, Sizes, ::testing::ValuesIn(gpu_paths()), ParamName());

}  // namespace
}  // namespace gg::test

// Ragged-K (wgrad) against the reference, for every path x input dtype x
// output dtype: lhs and rhs each stored N or T, the output stacked or as a
// pointer array of per-group matrices, and every epilogue (alpha, beta scalar
// or per group, beta = 1 accumulating into an fp32 main grad). Empty groups
// must come out as beta_g * out[g], zeros when beta_g = 0. Long groups also
// run on the sm90 path's cluster pairs, and many tiles of groups averaging
// 128-511 tokens on its 128 x 256 tile whose consumers store in turn.
#include <gtest/gtest.h>

#include "gpu/gemm_case.h"
#include "gpu/path_test.h"
#include "gpu/routing.h"
#include "plan/plan.h"

namespace gg::test {
namespace {

const char* layout_name(gg_layout layout) { return layout == GG_LAYOUT_T ? "T" : "N"; }

class RaggedK : public PathDtypeTest {
 protected:
  GemmSpec spec(std::string name) const {
    GemmSpec s;
    s.name = std::move(name);
    s.op = GG_OP_RAGGED_K;
    s.input = input();
    s.out = out();
    return s;
  }

  // `name`, with lhs and rhs both stored `layout`.
  GemmSpec spec(const std::string& name, gg_layout layout) const {
    GemmSpec s = spec(name + " lhs " + layout_name(layout) + " rhs " + layout_name(layout));
    s.lhs_layout = layout;
    s.rhs_layout = layout;
    return s;
  }

  // Groups averaging 128-511 tokens: on sm90 the 128 x 256 tile with whole
  // k-steps and no cluster pairs, whose two consumers store their blocks in
  // turn. Sizes 0, 1, tile edges and unaligned starts, so tiles of 0 to 7
  // k-steps, their sum below the capacity; each group's 2 x 2 tiles (P = 136
  // leaves the last m-tile's second consumer no rows; Q = 264 ends in a
  // partial tile). Lhs and rhs stored N load through the groups' token maps,
  // stored T the consumers zero the tokens outside a group; beta = 1 (the
  // old output read and added) on the second.
  void expect_tiles_in_turn_correct(const char* name, int32_t groups, int64_t tokens) const {
    const std::vector<int64_t> sizes = cyclic_sizes(groups, {0, 1, 64, 65, 129, 192, 300, 381});
    ASSERT_LE(sum_of(sizes), tokens);
    for (gg_layout layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      GemmSpec s = spec(name, layout);
      s.m = tokens;
      s.k = 136;
      s.n = 264;
      s.sizes = sizes;
      s.beta.value = layout == GG_LAYOUT_T ? 1.0f : 0.0f;
      const GemmShape shape{GG_OP_RAGGED_K, s.k, s.n, s.m, groups, s.input, 132, 90};
      const Sm90Plan plan = plan_sm90_gemm(shape);
      ASSERT_TRUE(plan.tile == Sm90Tile::k128x256 && !plan.sparse_k && !plan.multicast)
          << "the shape no longer takes the 128 x 256 tile with whole k-steps: " << plan.reason;
      run_and_check(s, path(), stream());
    }
  }
};

TEST_P(RaggedK, Layouts) {
  for (gg_layout lhs : {GG_LAYOUT_N, GG_LAYOUT_T}) {
    for (gg_layout rhs : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      for (bool pointers : {false, true}) {
        GemmSpec s = spec(std::string("lhs ") + layout_name(lhs) + " rhs " + layout_name(rhs) +
                          (pointers ? " out pointers" : " out stacked"));
        s.lhs_layout = lhs;
        s.rhs_layout = rhs;
        s.pointer_array = pointers;
        s.m = 520;
        s.k = 136;
        s.n = 72;
        std::mt19937_64 rng = test_rng(s.name);
        s.sizes = random_sizes(8, 500, rng);
        run_and_check(s, path(), stream());
      }
    }
  }
}

TEST_P(RaggedK, Epilogues) {
  const std::vector<int64_t> sizes = {0, 100, 37, 0, 200, 1, 0, 150};
  const std::vector<float> alphas = {0.5f, -1.0f, 2.0f, 0.25f, 1.0f, -0.75f, 1.5f, 3.0f};
  // Empty groups with beta_g != 0 (groups 0 and 6) must scale their output,
  // those with beta_g = 0 (group 3) must write zeros over the poison.
  const std::vector<float> betas = {2.0f, 0.0f, -0.5f, 0.0f, 0.0f, 1.0f, 0.75f, 0.0f};
  auto base = [&](std::string name, gg_layout lhs, gg_layout rhs, bool pointers) {
    GemmSpec s = spec(std::move(name));
    s.m = 504;  // transposed copies store M tokens per row: 16-byte rows
    s.k = 72;
    s.n = 136;
    s.sizes = sizes;
    s.lhs_layout = lhs;
    s.rhs_layout = rhs;
    s.pointer_array = pointers;
    return s;
  };
  std::vector<GemmSpec> cases;
  cases.push_back(base("alpha", GG_LAYOUT_T, GG_LAYOUT_N, false));
  cases.back().alpha.value = -1.5f;
  cases.push_back(base("beta", GG_LAYOUT_N, GG_LAYOUT_N, true));
  cases.back().beta.value = 0.5f;
  cases.push_back(base("per-group alpha and beta", GG_LAYOUT_T, GG_LAYOUT_N, true));
  cases.back().alpha.per_group = alphas;
  cases.back().beta.per_group = betas;
  cases.push_back(base("per-group beta, alpha", GG_LAYOUT_N, GG_LAYOUT_T, false));
  cases.back().alpha.value = 0.25f;
  cases.back().beta.per_group = betas;
  if (out() == GG_DTYPE_FP32) {
    cases.push_back(base("beta 1 accumulates into main grads", GG_LAYOUT_T, GG_LAYOUT_N, true));
    cases.back().beta.value = 1.0f;
    // Stacked: on sm90 the blocks leave by TMA store, after the combine.
    cases.push_back(
        base("beta 1 accumulates into stacked main grads", GG_LAYOUT_N, GG_LAYOUT_T, false));
    cases.back().beta.value = 1.0f;
  }
  for (const GemmSpec& s : cases) run_and_check(s, path(), stream());
}

TEST_P(RaggedK, SmallClusterPairs) {
  // Groups averaging at least kSm90MulticastTokens tokens: on sm90 the
  // output's m-tiles go in pairs to clusters of two CTAs that share each B
  // tile. P = 264 is three m-tiles, so the last pair's second CTA has no
  // rows; P = 128 is one, a pair with one CTA idle; Q = 264 ends in a partial
  // tile. Sizes: random (sum < rows), empty and one-token groups around a
  // long one, unaligned starts, all empty, and sizes past the capacity
  // (clamped and flagged).
  // Each case's beta: 1 (as into an fp32 main grad) on three of them, so
  // the pairs accumulate; 0.5 where sizes are clamped.
  struct Case {
    const char* name;
    int64_t p;
    std::vector<int64_t> sizes;
    float beta;
    uint32_t expected_flags;
  };
  std::mt19937_64 rng = test_rng("cluster pairs");
  const std::vector<Case> cases = {
      {"random", 264, random_sizes(4, 2000, rng), 0.0f, 0},
      {"one long group", 264, {0, 1, 2048, 0}, 1.0f, 0},
      {"unaligned starts", 128, {37, 1000, 63, 999}, 1.0f, 0},
      {"every group empty", 264, {0, 0, 0, 0}, 1.0f, 0},
      {"sizes past the capacity", 264, {1500, 1500, 0, 7}, 0.5f, GG_DEVICE_SIZES_EXCEED_ROWS},
  };
  for (const Case& c : cases) {
    for (gg_layout layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      GemmSpec s = spec(c.name, layout);
      s.m = 2104;  // 526 tokens per group; transposed copies keep 16-byte rows
      s.k = c.p;
      s.n = 264;
      s.sizes = c.sizes;
      s.expected_flags = c.expected_flags;
      s.beta.value = c.beta;
      const GemmShape shape{GG_OP_RAGGED_K, s.k, s.n, s.m, 4, s.input, 132, 90};
      ASSERT_TRUE(plan_sm90_gemm(shape).multicast) << "the shape no longer takes cluster pairs";
      run_and_check(s, path(), stream());
    }
  }
}

// 32 tiles: at most one a CTA, small enough for the sanitizer runs.
TEST_P(RaggedK, SmallTilesInTurn) { expect_tiles_in_turn_correct("tiles in turn", 8, 1200); }

// 384 tiles: every CTA stores several in turn, of empty groups too.
TEST_P(RaggedK, ManyTilesInTurn) {
  expect_tiles_in_turn_correct("many tiles in turn", 96, 15000);
}

TEST_P(RaggedK, AccumulatesAtEdgeSizes) {
  // beta = 1 at edge sizes, as into a main grad: every group's old output
  // is read and added, and empty groups must come out as their old output.
  // P = 136 leaves the second consumer of the last m-tile no rows, Q = 264
  // ends in a partial tile; Q = 70 (rows of 280 bytes, padded to 288) is no
  // TMA output and ends in a partial 8-column block. Per-group betas of 0
  // must not read the old output (it holds poison).
  std::mt19937_64 rng = test_rng("accumulate");
  struct Case {
    const char* name;
    int64_t m;
    int64_t p;
    int64_t q;
    int64_t padding;  // every operand row's, keeping rows 16-byte multiples
    std::vector<int64_t> sizes;
  };
  const std::vector<Case> cases = {
      {"tile edges", 1200, 136, 264, 0, cyclic_sizes(12, {63, 64, 65, 127, 128, 129})},
      {"ones and zeros", 40, 136, 264, 0, cyclic_sizes(48, {1, 0, 2, 0})},
      {"one hot", 1024, 136, 264, 0, one_hot_sizes(16, 1000, 5)},
      {"all empty", 256, 136, 264, 0, std::vector<int64_t>(8, 0)},
      {"below capacity, unaligned", 1001, 136, 264, 0, cyclic_sizes(12, {13, 7, 31, 1, 0, 99})},
      // Whole 64-token steps from aligned starts (groups 0, 1, 5, 6) beside
      // groups that start or end inside one: on sm90 the first read through
      // the operands' maps, the others through their own token maps.
      {"aligned and unaligned", 520, 136, 264, 0, {64, 128, 0, 37, 27, 64, 192, 5}},
      {"G=1", 333, 136, 264, 0, {250}},
      {"G=256", 4096, 136, 72, 0, random_sizes(256, 4000, rng)},
      {"rows of 280 bytes", 510, 134, 70, 2, random_sizes(8, 480, rng)},
  };
  for (const Case& c : cases) {
    for (gg_layout layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      GemmSpec s = spec(c.name, layout);
      s.m = c.m;
      if (layout == GG_LAYOUT_T) s.m = (c.m + c.padding + 7) / 8 * 8 - c.padding;  // token rows
      s.k = c.p;
      s.n = c.q;
      s.padding = c.padding;
      s.sizes = c.sizes;
      s.beta.value = 1.0f;
      run_and_check(s, path(), stream());
    }
  }
  GemmSpec s = spec("per-group betas with zeros");
  s.m = 520;
  s.k = 136;
  s.n = 264;
  s.sizes = {0, 100, 37, 0, 200, 1, 0, 150};
  // Group 0 is empty with beta 2: its output doubles.
  s.alpha.per_group = {1.0f, -1.0f, 2.0f, 0.25f, 1.0f, 1.0f, 1.5f, 3.0f};
  s.beta.per_group = {2.0f, 0.0f, -0.5f, 0.0f, 0.0f, 1.0f, 0.75f, 0.0f};
  run_and_check(s, path(), stream());
}

INSTANTIATE_TEST_SUITE_P(Paths, RaggedK, all_path_dtypes(), ParamName());

}  // namespace
}  // namespace gg::test

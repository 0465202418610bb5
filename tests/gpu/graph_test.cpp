// CUDA graphs: one ragged-M and one ragged-K call are captured once, then
// replayed after the group sizes (and all data) changed on the device,
// outside the graph. Every replay must match the reference for the new sizes:
// the kernels may learn nothing about the sizes at capture time. Per-expert
// matrices also move to other allocations between replays: nor may they
// learn the pointers.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "gpu/captured_gemm.h"
#include "gpu/cuda_check.h"
#include "gpu/gemm_case.h"
#include "gpu/path_test.h"
#include "gpu/routing.h"

namespace gg::test {
namespace {

class Graph : public PathTest<gg_path> {
 protected:
  // 300 of 384 rows in 8 groups, replayed after routings(8, 370).
  static GemmSpec small_ragged_m(std::string name) {
    GemmSpec s;
    s.name = std::move(name);
    s.op = GG_OP_RAGGED_M;
    s.m = 384;
    s.n = 136;
    s.k = 72;
    s.sizes = uniform_sizes(8, 300);
    return s;
  }

  // `tokens` of `m` rows in `groups` uniform groups, accumulated (beta 1)
  // into an fp32 output: out [groups, k, n].
  static GemmSpec accumulating_ragged_k(std::string name, int64_t m, int64_t n, int64_t k,
                                        int32_t groups, int64_t tokens) {
    GemmSpec s;
    s.name = std::move(name);
    s.op = GG_OP_RAGGED_K;
    s.out = GG_DTYPE_FP32;
    s.m = m;
    s.n = n;
    s.k = k;
    s.sizes = uniform_sizes(groups, tokens);
    s.beta.value = 1.0f;
    return s;
  }

  // Routings of `groups` (at least 4) over `tokens`: random, with empty
  // groups, one hot, all empty.
  static std::vector<std::vector<int64_t>> routings(int32_t groups, int64_t tokens) {
    std::mt19937_64 rng = test_rng("routings");
    std::vector<int64_t> sparse(groups, 0);
    sparse[groups / 4] = tokens / 3;
    sparse[groups / 2] = tokens / 3;
    sparse[groups - 1] = 1;
    return {random_sizes(groups, tokens, rng), sparse, one_hot_sizes(groups, tokens, groups * 3 / 4),
            std::vector<int64_t>(groups, 0)};
  }
};

TEST_P(Graph, SmallRaggedMReplays) {
  GemmSpec s = small_ragged_m("graph ragged-M");
  s.rhs_layout = GG_LAYOUT_T;
  s.bias = GG_DTYPE_BF16;
  expect_replays_correct(path(), stream(), s, routings(8, 370));
}

TEST_P(Graph, SmallRaggedMZeroUnusedRowsReplays) {
  // The rows to zero move with the sizes: replays after routings that use
  // more, fewer and no rows must zero exactly the rows past the new last group.
  GemmSpec s = small_ragged_m("graph ragged-M zero-unused-rows");
  s.zero_unused_rows = true;
  expect_replays_correct(path(), stream(), s, routings(8, 370));
}

TEST_P(Graph, SmallRaggedMFewRowsReplays) {
  // Groups averaging 8 rows: the sm90 path's 64-row tile (RaggedM.SmallFewRowsAGroup).
  GemmSpec s = small_ragged_m("graph ragged-M few rows a group");
  s.m = 128;
  s.n = 264;
  s.sizes = {0, 1, 7, 8, 9, 20, 3, 10, 0, 0, 16, 30, 2, 1, 5, 8};
  expect_replays_correct(path(), stream(), s, routings(16, 120));
}

TEST_P(Graph, SmallRaggedKReplays) {
  expect_replays_correct(path(), stream(),
                         accumulating_ragged_k("graph ragged-K", 384, 72, 136, 8, 300),
                         routings(8, 370));
}

TEST_P(Graph, SmallRaggedKClusterPairsReplays) {
  // Groups long enough for the sm90 path's cluster pairs (RaggedK.SmallClusterPairs).
  GemmSpec s = accumulating_ragged_k("graph ragged-K cluster pairs", 2104, 264, 264, 4, 2000);
  s.lhs_layout = GG_LAYOUT_T;
  expect_replays_correct(path(), stream(), s, routings(4, 2100));
}

TEST_P(Graph, SmallRaggedKInTurnReplays) {
  // Groups averaging 128-511 tokens: the sm90 path's 128 x 256 tile whose
  // consumers store in turn (RaggedK.SmallTilesInTurn).
  GemmSpec s = accumulating_ragged_k("graph ragged-K in turn", 1200, 264, 136, 8, 1100);
  expect_replays_correct(path(), stream(), s, routings(8, 1150));
}

TEST_P(Graph, SmallPerExpertWeightsReplays) {
  GemmSpec s = small_ragged_m("graph ragged-M per-expert weights");
  s.rhs_layout = GG_LAYOUT_T;
  s.pointer_array = true;
  expect_replays_correct(path(), stream(), s, routings(8, 370));
}

TEST_P(Graph, SmallPerExpertGradientsReplays) {
  GemmSpec s = accumulating_ragged_k("graph ragged-K per-expert gradients", 384, 72, 136, 8, 300);
  s.pointer_array = true;
  expect_replays_correct(path(), stream(), s, routings(8, 370));
}

INSTANTIATE_TEST_SUITE_P(Paths, Graph, ::testing::ValuesIn(gpu_paths()), ParamName());

}  // namespace
}  // namespace gg::test

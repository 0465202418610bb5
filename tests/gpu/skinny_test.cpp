// The skinny kernel (kernels/skinny/) on both GPU paths and on
// GG_PATH_AUTO, against the CPU reference: quantized weights [G, N, K]
// (nvfp4, mxfp4, mxfp8, fp8 with tensor, group or rowwise scales) times bf16
// tokens or tokens of the same element width, with groups of a few rows,
// which the plan gives it (plan_skinny; the sm90 path keeps fp8 with fp32
// scales on its fp8 kernels, so those pairs reach it on the portable path).
// Edge sizes: 0, 1, 8 and 9 (one and two 8-token mma columns), 15-17 (the
// 16-token tile +- 1), 31, 33, a group of many tiles, unaligned starts, all
// tokens in one group, all empty, G = 1, G = 256, sum < M; K of one chunk,
// a partial 512-deep block and several; N of 8 columns, past a 256-column
// block; per-group alpha, bias, beta, bf16 and fp16 outputs, zeroed rows;
// per-expert weights; bad sizes; a graph replayed after the sizes changed.
// Random codes and scales, poisoned rows outside the groups, guard bands
// (GemmCase). The suite sets GROUPGEMM_UNVERIFIED_KERNELS=1: it is what
// verifies the kernel.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/captured_gemm.h"
#include "gpu/gemm_case.h"
#include "gpu/path_test.h"
#include "gpu/quantized_specs.h"
#include "gpu/routing.h"

namespace gg::test {
namespace {


// Every instance (bf16 x e2m1, bf16 x fp8, fp8 x fp8, e2m1 x e2m1) and
// every scaling each takes.
const std::vector<FormatPair> kPairs = {
    {std::nullopt, kNvfp4Group}, {std::nullopt, kMxfp4},       {std::nullopt, kMxE4m3},
    {std::nullopt, kE4m3Tensor}, {std::nullopt, kE5m2Rowwise}, {kNvfp4Tensor, kNvfp4Group},
    {kMxfp4, kMxfp4},            {kMxE4m3, kMxE4m3},           {kMxE5m2, kMxE4m3},
    {kE4m3Tensor, kE4m3Group},   {kE4m3Rowwise, kE4m3Rowwise}};

// Groups average at most 32 rows. K 1088: two whole 512-deep blocks and a
// partial third (e2m1 rows of 544 bytes); K 32: one chunk; K 2080: a
// partial fifth block. N 296: a partial second block of 256 columns (the
// last warps' rows outside N, a warp with rows on both sides); N 8: one
// warp's rows, most outside N; N a multiple of 8, so that bf16 and fp32
// output rows are 16-byte multiples.
const std::vector<QuantizedShape> kShapes = {
    {"edges", 160, 1088, 296,
     {{"small", {0, 1, 8, 9, 0}},  // sum 18 < M, unaligned starts
      {"tile", {15, 16, 17, 31, 33}},
      {"one_hot", {0, 0, 160, 0, 0}},
      {"all_empty", {0, 0, 0, 0, 0}}}},
    {"one_chunk", 40, 32, 40, {{"short", {3, 0, 17, 7}}}},
    {"narrow", 40, 64, 8, {{"narrow", {5, 9, 0, 20}}}},
    {"deep", 96, 2080, 520, {{"deep", {2, 30, 1, 33}}}},
};

class Skinny : public UnverifiedKernelsPathTest {};

TEST_P(Skinny, EveryPairAndEdgeSize) {
  check_every_pair_and_size(kPairs, kShapes, path(), stream());
}

TEST_P(Skinny, BiasBetaOutputsAndZeroedRows) {
  for (const FormatPair& formats : {kPairs[0], kPairs[5], kPairs[7], kPairs[10]}) {
    for (gg_dtype out : {GG_DTYPE_BF16, GG_DTYPE_FP16}) {
      GemmSpec s = kmajor_spec(formats, kShapes[0], {5, 0, 40, 17, 2});
      s.out = out;
      s.bias = GG_DTYPE_BF16;
      s.beta.value = 0.5f;
      run_and_check(s, path(), stream());
    }
    GemmSpec z = kmajor_spec(formats, kShapes[0], {5, 0, 40, 17, 2});
    z.zero_unused_rows = true;
    run_and_check(z, path(), stream());
    GemmSpec offsets = kmajor_spec(formats, kShapes[0], {5, 0, 40, 17, 2});
    offsets.offsets = {100, 7, 10, 50, 150};  // out of order, with gaps
    run_and_check(offsets, path(), stream());
  }
}

// One case of each pair: what scripts/sanitize.sh runs (its filter takes
// the "Small" cases) under memcheck, racecheck and synccheck.
TEST_P(Skinny, SmallEveryFormatPair) {
  for (const FormatPair& formats : kPairs) {
    run_and_check(kmajor_spec(formats, kShapes[0], {1, 0, 31, 9, 40}), path(), stream());
  }
}

TEST_P(Skinny, OneGroupAnd256Groups) {
  for (const FormatPair& formats : {kPairs[0], kPairs[2], kPairs[5], kPairs[9]}) {
    GemmSpec one = kmajor_spec(formats, kShapes[1], {32});
    one.m = 32;
    run_and_check(one, path(), stream());
    const std::vector<int64_t> sizes = cyclic_sizes(256, {0, 2, 4, 1, 3});
    GemmSpec s = kmajor_spec(formats, kShapes[0], sizes);
    s.m = sum_of(sizes) + 9;
    run_and_check(s, path(), stream());
  }
}

TEST_P(Skinny, BadSizesAreClampedAndFlagged) {
  GemmSpec s = kmajor_spec(kPairs[0], kShapes[0], {-3, 100, 500, 7, 1});
  s.expected_flags = GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS;
  run_and_check(s, path(), stream());
}

// Captured once, replayed after the sizes, codes and scales changed on the
// device: nothing about them may be learned at capture time.
TEST_P(Skinny, GraphReplaysWithChangedSizes) {
  const std::vector<std::vector<int64_t>> reroutes = {
      {0, 0, 160, 0, 0}, {0, 0, 0, 0, 0}, {17, 0, 1, 9, 100}, {32, 32, 32, 32, 32}};
  for (const FormatPair& formats : {kPairs[0], kPairs[5], kPairs[7]}) {
    expect_replays_correct(path(), stream(), kmajor_spec(formats, kShapes[0], {1, 0, 31, 33, 2}),
                           reroutes);
  }
}

// Weights as G separate matrices (a pointer array), their block scales too.
TEST_P(Skinny, PerExpertWeights) {
  for (const FormatPair& formats : {kPairs[0], kPairs[3], kPairs[5], kPairs[8]}) {
    GemmSpec s = kmajor_spec(formats, kShapes[0], kShapes[0].sizes[1].second);
    s.pointer_array = true;
    run_and_check(s, path(), stream());
    GemmSpec replayed = kmajor_spec(formats, kShapes[0], {1, 0, 31, 33, 2});
    replayed.pointer_array = true;
    expect_replays_correct(path(), stream(), replayed, {{0, 0, 160, 0, 0}, {17, 0, 1, 9, 100}});
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPath, Skinny,
                         ::testing::Values(GG_PATH_SM90, GG_PATH_PORTABLE, GG_PATH_AUTO),
                         ParamName());

}  // namespace
}  // namespace gg::test

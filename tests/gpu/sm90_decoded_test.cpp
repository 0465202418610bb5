// Quantized operands decoded into bf16 on the Hopper path, against the CPU
// reference: mxfp8 (e4m3, e5m2), mxfp4, nvfp4 and their mixes, and
// quantized weights (those, and fp8 with tensor or rowwise scales) with
// bf16 activations; ragged-M with K-major weights [G, N, K], on sizes that
// reach both tiles the plan gives them (128 x 128; 64 x 256 for groups of a
// few rows) and their edges: 0, 1, the 128-row tile +- 1, unaligned group
// starts, one hot group, all empty, G = 1, G = 256, sum < M, K and N tails
// (K a whole number of 16-byte chunks of codes: 32 elements for e2m1, a
// partial last k-step of 64), N past the last tile; per-group alpha, bias,
// beta, bf16 output, zeroed rows; bad sizes; a graph replayed after the
// sizes changed. The weight gradient (ragged-K) of MX and NV blocks along
// the tokens of columnwise copies [P, M] and [Q, M]: groups starting at
// every offset into a chunk of codes, ending inside a chunk, a k-step or on
// its edge, spanning several k-steps, P and Q tails, 1 and 256 groups, fp32
// accumulation (beta 1) and bf16 outputs, bad sizes, graph replays. Random
// codes and scales, poisoned rows outside the groups, guard bands
// (GemmCase); stacked and per-expert outputs. GG_PATH_AUTO takes the sm90
// path for these; what it refuses is refused by name. The suite sets
// GROUPGEMM_UNVERIFIED_KERNELS=1: it is what verifies the kernels
// (kernels/verified_kernels.h). The ragged-M mxfp8 pairs of e4m3 weights
// (e4m3 x e4m3, e5m2 x e4m3) run on the fp8 wgmma instances with MX blocks
// (sm90_gemm_fp8_mx.cu), not the decode: these cases are theirs, judged by
// the fp8 tensor cores' bound (output_check.h).
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


// Both decoded (forward and dgrad of the MX and NV recipes, and mixes) and
// weight-only.
const std::vector<FormatPair> kPairs = {
    {kMxE4m3, kMxE4m3},      {kMxE5m2, kMxE4m3},       {kMxfp4, kMxfp4},
    {kMxE4m3, kMxfp4},       {kNvfp4Tensor, kNvfp4Group}, {std::nullopt, kMxE4m3},
    {std::nullopt, kMxfp4},  {std::nullopt, kNvfp4Group}, {std::nullopt, kE4m3Tensor},
    {std::nullopt, kE5m2Rowwise}};

// Groups averaging over 32 rows take 128 x 128 tiles, at most 32 (with N
// over 128) 64 x 256. K 224: three whole k-steps of 64 and a half one
// (the e2m1 rows' 112 bytes end mid-box); N 96 and 272: partial n-tiles.
const std::vector<QuantizedShape> kShapes = {
    {"128x128", 400, 224, 96,
     {{"edges", {0, 1, 127, 129, 0}},  // sum 257 < M, unaligned starts
      {"one_hot", {0, 0, 400, 0}},
      {"all_empty", {0, 0, 0, 0}},
      {"tile_minus_1_plus_1", {63, 0, 65, 255}}}},
    {"64x256", 64, 128, 272, {{"decode", {1, 0, 17, 33}}, {"one_hot", {0, 0, 64, 0}}}},
    // K 2080: 16 whole k-steps and one of a single 32-deep block, enough
    // steps for a CTA's ring of stages (and the MX scale writers' phases)
    // to wrap; N 160: a partial second n-tile.
    {"deep", 300, 2080, 160, {{"deep", {0, 150, 1, 129}}}},
};

// The weight gradient's pairs: one block size on both operands.
const std::vector<FormatPair> kTokenPairs = {{kMxE4m3, kMxE4m3},
                                             {kMxE5m2, kMxE4m3},
                                             {kMxfp4, kMxfp4},
                                             {kMxE4m3, kMxfp4},
                                             {kNvfp4Tensor, kNvfp4Group}};

// Ragged-K: m tokens (a multiple of 32, so e2m1 rows are 16-byte aligned),
// k = P and n = Q, neither a multiple of the 128 x 128 tile. Group starts
// 0, 3, 129, 131, 257, ...: every shift of a box into its first chunk is
// reached over the cases; sizes 1, 17, 33 end inside a chunk, 127-129
// about two k-steps, 300-382 span several.
const std::vector<QuantizedShape> kTokenShapes = {
    {"tokens", 640, 200, 96,
     {{"edges", {0, 129, 300, 211}},
      {"unaligned", {3, 128, 127, 382}},
      {"short", {1, 0, 17, 33, 5, 64}},  // sum 120 < M
      {"one_hot", {0, 640, 0}},
      {"all_empty", {0, 0, 0}}}},
    {"wide", 2048, 136, 320, {{"two", {1000, 1048}}, {"one_group", {2047}}}},
};

// The weight gradient dw[g] = a[g tokens]^T b[g tokens] of columnwise copies.
GemmSpec token_spec(const FormatPair& formats, const QuantizedShape& shape,
                    std::vector<int64_t> sizes) {
  GemmSpec s = kmajor_spec(formats, shape, std::move(sizes));
  s.op = GG_OP_RAGGED_K;
  s.lhs_layout = GG_LAYOUT_T;
  s.rhs_layout = GG_LAYOUT_T;
  s.name += " wgrad";
  return s;
}

class Sm90Decoded : public UnverifiedKernelsPathTest {};

TEST_P(Sm90Decoded, EveryPairTileAndEdgeSize) {
  check_every_pair_and_size(kPairs, kShapes, path(), stream());
}

TEST_P(Sm90Decoded, BiasBetaBf16OutputAndZeroedRows) {
  for (const FormatPair& formats : {kPairs[0], kPairs[4], kPairs[7]}) {
    for (const QuantizedShape& shape : kShapes) {
      GemmSpec s = kmajor_spec(formats, shape, {5, 0, 40, 17});
      s.out = GG_DTYPE_BF16;
      s.bias = GG_DTYPE_BF16;
      s.beta.value = 0.5f;
      run_and_check(s, path(), stream());
      GemmSpec z = kmajor_spec(formats, shape, {5, 0, 40, 17});
      z.zero_unused_rows = true;
      run_and_check(z, path(), stream());
    }
  }
}

// One case of each pair: what scripts/sanitize.sh runs (its filter takes
// the "Small" cases) under memcheck, racecheck and synccheck.
TEST_P(Sm90Decoded, SmallEveryFormatPair) {
  for (const FormatPair& formats : kPairs) {
    run_and_check(kmajor_spec(formats, kShapes[0], {1, 0, 31, 200}), path(), stream());
  }
}

TEST_P(Sm90Decoded, OneGroupAnd256Groups) {
  for (const FormatPair& formats : {kPairs[3], kPairs[4], kPairs[6]}) {
    run_and_check(kmajor_spec(formats, kShapes[0], {kShapes[0].m}), path(), stream());
    std::vector<int64_t> sizes(256, 0);
    for (size_t g = 0; g < sizes.size(); ++g) sizes[g] = static_cast<int64_t>(g * 7 % 5);
    GemmSpec s = kmajor_spec(formats, kShapes[1], sizes);
    s.m = sum_of(sizes) + 9;
    run_and_check(s, path(), stream());
  }
}

TEST_P(Sm90Decoded, BadSizesAreClampedAndFlagged) {
  GemmSpec s = kmajor_spec(kPairs[1], kShapes[0], {-3, 300, 500, 7});
  s.expected_flags = GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS;
  run_and_check(s, path(), stream());
}

// Captured once, replayed after the sizes, codes and scales changed on the
// device: nothing about them may be learned at capture time.
TEST_P(Sm90Decoded, GraphReplaysWithChangedSizes) {
  const std::vector<std::vector<int64_t>> reroutes = {
      {0, 0, 400, 0}, {0, 0, 0, 0}, {17, 0, 1, 300}, {100, 100, 100, 100}};
  for (const FormatPair& formats : {kPairs[0], kPairs[4], kPairs[7]}) {
    expect_replays_correct(path(), stream(), kmajor_spec(formats, kShapes[0], {1, 0, 31, 33}),
                           reroutes);
  }
}

// Weights as G separate matrices (a pointer array, as frameworks that keep
// one parameter per expert hold them), their block scales too: loaded
// through per-expert maps; on both tiles, and in a graph replayed after the
// sizes changed and the matrices moved.
TEST_P(Sm90Decoded, PerExpertWeights) {
  for (const FormatPair& formats : {kPairs[0], kPairs[3], kPairs[4], kPairs[7], kPairs[9]}) {
    for (const QuantizedShape& shape : kShapes) {
      GemmSpec s = kmajor_spec(formats, shape, shape.sizes.front().second);
      s.pointer_array = true;
      run_and_check(s, path(), stream());
    }
    GemmSpec replayed = kmajor_spec(formats, kShapes[0], {1, 0, 31, 33});
    replayed.pointer_array = true;
    expect_replays_correct(path(), stream(), replayed, {{0, 0, 400, 0}, {17, 0, 1, 300}});
  }
}

TEST_P(Sm90Decoded, WeightGradientEveryPairAndEdgeSize) {
  for (const FormatPair& formats : kTokenPairs) {
    for (const QuantizedShape& shape : kTokenShapes) {
      for (const auto& [name, sizes] : shape.sizes) {
        SCOPED_TRACE(name);
        GemmSpec s = token_spec(formats, shape, sizes);
        s.beta.value = 1.0f;  // accumulating into an fp32 main grad
        run_and_check(s, path(), stream());
      }
    }
  }
}

TEST_P(Sm90Decoded, WeightGradientBf16OutputAlphaAnd256Groups) {
  for (const FormatPair& formats : {kTokenPairs[0], kTokenPairs[3], kTokenPairs[4]}) {
    GemmSpec s = token_spec(formats, kTokenShapes[0], {5, 0, 140, 17});
    s.out = GG_DTYPE_BF16;
    s.alpha.per_group = {0.5f, 1.0f, -2.0f, 0.25f};
    run_and_check(s, path(), stream());
    std::vector<int64_t> sizes(256, 0);
    for (size_t g = 0; g < sizes.size(); ++g) sizes[g] = static_cast<int64_t>(g * 7 % 5);
    GemmSpec many = token_spec(formats, kTokenShapes[0], sizes);
    many.m = (sum_of(sizes) + 9 + 31) / 32 * 32;
    run_and_check(many, path(), stream());
  }
}

// One case of each pair: what scripts/sanitize.sh runs (its filter takes
// the "Small" cases).
TEST_P(Sm90Decoded, SmallWeightGradientEveryPair) {
  for (const FormatPair& formats : kTokenPairs) {
    run_and_check(token_spec(formats, kTokenShapes[0], {1, 0, 31, 200, 3}), path(), stream());
  }
}

// Weight gradients as G separate matrices (a pointer array), accumulated
// into fp32, and as bf16.
TEST_P(Sm90Decoded, WeightGradientPerExpertOutputs) {
  for (const FormatPair& formats : {kTokenPairs[0], kTokenPairs[4]}) {
    for (const auto& [name, sizes] : kTokenShapes[0].sizes) {
      SCOPED_TRACE(name);
      GemmSpec s = token_spec(formats, kTokenShapes[0], sizes);
      s.pointer_array = true;
      s.beta.value = 1.0f;
      run_and_check(s, path(), stream());
    }
    GemmSpec bf16 = token_spec(formats, kTokenShapes[1], kTokenShapes[1].sizes.front().second);
    bf16.pointer_array = true;
    bf16.out = GG_DTYPE_BF16;
    run_and_check(bf16, path(), stream());
  }
}

TEST_P(Sm90Decoded, WeightGradientBadSizesAreClampedAndFlagged) {
  GemmSpec s = token_spec(kTokenPairs[2], kTokenShapes[0], {-3, 300, 500, 7});
  s.expected_flags = GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS;
  run_and_check(s, path(), stream());
}

TEST_P(Sm90Decoded, WeightGradientGraphReplaysWithChangedSizes) {
  const std::vector<std::vector<int64_t>> reroutes = {
      {0, 640, 0, 0}, {0, 0, 0, 0}, {17, 0, 1, 300}, {160, 160, 160, 160}};
  for (const FormatPair& formats : {kTokenPairs[0], kTokenPairs[4]}) {
    expect_replays_correct(path(), stream(), token_spec(formats, kTokenShapes[0], {1, 0, 31, 33}),
                           reroutes);
  }
}

INSTANTIATE_TEST_SUITE_P(Sm90AndAuto, Sm90Decoded, ::testing::Values(GG_PATH_SM90, GG_PATH_AUTO),
                         ParamName());

class Sm90DecodedRefusal : public UnverifiedKernelsPathTest {};

// What the decoding kernels cannot read is refused with
// GG_STATUS_NOT_SUPPORTED, naming why, never run: the weight gradient of
// tokens-as-rows operands, MN-major weights, K not a whole number of chunks
// of codes; GG_PATH_AUTO runs each on the portable path.
TEST_P(Sm90DecodedRefusal, NamesWhy) {
  struct Refused {
    GemmSpec spec;
    const char* named;
  };
  std::vector<Refused> cases;
  GemmSpec wgrad = token_spec(kPairs[0], kShapes[0], {9, 30});
  wgrad.m = 64, wgrad.k = 64, wgrad.n = 32;
  wgrad.lhs_layout = GG_LAYOUT_N;
  cases.push_back({wgrad, "lhs and rhs must be GG_LAYOUT_T"});
  GemmSpec mn_major = kmajor_spec(kPairs[5], kShapes[0], {9});
  mn_major.rhs_layout = GG_LAYOUT_N;
  cases.push_back({mn_major, "rhs must be GG_LAYOUT_T"});
  GemmSpec k_tail = kmajor_spec(kPairs[2], kShapes[0], {9});
  k_tail.k = 208;  // e2m1 rows of 104 bytes
  cases.push_back({k_tail, "K a multiple of 16 (fp8) or 32 (e2m1)"});
  for (const Refused& c : cases) {
    GemmCase gemm(c.spec, GG_PATH_SM90);
    SCOPED_TRACE(gemm.label());
    expect_refusal(gemm, gemm.run(stream()), c.named);
    run_and_check(c.spec, GG_PATH_AUTO, stream());
  }
}

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90DecodedRefusal, ::testing::Values(GG_PATH_SM90), ParamName());

}  // namespace
}  // namespace gg::test

// fp8 operands on the Hopper path against the CPU reference: e4m3 x e4m3 and
// e5m2 x e4m3 with tensor, group and rowwise scales, or 1x128 x 128x128
// (ragged-M) and 1x128 x 1x128 (ragged-K) blocks, K-major (ragged-M
// weights [G, N, K], stacked or per expert; ragged-K operands [P, M] and
// [Q, M], the quantizer's columnwise copies), on sizes that reach every
// instance the plan picks (128 x 128, 128 x 256, 64 x 256 ragged-M tiles;
// sparse-K, wide, narrow, cluster-paired and token-block ragged-K) and
// their edges: 0, 1, the 128-row tile +- 1,
// unaligned group starts, one hot group, all empty, G = 1, G = 256, sum < M,
// K and N tails, P with an odd number of m-tiles; bias, beta, bf16 output;
// bad sizes; a graph replayed after the sizes changed. Random codes and
// scales, poisoned rows outside the groups, guard bands (GemmCase).
// GG_PATH_AUTO takes the sm90 path for these; what it refuses is refused by
// name. The suite sets GROUPGEMM_UNVERIFIED_KERNELS=1: it is what verifies
// the kernels (kernels/verified_kernels.h).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "gpu/captured_gemm.h"
#include "gpu/gemm_case.h"
#include "gpu/path_test.h"
#include "gpu/routing.h"

namespace gg::test {
namespace {

using Format = QuantizeFormatSpec;

constexpr Format kE4m3Blocks1x128{GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE};
constexpr Format kE5m2Blocks1x128{GG_DTYPE_E5M2, GG_BLOCK_1X128, GG_SCALE_NONE};
constexpr Format kE4m3Blocks128x128{GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE};

using FormatPair = std::pair<Format, Format>;

// Forward, gradient x weights, and mixes of scale kinds.
const std::vector<FormatPair> kPairs = {{kE4m3Tensor, kE4m3Group},
                                        {kE4m3Rowwise, kE4m3Rowwise},
                                        {kE5m2Rowwise, kE4m3Rowwise},
                                        {kE5m2Group, kE4m3Tensor},
                                        {kE5m2Tensor, kE4m3Tensor}};

struct Shape {
  const char* name;
  int64_t m, k, n;  // ragged-M: tokens, K, N; ragged-K: tokens, P, Q
  std::vector<std::pair<std::string, std::vector<int64_t>>> sizes;
};

// Ragged-M: groups averaging over 32 rows take 128-row tiles (128 x 128 up
// to 128 columns, else 128 x 256); at most 32, 64 x 256. K 208 leaves a
// partial second k-step of 128 fp8 elements.
const std::vector<Shape> kRaggedMShapes = {
    {"128x128", 400, 208, 96,
     {{"edges", {0, 1, 127, 129, 0}},  // sum 257 < M, unaligned starts
      {"one_hot", {0, 0, 400, 0}},
      {"all_empty", {0, 0, 0, 0}},
      {"tile_minus_1_plus_1", {63, 0, 65, 255}}}},
    {"128x256", 400, 256, 320,
     {{"edges", {0, 1, 127, 129, 0}}, {"one_group", {333}}, {"short_groups", {64, 3, 64, 200}}}},
    {"64x256", 64, 128, 272, {{"decode", {1, 0, 17, 33}}, {"one_hot", {0, 0, 64, 0}}}},
};

// Ragged-K (tokens M, a multiple of 16 for 16-byte rows): groups averaging
// under 128 tokens take the sparse-K instance, 512 or more cluster pairs;
// Q over 128 the wide tile. P 200 and 300 leave partial m-tiles (300: an
// odd count, so a cluster's second CTA has no rows in the last unit).
const std::vector<Shape> kRaggedKShapes = {
    {"sparse_k", 96, 64, 96,
     {{"edges", {0, 1, 31, 33, 0}}, {"all_empty", {0, 0, 0, 0}}, {"one_hot", {0, 0, 96, 0}}}},
    {"narrow", 640, 200, 96,
     {{"edges", {0, 129, 300, 211}}, {"unaligned", {3, 128, 127, 382}}}},
    {"wide", 640, 200, 320, {{"edges", {0, 129, 300, 211}}, {"one_group", {577}}}},
    {"pairs", 2048, 300, 256, {{"two", {1000, 1048}}, {"one_hot", {0, 2047}}}},
};

GemmSpec fp8_spec(gg_op op, const FormatPair& formats, const Shape& shape,
                  std::vector<int64_t> sizes) {
  GemmSpec s;
  s.op = op;
  s.lhs_format = formats.first;
  s.rhs_format = formats.second;
  s.out = GG_DTYPE_FP32;
  s.lhs_layout = op == GG_OP_RAGGED_M ? GG_LAYOUT_N : GG_LAYOUT_T;
  s.rhs_layout = GG_LAYOUT_T;
  s.m = shape.m, s.k = shape.k, s.n = shape.n;
  s.sizes = std::move(sizes);
  s.name = format_label(formats.first) + " x " + format_label(formats.second) + " " + shape.name;
  return s;
}

class Sm90Fp8 : public UnverifiedKernelsPathTest {};

TEST_P(Sm90Fp8, RaggedMEveryTileAndEdgeSize) {
  for (const FormatPair& formats : kPairs) {
    for (const Shape& shape : kRaggedMShapes) {
      for (const auto& [name, sizes] : shape.sizes) {
        SCOPED_TRACE(name);
        GemmSpec s = fp8_spec(GG_OP_RAGGED_M, formats, shape, sizes);
        for (size_t g = 0; g < sizes.size(); ++g) {
          s.alpha.per_group.push_back(0.5f + 0.25f * static_cast<float>(g));
        }
        run_and_check(s, path(), stream());
      }
    }
  }
}

// 1x128 activations x 128x128 weights (DeepSeek-V3's recipe), forward and
// gradient x weights: each k-step promoted with its blocks' scales, on the
// 128 x 128 and 64 x 256 tiles the plan gives them (K 208: a partial last
// block; N 96, 320, 272: partial n-blocks).
TEST_P(Sm90Fp8, RaggedMBlockScaledEveryTileAndEdgeSize) {
  for (const FormatPair& formats :
       {FormatPair{kE4m3Blocks1x128, kE4m3Blocks128x128},
        FormatPair{kE5m2Blocks1x128, kE4m3Blocks128x128}}) {
    for (const Shape& shape : kRaggedMShapes) {
      for (const auto& [name, sizes] : shape.sizes) {
        SCOPED_TRACE(name);
        GemmSpec s = fp8_spec(GG_OP_RAGGED_M, formats, shape, sizes);
        s.alpha.value = 0.75f;
        run_and_check(s, path(), stream());
      }
    }
    GemmSpec s = fp8_spec(GG_OP_RAGGED_M, formats, kRaggedMShapes[1], {5, 0, 40, 17});
    s.out = GG_DTYPE_BF16;
    s.bias = GG_DTYPE_BF16;
    s.beta.value = 0.5f;
    run_and_check(s, path(), stream());
    expect_replays_correct(path(), stream(),
                           fp8_spec(GG_OP_RAGGED_M, formats, kRaggedMShapes[1], {1, 0, 31, 33}),
                           {{0, 0, 384, 0}, {0, 0, 0, 0}, {96, 96, 96, 96}});
  }
}

TEST_P(Sm90Fp8, RaggedMBiasBetaBf16OutputAndZeroedRows) {
  for (const FormatPair& formats : {kPairs[0], kPairs[2]}) {
    for (const Shape& shape : kRaggedMShapes) {
      GemmSpec s = fp8_spec(GG_OP_RAGGED_M, formats, shape, {5, 0, 40, 17});
      s.out = GG_DTYPE_BF16;
      s.bias = GG_DTYPE_BF16;
      s.beta.value = 0.5f;
      run_and_check(s, path(), stream());
      GemmSpec z = fp8_spec(GG_OP_RAGGED_M, formats, shape, {5, 0, 40, 17});
      z.zero_unused_rows = true;
      run_and_check(z, path(), stream());
    }
  }
}

// Weights as G separate matrices (a pointer array, as frameworks that keep
// one parameter per expert hold them), their block scales too: loaded
// through per-expert maps; on every tile, and in a graph replayed after the
// sizes changed and the matrices moved.
TEST_P(Sm90Fp8, RaggedMPerExpertWeights) {
  for (const FormatPair& formats :
       {kPairs[0], kPairs[2], FormatPair{kE5m2Blocks1x128, kE4m3Blocks128x128}}) {
    for (const Shape& shape : kRaggedMShapes) {
      GemmSpec s = fp8_spec(GG_OP_RAGGED_M, formats, shape, shape.sizes.front().second);
      s.pointer_array = true;
      run_and_check(s, path(), stream());
    }
    GemmSpec replayed = fp8_spec(GG_OP_RAGGED_M, formats, kRaggedMShapes[1], {1, 0, 31, 33});
    replayed.pointer_array = true;
    expect_replays_correct(path(), stream(), replayed, {{0, 0, 384, 0}, {17, 0, 1, 300}});
  }
}

// Every size list of every shape, ragged-K, beta 1 (a weight gradient
// accumulating into an fp32 main grad).
void check_ragged_k_sizes(const FormatPair& formats, const std::vector<Shape>& shapes,
                          gg_path path, cudaStream_t stream) {
  for (const Shape& shape : shapes) {
    for (const auto& [name, sizes] : shape.sizes) {
      SCOPED_TRACE(name);
      GemmSpec s = fp8_spec(GG_OP_RAGGED_K, formats, shape, sizes);
      s.beta.value = 1.0f;
      run_and_check(s, path, stream);
    }
  }
}

TEST_P(Sm90Fp8, RaggedKEveryInstanceAndEdgeSize) {
  for (const FormatPair& formats : kPairs) {
    check_ragged_k_sizes(formats, kRaggedKShapes, path(), stream());
  }
}

TEST_P(Sm90Fp8, RaggedKBf16OutputWithoutBeta) {
  for (const Shape& shape : kRaggedKShapes) {
    GemmSpec s = fp8_spec(GG_OP_RAGGED_K, kPairs[2], shape, shape.sizes.front().second);
    s.out = GG_DTYPE_BF16;
    run_and_check(s, path(), stream());
  }
}

// 1x128 x 1x128 along the tokens (DeepSeek-V3's weight gradient): a
// group's k-steps are 128-token windows from its first token rounded down
// to 16, each block of both operands (128 tokens from the group's first,
// random scales per block) split across two windows where the group starts
// off 16 tokens, promoted with its rows' and columns' block scales. Groups
// start at every offset of a 16-byte chunk and end inside a window, before
// and after the split, span one or several blocks, whole windows, one hot
// group, all empty, sum < M; P 200 and Q 96 / 320 leave partial m- and
// n-tiles.
const std::vector<FormatPair> kTokenBlockPairs = {{kE4m3Blocks1x128, kE4m3Blocks1x128},
                                                  {kE5m2Blocks1x128, kE4m3Blocks1x128}};
const std::vector<Shape> kTokenBlockShapes = {
    {"narrow", 1024, 200, 96,
     {{"edges", {0, 1, 127, 129, 0, 255, 257}},
      {"chunk_offsets", {3, 5, 7, 9, 11, 13, 15, 1, 2, 4, 6, 8, 10, 12, 14, 16}},
      {"one_hot", {0, 1000, 0}},
      {"all_empty", {0, 0, 0}},
      {"whole_windows", {128, 256, 0, 384, 128}},
      {"ends_before_the_split", {9, 130, 250, 140, 5}},
      {"on_16_tokens", {16, 272, 144, 32, 131, 5}}}},
    {"wide", 640, 200, 320,
     {{"unaligned", {3, 128, 127, 382}}, {"one_group", {577}}, {"whole_windows", {256, 384}}}},
};

TEST_P(Sm90Fp8, RaggedKTokenBlocksEveryEdgeSize) {
  for (const FormatPair& formats : kTokenBlockPairs) {
    check_ragged_k_sizes(formats, kTokenBlockShapes, path(), stream());
    GemmSpec s = fp8_spec(GG_OP_RAGGED_K, formats, kTokenBlockShapes[1], {3, 128, 127, 382});
    s.out = GG_DTYPE_BF16;
    for (int g = 0; g < 4; ++g) s.alpha.per_group.push_back(0.5f + 0.25f * static_cast<float>(g));
    run_and_check(s, path(), stream());
  }
}

// Per-expert outputs, one group and 256, bad sizes, and a graph replayed
// after the sizes changed.
TEST_P(Sm90Fp8, RaggedKTokenBlocksOutputsGroupsAndReplays) {
  for (const FormatPair& formats : kTokenBlockPairs) {
    const Shape& shape = kTokenBlockShapes[0];
    GemmSpec experts = fp8_spec(GG_OP_RAGGED_K, formats, shape, {3, 128, 127, 382});
    experts.pointer_array = true;
    experts.beta.value = 1.0f;
    run_and_check(experts, path(), stream());
    run_and_check(fp8_spec(GG_OP_RAGGED_K, formats, shape, {shape.m}), path(), stream());
    std::vector<int64_t> sizes(256, 0);
    for (size_t g = 0; g < sizes.size(); ++g) sizes[g] = static_cast<int64_t>(g * 37 % 131);
    GemmSpec many = fp8_spec(GG_OP_RAGGED_K, formats, shape, sizes);
    many.m = (sum_of(sizes) + 9 + 15) / 16 * 16;
    run_and_check(many, path(), stream());
    GemmSpec bad = fp8_spec(GG_OP_RAGGED_K, formats, shape, {-3, 600, 500, 7});
    bad.expected_flags = GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS;
    run_and_check(bad, path(), stream());
    expect_replays_correct(path(), stream(),
                           fp8_spec(GG_OP_RAGGED_K, formats, shape, {1, 0, 31, 33}),
                           {{0, 0, 384, 0}, {0, 0, 0, 0}, {17, 0, 1, 300}, {250, 250, 250, 250}});
  }
}

// One case of each pair and op: what scripts/sanitize.sh runs (its filter
// takes the "Small" cases) under memcheck, racecheck and synccheck.
// Weight gradients as G separate matrices (a pointer array, as frameworks
// that keep one parameter per expert hold them), accumulated into fp32.
TEST_P(Sm90Fp8, RaggedKPerExpertOutputs) {
  for (const FormatPair& formats : {kPairs[0], kPairs[2]}) {
    for (const Shape& shape : {kRaggedKShapes[1], kRaggedKShapes[2]}) {
      GemmSpec s = fp8_spec(GG_OP_RAGGED_K, formats, shape, shape.sizes.front().second);
      s.pointer_array = true;
      s.beta.value = 1.0f;
      run_and_check(s, path(), stream());
    }
  }
}

TEST_P(Sm90Fp8, SmallEveryFormatPair) {
  run_and_check(fp8_spec(GG_OP_RAGGED_M, {kE5m2Blocks1x128, kE4m3Blocks128x128},
                         kRaggedMShapes[1], {1, 0, 31, 200}),
                path(), stream());
  run_and_check(fp8_spec(GG_OP_RAGGED_K, kTokenBlockPairs[1], kTokenBlockShapes[0],
                         {16, 0, 131, 200, 7}),
                path(), stream());
  for (const FormatPair& formats : kPairs) {
    run_and_check(fp8_spec(GG_OP_RAGGED_M, formats, kRaggedMShapes[0], {1, 0, 31, 200}), path(),
                  stream());
    run_and_check(fp8_spec(GG_OP_RAGGED_K, formats, kRaggedKShapes[1], {1, 0, 31, 200}), path(),
                  stream());
  }
}

TEST_P(Sm90Fp8, OneGroupAnd256Groups) {
  for (gg_op op : {GG_OP_RAGGED_M, GG_OP_RAGGED_K}) {
    const Shape& shape = op == GG_OP_RAGGED_M ? kRaggedMShapes[1] : kRaggedKShapes[2];
    run_and_check(fp8_spec(op, kPairs[1], shape, {shape.m}), path(), stream());
    std::vector<int64_t> sizes(256, 0);
    for (size_t g = 0; g < sizes.size(); ++g) sizes[g] = static_cast<int64_t>(g * 7 % 5);
    GemmSpec s = fp8_spec(op, kPairs[1], shape, sizes);
    s.m = (sum_of(sizes) + 9 + 15) / 16 * 16;
    run_and_check(s, path(), stream());
  }
}

TEST_P(Sm90Fp8, BadSizesAreClampedAndFlagged) {
  for (gg_op op : {GG_OP_RAGGED_M, GG_OP_RAGGED_K}) {
    const Shape& shape = op == GG_OP_RAGGED_M ? kRaggedMShapes[0] : kRaggedKShapes[1];
    GemmSpec s = fp8_spec(op, kPairs[2], shape, {-3, 300, 500, 7});
    s.expected_flags = GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS;
    run_and_check(s, path(), stream());
  }
}

// Captured once, replayed after the sizes, codes and scales changed on the
// device: nothing about them may be learned at capture time.
TEST_P(Sm90Fp8, GraphReplaysWithChangedSizes) {
  const std::vector<std::vector<int64_t>> reroutes = {
      {0, 0, 384, 0}, {0, 0, 0, 0}, {17, 0, 1, 300}, {96, 96, 96, 96}};
  for (gg_op op : {GG_OP_RAGGED_M, GG_OP_RAGGED_K}) {
    const Shape& shape = op == GG_OP_RAGGED_M ? kRaggedMShapes[1] : kRaggedKShapes[1];
    for (const FormatPair& formats : {kPairs[0], kPairs[2]}) {
      expect_replays_correct(path(), stream(), fp8_spec(op, formats, shape, {1, 0, 31, 33}),
                             reroutes);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Sm90AndAuto, Sm90Fp8, ::testing::Values(GG_PATH_SM90, GG_PATH_AUTO),
                         ParamName());

class Sm90Fp8Refusal : public UnverifiedKernelsPathTest {};

// What the fp8 kernels cannot read is refused with GG_STATUS_NOT_SUPPORTED,
// naming why, never run: another pair of element types, an MN-major
// operand, rows not 16-byte aligned.
TEST_P(Sm90Fp8Refusal, NamesWhy) {
  struct Refused {
    GemmSpec spec;
    const char* named;
  };
  std::vector<Refused> cases;
  cases.push_back({fp8_spec(GG_OP_RAGGED_M, {kE4m3Tensor, kE5m2Tensor}, kRaggedMShapes[0], {9}),
                   "e4m3 x e4m3 and e5m2 x e4m3"});
  GemmSpec mn_major = fp8_spec(GG_OP_RAGGED_M, kPairs[0], kRaggedMShapes[0], {9});
  mn_major.rhs_layout = GG_LAYOUT_N;
  cases.push_back({mn_major, "rhs must be GG_LAYOUT_T"});
  GemmSpec tokens_as_rows = fp8_spec(GG_OP_RAGGED_K, kPairs[0], kRaggedKShapes[1], {9});
  tokens_as_rows.lhs_layout = GG_LAYOUT_N;
  cases.push_back({tokens_as_rows, "lhs and rhs must be GG_LAYOUT_T"});
  GemmSpec unaligned = fp8_spec(GG_OP_RAGGED_M, kPairs[0], kRaggedMShapes[0], {9});
  unaligned.k = 200;
  unaligned.padding = 4;  // rows of 204 bytes
  cases.push_back({unaligned, "16-byte aligned data and row strides"});
  for (const Refused& c : cases) {
    GemmCase gemm(c.spec, GG_PATH_SM90);
    SCOPED_TRACE(gemm.label());
    expect_refusal(gemm, gemm.run(stream()), c.named);
    // GG_PATH_AUTO runs it on the portable path.
    run_and_check(c.spec, GG_PATH_AUTO, stream());
  }
}

INSTANTIATE_TEST_SUITE_P(Sm90, Sm90Fp8Refusal, ::testing::Values(GG_PATH_SM90), ParamName());

}  // namespace
}  // namespace gg::test

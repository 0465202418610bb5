// Quantized operands on the GPU paths against the CPU reference: every format
// pair the portable path runs (fp8 with tensor, group or rowwise scales;
// mxfp8, mxfp4 and mixes; nvfp4; weight-only with bf16 activations), both
// ops, every operand layout, on edge sizes (0, 1, 31, 33, the 64-row tile
// +- 1, one hot group, all empty, G = 1, G = 256, sum < M, bad sizes), with
// random codes and scales, poisoned rows outside the groups and guard bands
// (GemmCase). GG_PATH_AUTO takes the portable path for them, or the sm90
// path for the fp8 pairs and the decoded ragged-M products it runs
// (tests/gpu/sm90_fp8_test.cpp, sm90_decoded_test.cpp); what a path does
// not run is refused, naming the formats.
// The suite sets GROUPGEMM_UNVERIFIED_KERNELS=1: it is what verifies the
// kernels that do not yet answer users (kernels/verified_kernels.h).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "gpu/captured_gemm.h"
#include "gpu/gemm_case.h"
#include "gpu/path_test.h"
#include "gpu/quantized_specs.h"
#include "gpu/routing.h"

namespace gg::test {
namespace {


const std::vector<FormatPair> kRaggedMPairs = {
    {kE4m3Tensor, kE4m3Group}, {kE4m3Rowwise, kE5m2Rowwise}, {kMxE4m3, kMxE5m2},
    {kMxfp4, kMxfp4},          {kMxE4m3, kMxfp4},            {kNvfp4Tensor, kNvfp4Group},
    {std::nullopt, kMxE4m3},   {std::nullopt, kNvfp4Group},  {std::nullopt, kE5m2Rowwise},
    {std::nullopt, kE4m3Tensor}, {std::nullopt, kMxfp4}};

const std::vector<FormatPair> kRaggedKPairs = {
    {kE4m3Tensor, kE5m2Tensor}, {kE4m3Group, kE4m3Group}, {kE4m3Rowwise, kE5m2Rowwise},
    {kMxE4m3, kMxE5m2},         {kMxfp4, kMxfp4},         {kNvfp4Group, kNvfp4Tensor}};

// Group sizes over 100 rows (ragged-M) or 96 tokens (ragged-K).
const std::vector<std::pair<std::string, std::vector<int64_t>>> kSizes = {
    {"edges", {0, 1, 31, 33, 0}},  // sum 65 < M, unaligned starts
    {"tile_minus_1", {63, 0, 33, 0}},
    {"tile_plus_1", {0, 65, 31, 0}},
    {"one_hot", {0, 0, 96, 0}},
    {"all_empty", {0, 0, 0, 0}},
    {"one_group", {77}},
};

GemmSpec quantized_spec(gg_op op, const FormatPair& formats, gg_layout lhs_layout,
                        gg_layout rhs_layout, std::vector<int64_t> sizes) {
  GemmSpec s;
  s.op = op;
  s.lhs_format = formats.lhs;
  s.rhs_format = formats.rhs;
  s.input = GG_DTYPE_BF16;
  s.out = GG_DTYPE_FP32;
  s.lhs_layout = lhs_layout;
  s.rhs_layout = rhs_layout;
  // Rows of 16 bytes for every layout: K, N multiples of 32 elements (e2m1
  // two per byte) in ragged-M; M, P and Q in ragged-K.
  if (op == GG_OP_RAGGED_M) {
    s.m = 100, s.k = 96, s.n = 64;
  } else {
    s.m = 96, s.k = 64, s.n = 32;
  }
  s.sizes = std::move(sizes);
  s.name = pair_label(formats);
  return s;
}

class Quantized : public UnverifiedKernelsPathTest {};

TEST_P(Quantized, RaggedMEveryFormatLayoutAndEdgeSize) {
  for (const FormatPair& formats : kRaggedMPairs) {
    for (gg_layout rhs_layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      for (const auto& [name, sizes] : kSizes) {
        SCOPED_TRACE(name);
        GemmSpec s = quantized_spec(GG_OP_RAGGED_M, formats, GG_LAYOUT_N, rhs_layout, sizes);
        s.alpha.per_group.assign(sizes.size(), 0.0f);
        for (size_t g = 0; g < sizes.size(); ++g) {
          s.alpha.per_group[g] = 0.5f + 0.25f * static_cast<float>(g);
        }
        run_and_check(s, path(), stream());
      }
    }
  }
}

TEST_P(Quantized, RaggedMBiasBetaAndBf16Output) {
  for (const FormatPair& formats :
       {FormatPair{kMxE4m3, kMxE4m3}, FormatPair{kNvfp4Tensor, kNvfp4Group}}) {
    GemmSpec s = quantized_spec(GG_OP_RAGGED_M, formats, GG_LAYOUT_N, GG_LAYOUT_T,
                                {5, 0, 40, 17});
    s.out = GG_DTYPE_BF16;
    s.bias = GG_DTYPE_BF16;
    s.beta.value = 0.5f;
    run_and_check(s, path(), stream());
  }
}

TEST_P(Quantized, RaggedKEveryFormatLayoutAndEdgeSize) {
  for (const FormatPair& formats : kRaggedKPairs) {
    for (gg_layout lhs_layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      for (gg_layout rhs_layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
        for (const auto& [name, sizes] : kSizes) {
          SCOPED_TRACE(name);
          GemmSpec s = quantized_spec(GG_OP_RAGGED_K, formats, lhs_layout, rhs_layout, sizes);
          // wgrad accumulating into an fp32 main grad.
          s.beta.value = 1.0f;
          run_and_check(s, path(), stream());
        }
      }
    }
  }
}

// Weights as G separate matrices (a pointer array, their block scales
// too), for every ragged-M pair and both weight layouts.
TEST_P(Quantized, RaggedMPerExpertWeights) {
  for (const FormatPair& formats : kRaggedMPairs) {
    for (gg_layout rhs_layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      GemmSpec s = quantized_spec(GG_OP_RAGGED_M, formats, GG_LAYOUT_N, rhs_layout,
                                  {0, 1, 31, 33, 0});
      s.pointer_array = true;
      run_and_check(s, path(), stream());
    }
  }
}

// Weight gradients as G separate matrices (a pointer array), for every
// ragged-K pair (the portable path, and whichever path auto takes).
TEST_P(Quantized, RaggedKPerExpertOutputs) {
  for (const FormatPair& formats : kRaggedKPairs) {
    GemmSpec s = quantized_spec(GG_OP_RAGGED_K, formats, GG_LAYOUT_T, GG_LAYOUT_T,
                                {0, 1, 31, 33, 0});
    s.pointer_array = true;
    s.beta.value = 1.0f;
    run_and_check(s, path(), stream());
  }
}

// One case of each format pair and op: what scripts/sanitize.sh runs
// (its filter takes the "Small" cases) under memcheck, racecheck and synccheck.
TEST_P(Quantized, SmallEveryFormatPair) {
  for (const FormatPair& formats : kRaggedMPairs) {
    run_and_check(quantized_spec(GG_OP_RAGGED_M, formats, GG_LAYOUT_N, GG_LAYOUT_N, {1, 0, 31, 33}),
                  path(), stream());
  }
  for (const FormatPair& formats : kRaggedKPairs) {
    run_and_check(quantized_spec(GG_OP_RAGGED_K, formats, GG_LAYOUT_T, GG_LAYOUT_N, {1, 0, 31, 33}),
                  path(), stream());
  }
}

TEST_P(Quantized, Groups256) {
  std::vector<int64_t> sizes(256, 0);
  for (size_t g = 0; g < sizes.size(); ++g) sizes[g] = static_cast<int64_t>(g * 7 % 5);
  for (const FormatPair& formats :
       {FormatPair{kMxE4m3, kMxfp4}, FormatPair{kNvfp4Group, kNvfp4Group}}) {
    GemmSpec m = quantized_spec(GG_OP_RAGGED_M, formats, GG_LAYOUT_N, GG_LAYOUT_T, sizes);
    m.m = sum_of(sizes) + 9;
    run_and_check(m, path(), stream());
    GemmSpec k = quantized_spec(GG_OP_RAGGED_K, formats, GG_LAYOUT_T, GG_LAYOUT_T, sizes);
    k.m = (sum_of(sizes) + 31) / 32 * 32;
    run_and_check(k, path(), stream());
  }
}

TEST_P(Quantized, BadSizesAreClampedAndFlagged) {
  for (gg_op op : {GG_OP_RAGGED_M, GG_OP_RAGGED_K}) {
    GemmSpec s =
        quantized_spec(op, {kMxE4m3, kMxE4m3}, GG_LAYOUT_N, GG_LAYOUT_N, {-3, 40, 90, 7});
    s.expected_flags = GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS;
    run_and_check(s, path(), stream());
  }
}

// Captured once, replayed after the sizes, codes and scales changed on the
// device: nothing about them may be learned at capture time.
TEST_P(Quantized, GraphReplaysWithChangedSizes) {
  const std::vector<std::vector<int64_t>> reroutes = {
      {0, 0, 96, 0}, {0, 0, 0, 0}, {17, 0, 1, 70}, {24, 24, 24, 24}};
  for (gg_op op : {GG_OP_RAGGED_M, GG_OP_RAGGED_K}) {
    for (const FormatPair& formats :
         {FormatPair{kMxE4m3, kMxE5m2}, FormatPair{kNvfp4Group, kNvfp4Group},
          FormatPair{kE4m3Rowwise, kE4m3Rowwise}}) {
      expect_replays_correct(
          path(), stream(),
          quantized_spec(op, formats, GG_LAYOUT_N, GG_LAYOUT_T, {1, 0, 31, 33}), reroutes);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(PortableAndAuto, Quantized,
                         ::testing::Values(GG_PATH_PORTABLE, GG_PATH_AUTO), ParamName());

class QuantizedRefusal : public PathTest<gg_path> {};

// What a path does not run is refused with GG_STATUS_NOT_SUPPORTED and a
// message naming the formats, never run: the sm90 path takes MX blocks in
// the weight gradient only from columnwise copies (GG_LAYOUT_T), the
// portable path no fp8 1x128 / 128x128 blocks, and no path the weight
// gradient's 1x128 x 1x128 of e4m3 x e5m2 (GG_PATH_REFERENCE computes it).
TEST_P(QuantizedRefusal, NamesTheFormats) {
  const QuantizeFormatSpec blocks_1x128{GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE};
  const QuantizeFormatSpec blocks_128x128{GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE};
  // e4m3 x e5m2 has no sm90 fp8 instance, and the portable path no blocks.
  const QuantizeFormatSpec e5m2_blocks_1x128{GG_DTYPE_E5M2, GG_BLOCK_1X128, GG_SCALE_NONE};
  struct Refused {
    gg_op op;
    FormatPair formats;
    gg_layout layout;  // of both ragged-K operands
  };
  const Refused refused =
      path() == GG_PATH_SM90 ? Refused{GG_OP_RAGGED_K, {kMxE4m3, kMxE4m3}, GG_LAYOUT_N}
      : path() == GG_PATH_PORTABLE
          ? Refused{GG_OP_RAGGED_M, {blocks_1x128, blocks_128x128}, GG_LAYOUT_T}
          : Refused{GG_OP_RAGGED_K, {blocks_1x128, e5m2_blocks_1x128}, GG_LAYOUT_T};
  GemmSpec s = quantized_spec(refused.op, refused.formats, refused.layout, refused.layout,
                              {10, 20});
  if (refused.op == GG_OP_RAGGED_M) {
    s.lhs_layout = GG_LAYOUT_N;
    s.k = 256;
  }
  GemmCase gemm(s, path());
  SCOPED_TRACE(gemm.label());
  expect_refusal(gemm, gemm.run(stream()), "e4m3");
}

INSTANTIATE_TEST_SUITE_P(EveryPath, QuantizedRefusal,
                         ::testing::Values(GG_PATH_PORTABLE, GG_PATH_SM90, GG_PATH_AUTO),
                         ParamName());

}  // namespace
}  // namespace gg::test

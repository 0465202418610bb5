// The reference grouped GEMM on scaled formats: fp8 with per-tensor and
// per-group scales, fp8 with 1x128 / 128x128 and rowwise fp32 block scales,
// mxfp8, mxfp4 and their mixes, nvfp4, and weight-only products (bf16 / fp16
// lhs, quantized rhs), on both ops, every layout and pointer arrays, and on
// edge group sizes. Block-scale positions
// are recomputed in gemm_case.cpp from the layout rules, including the
// token blocks that restart at every group start in ragged-K. kWindow cases
// must match the model bit for bit; kFull cases draw every finite element
// code (subnormals included) and full-precision scales.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "gemm_case.h"

namespace gg::test {
namespace {

struct Recipe {
  const char* name;
  OperandFormat lhs, rhs;
  bool ragged_k;  // 128x128 and weight-only (16-bit x quantized) are ragged-M only
};

const std::vector<Recipe>& recipes() {
  static const std::vector<Recipe> all = {
      {"fp8_e4m3_tensor",
       {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR},
       {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR},
       true},
      {"fp8_e5m2_group",
       {GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_GROUP},
       {GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_GROUP},
       true},
      {"fp8_e4m3_x_e5m2",
       {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR},
       {GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_GROUP},
       true},
      {"fp8_1x128",
       {GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE},
       {GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE},
       true},
      {"fp8_1x128_x_128x128",
       {GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE},
       {GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE},
       false},
      {"mxfp8_e4m3",
       {GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE},
       {GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE},
       true},
      {"mxfp8_e5m2",
       {GG_DTYPE_E5M2, GG_BLOCK_MX32, GG_SCALE_NONE},
       {GG_DTYPE_E5M2, GG_BLOCK_MX32, GG_SCALE_NONE},
       true},
      {"nvfp4_tensor",
       {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR},
       {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR},
       true},
      {"nvfp4_group",
       {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP},
       {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP},
       true},
      {"fp8_rowwise_e4m3",
       {GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE},
       {GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE},
       true},
      {"fp8_rowwise_e5m2_x_e4m3",
       {GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, GG_SCALE_NONE},
       {GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE},
       true},
      {"mxfp4",
       {GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE},
       {GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE},
       true},
      {"mxfp8_e4m3_x_mxfp4",
       {GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE},
       {GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE},
       true},
      {"mxfp4_x_mxfp8_e5m2",
       {GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE},
       {GG_DTYPE_E5M2, GG_BLOCK_MX32, GG_SCALE_NONE},
       true},
      // Weight-only: 16-bit activations times quantized weights, ragged-M.
      {"bf16_x_fp8_e4m3_tensor",
       {GG_DTYPE_BF16},
       {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR},
       false},
      {"fp16_x_fp8_e5m2_group",
       {GG_DTYPE_FP16},
       {GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_GROUP},
       false},
      {"bf16_x_fp8_rowwise",
       {GG_DTYPE_BF16},
       {GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE},
       false},
      {"bf16_x_mxfp8_e4m3", {GG_DTYPE_BF16}, {GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE}, false},
      {"bf16_x_mxfp4", {GG_DTYPE_BF16}, {GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE}, false},
      {"fp16_x_nvfp4_group",
       {GG_DTYPE_FP16},
       {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP},
       false},
  };
  return all;
}

// Layout variants: ragged-M (rhs N/T x stacked/pointers) and ragged-K
// (lhs N/T x rhs N/T x stacked/pointer output).
struct Variant {
  gg_op op;
  gg_layout lhs_layout, rhs_layout;
  bool pointer_array;
};

std::vector<Variant> variants() {
  std::vector<Variant> all;
  for (gg_layout rhs : {GG_LAYOUT_N, GG_LAYOUT_T})
    for (bool pointers : {false, true}) all.push_back({GG_OP_RAGGED_M, GG_LAYOUT_N, rhs, pointers});
  for (gg_layout lhs : {GG_LAYOUT_N, GG_LAYOUT_T})
    for (gg_layout rhs : {GG_LAYOUT_N, GG_LAYOUT_T})
      for (bool pointers : {false, true}) all.push_back({GG_OP_RAGGED_K, lhs, rhs, pointers});
  return all;
}

using Param = std::tuple<size_t, size_t, CodeRange>;  // recipe, variant, range
class ScaledGemm : public ::testing::TestWithParam<Param> {};

// Every recipe on every variant it applies to, in both code ranges.
std::vector<Param> params() {
  std::vector<Param> all;
  for (size_t r = 0; r < recipes().size(); ++r)
    for (size_t v = 0; v < variants().size(); ++v)
      if (variants()[v].op == GG_OP_RAGGED_M || recipes()[r].ragged_k)
        for (CodeRange range : {CodeRange::kWindow, CodeRange::kFull})
          all.emplace_back(r, v, range);
  return all;
}

std::string param_name(const ::testing::TestParamInfo<Param>& param_info) {
  const auto& [recipe, variant, range] = param_info.param;
  const Variant v = variants()[variant];
  std::string name = std::string(recipes()[recipe].name) + "_";
  if (v.op == GG_OP_RAGGED_M) {
    name += v.rhs_layout == GG_LAYOUT_N ? "raggedM_KN" : "raggedM_NK";
  } else {
    name += std::string("raggedK_lhs") + (v.lhs_layout == GG_LAYOUT_N ? "N" : "T") + "_rhs" +
            (v.rhs_layout == GG_LAYOUT_N ? "N" : "T");
  }
  name += v.pointer_array ? "_pointers" : "_stacked";
  return name + (range == CodeRange::kWindow ? "_exact" : "_full");
}

TEST_P(ScaledGemm, MatchesModel) {
  const auto& [recipe_index, variant_index, range] = GetParam();
  const Recipe& recipe = recipes()[recipe_index];
  const Variant v = variants()[variant_index];
  GemmSetup s;
  s.op = v.op;
  s.lhs = recipe.lhs;
  s.rhs = recipe.rhs;
  s.lhs.range = s.rhs.range = range;
  s.lhs_layout = v.lhs_layout;
  s.rhs_layout = v.rhs_layout;
  s.pointer_array = v.pointer_array;
  s.out_dtype = GG_DTYPE_FP32;
  s.alpha = 0.75f;
  s.seed =
      static_cast<uint32_t>(recipe_index * 1000 + variant_index * 10 + (range == CodeRange::kFull));
  if (v.op == GG_OP_RAGGED_M) {
    // K = 300: three 128-blocks (the last partial), ten 32-blocks (last partial).
    s.m = 72;
    s.n = 136;  // two 128-blocks of N for 128x128 weights, the second partial
    s.k = 300;
    s.sizes = {20, 0, 33, 1, 10};
  } else {
    // Token blocks restart per group: sizes straddle 16 / 32 / 128 boundaries.
    s.m = 420;
    s.p = 16;
    s.q = 24;
    s.sizes = {130, 0, 129, 1, 33, 17, 90};
  }
  GemmCase c(s);
  EXPECT_EQ(c.run(), 0u);
  c.check();
}

INSTANTIATE_TEST_SUITE_P(Formats, ScaledGemm, ::testing::ValuesIn(params()), param_name);

// Every recipe on edge sizes: groups of 0, 1, 31 and 33 rows with rows
// left past the last group, all tokens in one group, every group empty.
// A contraction of 66 ends in a partial block of every block size.
using EdgeParam = std::tuple<size_t, size_t, size_t>;  // recipe, variant, sizes
class ScaledGemmEdges : public ::testing::TestWithParam<EdgeParam> {};

const std::vector<std::vector<int64_t>>& edge_sizes() {
  static const std::vector<std::vector<int64_t>> all = {
      {0, 1, 31, 33}, {70}, {0, 0, 0}, {33, 31, 1, 0, 5}};
  return all;
}

std::vector<EdgeParam> edge_params() {
  std::vector<EdgeParam> all;
  for (size_t r = 0; r < recipes().size(); ++r)
    for (size_t v = 0; v < variants().size(); ++v)
      if (!variants()[v].pointer_array &&
          (variants()[v].op == GG_OP_RAGGED_M || recipes()[r].ragged_k))
        for (size_t sizes = 0; sizes < edge_sizes().size(); ++sizes) all.emplace_back(r, v, sizes);
  return all;
}

std::string edge_param_name(const ::testing::TestParamInfo<EdgeParam>& param_info) {
  const auto& [recipe, variant, sizes] = param_info.param;
  const Param named{recipe, variant, CodeRange::kWindow};
  return param_name({named, param_info.index}) + "_sizes" + std::to_string(sizes);
}

TEST_P(ScaledGemmEdges, MatchesModel) {
  const auto& [recipe_index, variant_index, sizes_index] = GetParam();
  const Recipe& recipe = recipes()[recipe_index];
  const Variant v = variants()[variant_index];
  GemmSetup s;
  s.op = v.op;
  s.lhs = recipe.lhs;
  s.rhs = recipe.rhs;
  s.lhs_layout = v.lhs_layout;
  s.rhs_layout = v.rhs_layout;
  s.out_dtype = GG_DTYPE_BF16;
  s.m = 70;
  s.n = 10;
  s.k = 66;
  s.p = 6;
  s.q = 4;
  s.sizes = edge_sizes()[sizes_index];
  s.seed = static_cast<uint32_t>(recipe_index * 1000 + variant_index * 10 + sizes_index);
  GemmCase c(s);
  EXPECT_EQ(c.run(), 0u);
  c.check();
}

INSTANTIATE_TEST_SUITE_P(Formats, ScaledGemmEdges, ::testing::ValuesIn(edge_params()),
                         edge_param_name);

TEST(ScaledGemmValues, RowwiseScalesApplyPerRowAndPerGroup) {
  // Ragged-K, both operands fp8 rowwise along the tokens: every element 1,
  // lhs scale of (group g, row p) 2^g and rhs scales 1, so out[g](p, q) is
  // size_g * 2^g exactly.
  GemmSetup s;
  s.op = GG_OP_RAGGED_K;
  s.lhs = {GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE};
  s.rhs = {GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE};
  s.m = 12;
  s.p = 2;
  s.q = 3;
  s.sizes = {5, 0, 7};
  GemmCase c(s);
  c.lhs.fill_code(0x38);  // e4m3 1.0
  c.rhs.fill_code(0x38);
  for (int32_t g = 0; g < 3; ++g) {
    for (int64_t p = 0; p < 2; ++p)
      c.lhs.set_scale_code(0, g, p, 0x3F800000u + (static_cast<uint32_t>(g) << 23));
    for (int64_t q = 0; q < 3; ++q) c.rhs.set_scale_code(0, g, q, 0x3F800000u);
  }
  c.run();
  c.check();
  EXPECT_EQ(c.out.value(0, 1, 2), 5.0L);
  EXPECT_EQ(c.out.value(1, 0, 0), 0.0L);
  EXPECT_EQ(c.out.value(2, 1, 1), 28.0L);
}

TEST(ScaledGemmValues, MxScalesApplyPerBlockOfThirtyTwo) {
  // Every element 1.0 and block j's scale 2^j: an output of group 0 is
  // alpha * sum over blocks of 32 * 2^j * (rhs scale 1), exactly.
  GemmSetup s;
  s.op = GG_OP_RAGGED_M;
  s.lhs = {GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE};
  s.rhs = {GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE};
  s.m = 4;
  s.n = 8;
  s.k = 96;
  s.sizes = {4};
  GemmCase c(s);
  c.lhs.fill_code(0x38);  // e4m3 1.0
  c.rhs.fill_code(0x38);
  for (int64_t row = 0; row < 4; ++row)
    for (int64_t j = 0; j < 3; ++j) c.lhs.set_scale_code(0, row, j, static_cast<uint32_t>(127 + j));
  for (int64_t j = 0; j < 3; ++j)
    for (int64_t col = 0; col < 8; ++col) c.rhs.set_scale_code(0, j, col, 127);
  c.run();
  c.check();
  EXPECT_EQ(c.out.value(0, 3, 7), 32.0L * (1 + 2 + 4));
}

}  // namespace
}  // namespace gg::test

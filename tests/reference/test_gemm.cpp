// The reference grouped GEMM on bf16 / fp16 / fp32 operands against the
// naive model of gemm_case.h: every op and layout, pointer arrays, the
// epilogue's alpha / beta / bias, and the group-size edge cases (empty
// groups, rows past the last group, bad sizes and offsets).
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "api/names.h"
#include "gemm_case.h"

namespace gg::test {
namespace {

GemmSetup ragged_m_setup(gg_dtype in, gg_dtype out_dtype) {
  GemmSetup s;
  s.op = GG_OP_RAGGED_M;
  s.m = 40;
  s.n = 24;
  s.k = 40;
  s.sizes = {5, 0, 17, 9};  // 31 of 40 rows: rows 31..39 stay untouched
  s.lhs.dtype = in;
  s.rhs.dtype = in;
  s.out_dtype = out_dtype;
  s.alpha = 0.75f;
  return s;
}

GemmSetup ragged_k_setup(gg_dtype in, gg_dtype out_dtype) {
  GemmSetup s;
  s.op = GG_OP_RAGGED_K;
  s.m = 26;
  s.p = 16;
  s.q = 24;
  s.sizes = {7, 0, 12, 3};
  s.lhs.dtype = in;
  s.rhs.dtype = in;
  s.out_dtype = out_dtype;
  s.alpha = -1.5f;
  return s;
}

const std::vector<gg_dtype> kPlain = {GG_DTYPE_BF16, GG_DTYPE_FP16, GG_DTYPE_FP32};

// ---- ragged-M: input dtype x output dtype x rhs layout x pointer array ----

using RaggedMParam = std::tuple<gg_dtype, gg_dtype, gg_layout, bool>;
class RaggedMPlain : public ::testing::TestWithParam<RaggedMParam> {};

std::string ragged_m_name(const ::testing::TestParamInfo<RaggedMParam>& param_info) {
  const auto& [in, out_dtype, layout, pointer_array] = param_info.param;
  return std::string(api::dtype_name(in)) + "_to_" + api::dtype_name(out_dtype) +
         (layout == GG_LAYOUT_N ? "_KN" : "_NK") + (pointer_array ? "_pointers" : "_stacked");
}

TEST_P(RaggedMPlain, MatchesModelExactly) {
  auto [in, out_dtype, layout, pointer_array] = GetParam();
  GemmSetup s = ragged_m_setup(in, out_dtype);
  s.rhs_layout = layout;
  s.pointer_array = pointer_array;
  s.seed = static_cast<uint32_t>(in * 100 + out_dtype * 10 + layout * 2 + pointer_array);
  GemmCase c(s);
  EXPECT_EQ(c.run(), 0u);
  EXPECT_EQ(c.check(), 31 * 24);
}

INSTANTIATE_TEST_SUITE_P(Formats, RaggedMPlain,
                         ::testing::Combine(::testing::ValuesIn(kPlain),
                                            ::testing::ValuesIn(kPlain),
                                            ::testing::Values(GG_LAYOUT_N, GG_LAYOUT_T),
                                            ::testing::Bool()),
                         ragged_m_name);

// ---- ragged-K: input dtype x output dtype x lhs / rhs layouts x pointer array ----

using RaggedKParam = std::tuple<gg_dtype, gg_dtype, gg_layout, gg_layout, bool>;
class RaggedKPlain : public ::testing::TestWithParam<RaggedKParam> {};

std::string ragged_k_name(const ::testing::TestParamInfo<RaggedKParam>& param_info) {
  const auto& [in, out_dtype, lhs_layout, rhs_layout, pointer_array] = param_info.param;
  return std::string(api::dtype_name(in)) + "_to_" + api::dtype_name(out_dtype) +
         (lhs_layout == GG_LAYOUT_N ? "_lhsN" : "_lhsT") +
         (rhs_layout == GG_LAYOUT_N ? "_rhsN" : "_rhsT") +
         (pointer_array ? "_pointers" : "_stacked");
}

TEST_P(RaggedKPlain, MatchesModelExactly) {
  auto [in, out_dtype, lhs_layout, rhs_layout, pointer_array] = GetParam();
  GemmSetup s = ragged_k_setup(in, out_dtype);
  s.lhs_layout = lhs_layout;
  s.rhs_layout = rhs_layout;
  s.pointer_array = pointer_array;
  s.seed = static_cast<uint32_t>(in * 100 + out_dtype * 20 + lhs_layout * 4 + rhs_layout * 2 +
                                 pointer_array);
  GemmCase c(s);
  EXPECT_EQ(c.run(), 0u);
  EXPECT_EQ(c.check(), 4 * 16 * 24);
}

INSTANTIATE_TEST_SUITE_P(Formats, RaggedKPlain,
                         ::testing::Combine(::testing::ValuesIn(kPlain),
                                            ::testing::ValuesIn(kPlain),
                                            ::testing::Values(GG_LAYOUT_N, GG_LAYOUT_T),
                                            ::testing::Values(GG_LAYOUT_N, GG_LAYOUT_T),
                                            ::testing::Bool()),
                         ragged_k_name);

// ---- epilogue ----

TEST(ReferenceGemm, RaggedMLhsStoredTransposed) {
  GemmSetup s = ragged_m_setup(GG_DTYPE_BF16, GG_DTYPE_FP32);
  s.lhs_layout = GG_LAYOUT_T;
  GemmCase c(s);
  c.run();
  c.check();
}

TEST(ReferenceGemm, BetaAccumulatesIntoFp32) {
  for (gg_op op : {GG_OP_RAGGED_M, GG_OP_RAGGED_K}) {
    GemmSetup s = op == GG_OP_RAGGED_M ? ragged_m_setup(GG_DTYPE_BF16, GG_DTYPE_FP32)
                                       : ragged_k_setup(GG_DTYPE_BF16, GG_DTYPE_FP32);
    s.alpha = 1.0f;
    s.beta = 1.0f;
    s.poison_out = false;
    GemmCase c(s);
    c.run();
    c.check();
  }
}

TEST(ReferenceGemm, HostAlphaBetaOnEveryOutputType) {
  for (gg_dtype out_dtype : kPlain) {
    GemmSetup s = ragged_m_setup(GG_DTYPE_FP16, out_dtype);
    s.alpha = -2.0f;
    s.beta = 1.5f;
    s.poison_out = false;
    GemmCase c(s);
    c.run();
    c.check();
  }
}

TEST(ReferenceGemm, PerGroupAlphaAndBetaWithZeroBetaNeverReadingOut) {
  // Outputs are NaN: groups with beta 0 must still come out finite and exact,
  // groups with beta != 0 read the NaN (the model expects NaN there).
  for (gg_op op : {GG_OP_RAGGED_M, GG_OP_RAGGED_K}) {
    GemmSetup s = op == GG_OP_RAGGED_M ? ragged_m_setup(GG_DTYPE_BF16, GG_DTYPE_BF16)
                                       : ragged_k_setup(GG_DTYPE_BF16, GG_DTYPE_BF16);
    s.alpha_per_group = {0.5f, 1.0f, -0.75f, 2.0f};
    s.beta_per_group = {0.0f, 1.5f, 0.0f, 0.0f};
    s.beta = 1.0f;  // ignored: the per-group array wins
    GemmCase c(s);
    c.run();
    c.check();
  }
}

TEST(ReferenceGemm, PerGroupBetaOnFreshOutput) {
  GemmSetup s = ragged_k_setup(GG_DTYPE_FP16, GG_DTYPE_FP32);
  s.beta_per_group = {1.0f, -0.5f, 0.0f, 2.0f};
  s.poison_out = false;
  GemmCase c(s);
  c.run();
  c.check();
}

TEST(ReferenceGemm, BiasInEveryDtype) {
  for (gg_dtype bias_dtype : kPlain) {
    for (gg_dtype out_dtype : kPlain) {
      GemmSetup s = ragged_m_setup(GG_DTYPE_BF16, out_dtype);
      s.bias = true;
      s.bias_dtype = bias_dtype;
      s.beta = 0.5f;
      s.poison_out = false;
      GemmCase c(s);
      c.run();
      c.check();
    }
  }
}

// ---- group sizes ----

TEST(ReferenceGemm, RaggedMAllGroupsEmptyWritesNothing) {
  GemmSetup s = ragged_m_setup(GG_DTYPE_BF16, GG_DTYPE_BF16);
  s.sizes = {0, 0, 0, 0};
  s.bias = true;
  GemmCase c(s);
  EXPECT_EQ(c.run(), 0u);
  EXPECT_EQ(c.check(), 0);
}

TEST(ReferenceGemm, RaggedKAllGroupsEmptyWritesBetaTimesOut) {
  // beta 0 on a NaN output: zeros. beta 2: twice the old values.
  for (float beta : {0.0f, 2.0f}) {
    GemmSetup s = ragged_k_setup(GG_DTYPE_BF16, GG_DTYPE_FP32);
    s.sizes = {0, 0, 0, 0};
    s.beta = beta;
    s.poison_out = beta == 0.0f;
    GemmCase c(s);
    EXPECT_EQ(c.run(), 0u);
    EXPECT_EQ(c.check(), 4 * 16 * 24);
    if (beta == 0.0f) {
      EXPECT_EQ(c.out.value(3, 15, 23), 0.0L);
    }
  }
}

TEST(ReferenceGemm, GroupsOfOneAndOneHotGroup) {
  for (const std::vector<int64_t>& sizes :
       {std::vector<int64_t>{1, 1, 1, 1}, std::vector<int64_t>{0, 40, 0, 0},
        std::vector<int64_t>{40, 0, 0, 0}, std::vector<int64_t>{0, 0, 0, 40}}) {
    GemmSetup s = ragged_m_setup(GG_DTYPE_BF16, GG_DTYPE_BF16);
    s.sizes = sizes;
    GemmCase c(s);
    EXPECT_EQ(c.run(), 0u);
    c.check();
    GemmSetup k = ragged_k_setup(GG_DTYPE_FP16, GG_DTYPE_FP16);
    k.m = 40;
    k.sizes = sizes;
    GemmCase ck(k);
    EXPECT_EQ(ck.run(), 0u);
    ck.check();
  }
}

TEST(ReferenceGemm, ModelClampsBadSizes) {
  // The test's own clamping rule, spelled out on one case.
  const std::vector<ModelGroup> groups = model_groups({5, -3, 20, 30, 4}, {}, 40);
  const std::vector<std::pair<int64_t, int64_t>> want = {
      {0, 5}, {5, 0}, {5, 20}, {25, 15}, {40, 0}};
  ASSERT_EQ(groups.size(), want.size());
  for (size_t g = 0; g < want.size(); ++g) {
    EXPECT_EQ(groups[g].start, want[g].first) << g;
    EXPECT_EQ(groups[g].size, want[g].second) << g;
  }
}

TEST(ReferenceGemm, NegativeAndOverflowingSizesAreClampedAndFlagged) {
  for (gg_index_type type : {GG_INDEX_INT32, GG_INDEX_INT64}) {
    GemmSetup s = ragged_m_setup(GG_DTYPE_BF16, GG_DTYPE_FP32);
    s.sizes = {5, -3, 20, 30};  // rows [0,5), [5,5), [5,25), [25,40): 30 cut to 15
    s.index_type = type;
    GemmCase c(s);
    EXPECT_EQ(c.run(), GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS);
    EXPECT_EQ(c.check(), 40 * 24);

    GemmSetup k = ragged_k_setup(GG_DTYPE_BF16, GG_DTYPE_FP32);
    k.sizes = {-1, 10, 100, 2};  // [0,0), [0,10), [10,26), [26,26)
    k.index_type = type;
    GemmCase ck(k);
    EXPECT_EQ(ck.run(), GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS);
    ck.check();
  }
}

TEST(ReferenceGemm, SizesBeyondInt32RangeInInt64) {
  GemmSetup s = ragged_m_setup(GG_DTYPE_BF16, GG_DTYPE_FP32);
  s.sizes = {3, int64_t{1} << 40, 2, -(int64_t{1} << 40)};
  s.index_type = GG_INDEX_INT64;
  GemmCase c(s);
  EXPECT_EQ(c.run(), GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS);
  EXPECT_EQ(c.check(), 40 * 24);
}

TEST(ReferenceGemm, ExplicitOffsets) {
  // Groups out of order with gaps: rows in the gaps stay untouched.
  for (gg_op op : {GG_OP_RAGGED_M, GG_OP_RAGGED_K}) {
    GemmSetup s = op == GG_OP_RAGGED_M ? ragged_m_setup(GG_DTYPE_BF16, GG_DTYPE_BF16)
                                       : ragged_k_setup(GG_DTYPE_BF16, GG_DTYPE_BF16);
    s.sizes = {6, 0, 5, 3};
    s.offsets = {18, 3, 2, 9};
    GemmCase c(s);
    EXPECT_EQ(c.run(), 0u);
    const int64_t written = c.check();
    if (op == GG_OP_RAGGED_M) {
      EXPECT_EQ(written, 14 * 24);
    }
  }
}

TEST(ReferenceGemm, OffsetsOutOfRangeAreClampedAndFlagged) {
  GemmSetup s = ragged_m_setup(GG_DTYPE_BF16, GG_DTYPE_FP32);
  s.sizes = {4, 3, 2, 50};
  s.offsets = {-7, 45, 10, 30};  // [0,4), [40,40), [10,12), [30,40)
  GemmCase c(s);
  EXPECT_EQ(c.run(), GG_DEVICE_OFFSET_OUT_OF_RANGE | GG_DEVICE_SIZES_EXCEED_ROWS);
  EXPECT_EQ(c.check(), 16 * 24);
}

TEST(ReferenceGemm, ManyGroupsWithRandomSizes) {
  std::mt19937 rng(7);
  GemmSetup s = ragged_m_setup(GG_DTYPE_BF16, GG_DTYPE_BF16);
  GemmSetup k = ragged_k_setup(GG_DTYPE_FP16, GG_DTYPE_FP32);
  s.m = k.m = 300;
  s.sizes.clear();
  for (int g = 0; g < 48; ++g) {
    const int r = std::uniform_int_distribution<int>(0, 9)(rng);
    s.sizes.push_back(r < 3 ? 0 : r);  // about a third empty
  }
  k.sizes = s.sizes;
  k.p = 8;
  k.q = 8;
  GemmCase c(s);
  EXPECT_EQ(c.run(), 0u);
  c.check();
  GemmCase ck(k);
  EXPECT_EQ(ck.run(), 0u);
  ck.check();
}

// ---- values ----

TEST(ReferenceGemm, FullRangeFp32Operands) {
  for (gg_op op : {GG_OP_RAGGED_M, GG_OP_RAGGED_K}) {
    GemmSetup s = op == GG_OP_RAGGED_M ? ragged_m_setup(GG_DTYPE_FP32, GG_DTYPE_FP32)
                                       : ragged_k_setup(GG_DTYPE_FP32, GG_DTYPE_FP32);
    s.lhs.range = CodeRange::kFull;
    s.rhs.range = CodeRange::kFull;
    s.k = 64;
    GemmCase c(s);
    c.run();
    c.check();
  }
}

TEST(ReferenceGemm, SmallIntegersAreBitExact) {
  // lhs = 1 everywhere, rhs[g] = g + 1: every output of group g is K * (g + 1).
  GemmSetup s = ragged_m_setup(GG_DTYPE_BF16, GG_DTYPE_BF16);
  GemmCase c(s);
  c.lhs.fill_code(0x3F80);  // 1.0
  for (int32_t g = 0; g < 4; ++g) {
    const uint32_t code = model_code(GG_DTYPE_BF16, g + 1);
    for (int64_t r = 0; r < s.k; ++r)
      for (int64_t col = 0; col < s.n; ++col) c.rhs.set_code(g, r, col, code);
  }
  c.run();
  c.check();
  EXPECT_EQ(c.out.value(0, 0, 0), 0.75L * 40);        // group 0, alpha 0.75
  EXPECT_EQ(c.out.value(0, 5, 7), 0.75L * 40 * 3);    // group 2 starts at row 5
  EXPECT_EQ(c.out.value(0, 30, 23), 0.75L * 40 * 4);  // group 3: rows 22..30
}

}  // namespace
}  // namespace gg::test

// The reference path end to end through the C API, on problems small enough
// to check by hand: small-integer bf16 inputs make every product and sum
// exact, so the expected fp32 outputs are computed here in integers and
// compared bit for bit. Then empty tensors without addresses, the
// device-side flags of bad sizes through gg_check, grouped quantize on
// values whose mxfp8 codes are known, and the GROUPGEMM_LOG line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <string.h>

#include <cmath>
#include <string>
#include <vector>

#include "problems.h"

namespace gg_test {
namespace {

using ::testing::HasSubstr;

// bf16 of a small integer: the top half of its fp32 bits, exact below 256.
uint16_t bf16_of(int value) {
  const float f = static_cast<float>(value);
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

int lhs_value(int64_t row, int64_t col) { return static_cast<int>((row * 7 + col * 3) % 9) - 4; }
int rhs_value(int64_t g, int64_t row, int64_t col) {
  return static_cast<int>((g * 5 + row * 3 + col) % 7) - 3;
}

constexpr int kSizes[kGroups] = {5, 0, 11};  // the problems' sizes; rows 16 and 17 are spare
constexpr float kPoison = 1234.5f;

TEST(ReferenceRun, RaggedMPerGroupAlphaBetaBias) {
  GemmProblem p = ragged_m_problem();
  gg_gemm_desc& d = p.desc;
  uint16_t* lhs = static_cast<uint16_t*>(d.lhs.data);
  uint16_t* rhs = static_cast<uint16_t*>(d.rhs.data);  // [G, N, K]: rhs_layout T
  for (int64_t m = 0; m < kRows; ++m)
    for (int64_t k = 0; k < kK; ++k) lhs[m * kK + k] = bf16_of(lhs_value(m, k));
  for (int64_t g = 0; g < kGroups; ++g)
    for (int64_t n = 0; n < kN; ++n)
      for (int64_t k = 0; k < kK; ++k) rhs[(g * kN + n) * kK + k] = bf16_of(rhs_value(g, n, k));
  d.out.dtype = GG_DTYPE_FP32;
  float* out = static_cast<float*>(d.out.data);
  for (int64_t m = 0; m < kRows; ++m)
    for (int64_t n = 0; n < kN; ++n) out[m * kN + n] = m < 16 ? float((m + n) % 5) : kPoison;
  const float alpha[kGroups] = {2, 3, -1};
  d.alpha.per_group = alpha;
  d.beta.value = 1.0f;
  d.bias = view(p.arena.allocate(kGroups * kN * 4), GG_DTYPE_FP32, {kGroups, kN});
  float* bias = static_cast<float*>(d.bias.data);
  for (int64_t g = 0; g < kGroups; ++g)
    for (int64_t n = 0; n < kN; ++n) bias[g * kN + n] = float(n - g);

  HostWorkspace workspace;
  ASSERT_EQ(gg_grouped_gemm(&d, workspace.data, workspace.bytes, nullptr), GG_STATUS_SUCCESS)
      << gg_last_error();
  EXPECT_STREQ(gg_last_error(), "");

  int64_t row = 0;
  for (int g = 0; g < kGroups; ++g) {
    for (int64_t m = row; m < row + kSizes[g]; ++m) {
      for (int64_t n = 0; n < kN; ++n) {
        int64_t dot = 0;
        for (int64_t k = 0; k < kK; ++k) dot += lhs_value(m, k) * rhs_value(g, n, k);
        const int64_t expected = static_cast<int64_t>(alpha[g]) * dot + (m + n) % 5 + (n - g);
        EXPECT_EQ(out[m * kN + n], static_cast<float>(expected)) << "row " << m << " col " << n;
      }
    }
    row += kSizes[g];
  }
  for (int64_t m = 16; m < kRows; ++m)
    for (int64_t n = 0; n < kN; ++n) EXPECT_EQ(out[m * kN + n], kPoison) << "spare row " << m;

  uint32_t flags = 99;
  EXPECT_EQ(gg_check(workspace.data, GG_PATH_REFERENCE, nullptr, &flags), GG_STATUS_SUCCESS);
  EXPECT_EQ(flags, 0u);
}

TEST(ReferenceRun, ZeroUnusedRowsWritesZerosPastTheLastGroupOnly) {
  GemmProblem p = ragged_m_problem();
  gg_gemm_desc& d = p.desc;
  uint16_t* lhs = static_cast<uint16_t*>(d.lhs.data);
  uint16_t* rhs = static_cast<uint16_t*>(d.rhs.data);
  for (int64_t i = 0; i < kRows * kK; ++i) lhs[i] = bf16_of(1);
  for (int64_t i = 0; i < kGroups * kN * kK; ++i) rhs[i] = bf16_of(1);
  d.out.dtype = GG_DTYPE_FP32;
  float* out = static_cast<float*>(d.out.data);
  for (int64_t i = 0; i < kRows * kN; ++i) out[i] = kPoison;
  d.flags = GG_GEMM_ZERO_UNUSED_ROWS;
  HostWorkspace workspace;
  ASSERT_EQ(gg_grouped_gemm(&d, workspace.data, workspace.bytes, nullptr), GG_STATUS_SUCCESS)
      << gg_last_error();
  for (int64_t m = 0; m < kRows; ++m) {
    for (int64_t n = 0; n < kN; ++n) {
      // Rows 0..15 hold the groups (sizes 5, 0, 11): a dot of kK ones.
      const float expected = m < 16 ? static_cast<float>(kK) : 0.0f;
      EXPECT_EQ(out[m * kN + n], expected) << "row " << m << " col " << n;
      if (m >= 16) {
        EXPECT_FALSE(std::signbit(out[m * kN + n])) << "row " << m << ": +0";
      }
    }
  }
}

// The same ragged-K product with lhs stored [M, P] or transposed [P, M].
class ReferenceRaggedK : public ::testing::TestWithParam<gg_layout> {};

TEST_P(ReferenceRaggedK, EmptyGroupWritesZerosWhenBetaIsZero) {
  const bool lhs_t = GetParam() == GG_LAYOUT_T;
  GemmProblem p = ragged_k_problem();
  gg_gemm_desc& d = p.desc;
  if (lhs_t) d.lhs = view(d.lhs.data, GG_DTYPE_BF16, {kP, kRows});
  d.lhs_layout = GetParam();
  uint16_t* lhs = static_cast<uint16_t*>(d.lhs.data);
  uint16_t* rhs = static_cast<uint16_t*>(d.rhs.data);
  for (int64_t m = 0; m < kRows; ++m) {
    for (int64_t i = 0; i < kP; ++i) {
      lhs[lhs_t ? i * kRows + m : m * kP + i] = bf16_of(lhs_value(m, i));
    }
    for (int64_t j = 0; j < kQ; ++j) rhs[m * kQ + j] = bf16_of(rhs_value(0, m, j));
  }
  float* out = static_cast<float*>(d.out.data);
  for (int64_t e = 0; e < kGroups * kP * kQ; ++e) out[e] = kPoison;
  d.alpha.value = 0.5f;

  HostWorkspace workspace;
  ASSERT_EQ(gg_grouped_gemm(&d, workspace.data, workspace.bytes, nullptr), GG_STATUS_SUCCESS)
      << gg_last_error();

  int64_t row = 0;
  for (int g = 0; g < kGroups; ++g) {
    for (int64_t i = 0; i < kP; ++i) {
      for (int64_t j = 0; j < kQ; ++j) {
        int64_t dot = 0;
        for (int64_t m = row; m < row + kSizes[g]; ++m) dot += lhs_value(m, i) * rhs_value(0, m, j);
        EXPECT_EQ(out[(g * kP + i) * kQ + j], static_cast<float>(dot) * 0.5f)
            << "group " << g << " (" << i << ", " << j << ")";
      }
    }
    row += kSizes[g];
  }
}

INSTANTIATE_TEST_SUITE_P(Api, ReferenceRaggedK, ::testing::Values(GG_LAYOUT_N, GG_LAYOUT_T),
                         [](const auto& test) {
                           return std::string(test.param == GG_LAYOUT_N ? "LhsN" : "LhsT");
                         });

// A view of no elements may have NULL data and block scales, as a
// framework's empty tensor does: a ragged-K product over no tokens still
// writes every group's output (beta = 0: zeros), a ragged-M one writes
// nothing, and a quantize of no tokens writes every group's amax (0) and
// fp32 scale. Data left NULL where the tensor has elements is refused.
TEST(ReferenceRun, EmptyTensorsWithoutAddresses) {
  const auto zero_sizes = [](Arena* arena) {
    auto* no_tokens = static_cast<int32_t*>(arena->allocate(kGroups * sizeof(int32_t)));
    for (int g = 0; g < kGroups; ++g) no_tokens[g] = 0;
    return gg_group_sizes{no_tokens, nullptr, GG_INDEX_INT32};
  };
  HostWorkspace workspace;

  GemmProblem k = ragged_k_problem();
  k.desc.group_sizes = zero_sizes(&k.arena);
  k.desc.lhs = view(nullptr, GG_DTYPE_BF16, {0, kP});
  k.desc.rhs = view(nullptr, GG_DTYPE_BF16, {0, kQ});
  float* out = static_cast<float*>(k.desc.out.data);
  for (int64_t e = 0; e < kGroups * kP * kQ; ++e) out[e] = kPoison;
  ASSERT_EQ(gg_grouped_gemm(&k.desc, workspace.data, workspace.bytes, nullptr), GG_STATUS_SUCCESS)
      << gg_last_error();
  for (int64_t e = 0; e < kGroups * kP * kQ; ++e) ASSERT_EQ(out[e], 0.0f) << "element " << e;

  GemmProblem m = ragged_m_problem();
  m.desc.group_sizes = zero_sizes(&m.arena);
  m.desc.lhs = view(nullptr, GG_DTYPE_BF16, {0, kK});
  m.desc.out = view(nullptr, GG_DTYPE_BF16, {0, kN});
  EXPECT_EQ(gg_grouped_gemm(&m.desc, workspace.data, workspace.bytes, nullptr), GG_STATUS_SUCCESS)
      << gg_last_error();
  m.desc.lhs.shape[0] = m.desc.out.shape[0] = 1;
  EXPECT_EQ(gg_grouped_gemm(&m.desc, workspace.data, workspace.bytes, nullptr),
            GG_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(gg_last_error(), "desc->lhs.data is NULL");

  QuantizeProblem q;
  gg_quantize_desc& d = q.desc;
  d.num_groups = kGroups;
  d.group_sizes = zero_sizes(&q.arena);
  d.input = view(nullptr, GG_DTYPE_BF16, {0, kK});
  // Requested (its data not NULL), so its scales are written; it holds no
  // block scales.
  d.rowwise = view(q.arena.allocate(16), GG_DTYPE_E2M1, {0, kK});
  d.rowwise.block_scaling = GG_BLOCK_NV16;
  d.rowwise.scale_extent = GG_SCALE_GROUP;
  float scale[kGroups] = {kPoison, kPoison, kPoison};
  float amax[kGroups] = {kPoison, kPoison, kPoison};
  d.rowwise.scale = scale;
  d.amax = amax;
  d.path = GG_PATH_REFERENCE;
  ASSERT_EQ(gg_grouped_quantize(&d, workspace.data, workspace.bytes, nullptr), GG_STATUS_SUCCESS)
      << gg_last_error();
  for (int g = 0; g < kGroups; ++g) {
    EXPECT_EQ(amax[g], 0.0f) << "group " << g;
    EXPECT_NE(scale[g], kPoison) << "group " << g;
  }
}

// Pointer arrays are host memory on the reference path: a NULL among their
// G pointers is an argument error naming the entry; with every pointer set,
// the same call runs.
TEST(ReferenceRun, NullEntryOfAPointerArrayIsNamed) {
  const struct {
    const char* name;
    GemmProblem (*problem)();
    bool out;  // the pointer array is out (ragged-K), else rhs (ragged-M)
    bool scales;  // the NULL is a block-scale pointer, else a matrix
    const char* message;
  } cases[] = {
      {"ragged-M rhs", ragged_m_problem, false, false, "desc->rhs.data[1] is NULL"},
      {"ragged-K out", ragged_k_problem, true, false, "desc->out.data[1] is NULL"},
      {"ragged-M rhs scales", ragged_m_problem, false, true, "desc->rhs.block_scales[1] is NULL"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    GemmProblem p = c.problem();
    gg_tensor& array = c.out ? p.desc.out : p.desc.rhs;
    make_pointer_array(&p.arena, &array);
    if (c.scales) {
      set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
      set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
      void** scales = static_cast<void**>(p.arena.allocate(kGroups * sizeof(void*)));
      for (int g = 0; g < kGroups; ++g) scales[g] = p.arena.allocate(kN * kK);
      p.desc.rhs.block_scales = scales;
    }
    HostWorkspace workspace;
    ASSERT_EQ(gg_grouped_gemm(&p.desc, workspace.data, workspace.bytes, nullptr),
              GG_STATUS_SUCCESS)
        << gg_last_error();
    void** pointers = static_cast<void**>(c.scales ? array.block_scales : array.data);
    pointers[1] = nullptr;
    EXPECT_EQ(gg_grouped_gemm(&p.desc, workspace.data, workspace.bytes, nullptr),
              GG_STATUS_INVALID_ARGUMENT);
    EXPECT_THAT(gg_last_error(), HasSubstr(c.message));
  }
}

// Sizes {5, -1, 20} in 18 rows: a negative size, and a group running past M.
TEST(ReferenceCheck, FlagsOfBadSizesAreReportedOnceThenCleared) {
  GemmProblem p = ragged_m_problem();
  int32_t* sizes = static_cast<int32_t*>(const_cast<void*>(p.desc.group_sizes.sizes));
  sizes[1] = -1;
  sizes[2] = 20;
  HostWorkspace workspace;
  ASSERT_EQ(gg_grouped_gemm(&p.desc, workspace.data, workspace.bytes, nullptr), GG_STATUS_SUCCESS)
      << gg_last_error();
  uint32_t flags = 0;
  ASSERT_EQ(gg_check(workspace.data, GG_PATH_REFERENCE, nullptr, &flags), GG_STATUS_SUCCESS);
  EXPECT_EQ(flags, GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS);
  ASSERT_EQ(gg_check(workspace.data, GG_PATH_REFERENCE, nullptr, &flags), GG_STATUS_SUCCESS);
  EXPECT_EQ(flags, 0u);
}

TEST(ReferenceCheck, BadArguments) {
  HostWorkspace workspace;
  uint32_t flags = 0;
  EXPECT_EQ(gg_check(workspace.data, GG_PATH_REFERENCE, nullptr, nullptr),
            GG_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(gg_last_error(), "flags is NULL");
  EXPECT_EQ(gg_check(nullptr, GG_PATH_REFERENCE, nullptr, &flags), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(gg_last_error(), "workspace is NULL");
  EXPECT_EQ(gg_check(workspace.data, raw_enum<gg_path>(7), nullptr, &flags),
            GG_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(gg_last_error(), HasSubstr("path is not a gg_path (got 7)"));
  EXPECT_EQ(gg_check(offset(workspace.data, 2), GG_PATH_REFERENCE, nullptr, &flags),
            GG_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(gg_last_error(), HasSubstr("4-byte aligned"));
}

// mxfp8 e4m3 of two rows of one 32-element block (OCP MX v1.0: the shared
// exponent is floor(log2(amax)) - 8, the element max's exponent):
//   row 0: 1.0 everywhere, 256 at k = 5 -> exponent 0 (e8m0 127); 1.0 is
//          e4m3 0x38, 256 is 0x78.
//   row 1: 2.0 everywhere              -> exponent -7 (e8m0 120); 2 / 2^-7 =
//          256, 0x78.
TEST(ReferenceRun, QuantizeMxfp8KnownCodes) {
  QuantizeProblem p;
  gg_quantize_desc& d = p.desc;
  d.num_groups = 1;
  int32_t* sizes = static_cast<int32_t*>(p.arena.allocate(4));
  sizes[0] = 2;
  d.group_sizes = gg_group_sizes{sizes, nullptr, GG_INDEX_INT32};
  d.input = view(p.arena.allocate(2 * 32 * 2), GG_DTYPE_BF16, {2, 32});
  uint16_t* input = static_cast<uint16_t*>(d.input.data);
  for (int k = 0; k < 32; ++k) {
    input[k] = bf16_of(k == 5 ? 256 : 1);
    input[32 + k] = bf16_of(2);
  }
  d.rowwise = view(p.arena.allocate(2 * 32), GG_DTYPE_E4M3, {2, 32});
  d.rowwise.block_scaling = GG_BLOCK_MX32;
  d.rowwise.block_scales = p.arena.allocate(2);
  float amax = 0;
  d.amax = &amax;
  d.path = GG_PATH_REFERENCE;

  HostWorkspace workspace;
  ASSERT_EQ(gg_grouped_quantize(&d, workspace.data, workspace.bytes, nullptr), GG_STATUS_SUCCESS)
      << gg_last_error();
  const uint8_t* codes = static_cast<const uint8_t*>(d.rowwise.data);
  for (int k = 0; k < 32; ++k) {
    EXPECT_EQ(codes[k], k == 5 ? 0x78 : 0x38) << "row 0, k " << k;
    EXPECT_EQ(codes[32 + k], 0x78) << "row 1, k " << k;
  }
  const uint8_t* scales = static_cast<const uint8_t*>(d.rowwise.block_scales);
  EXPECT_EQ(scales[0], 127);
  EXPECT_EQ(scales[1], 120);
  EXPECT_EQ(amax, 256.0f);
}

TEST(ReferenceRun, LogLineNamesTheProblemAndThePath) {
  GemmProblem p = ragged_m_problem();
  HostWorkspace workspace;
  setenv("GROUPGEMM_LOG", "1", 1);
  ::testing::internal::CaptureStderr();
  const gg_status status = gg_grouped_gemm(&p.desc, workspace.data, workspace.bytes, nullptr);
  const std::string logged = ::testing::internal::GetCapturedStderr();
  unsetenv("GROUPGEMM_LOG");
  ASSERT_EQ(status, GG_STATUS_SUCCESS) << gg_last_error();
  EXPECT_EQ(logged, "groupgemm: ragged-M bf16 G=3 M=18 N=24 K=32 rhs=T out=bf16 -> reference\n");

  ::testing::internal::CaptureStderr();
  ASSERT_EQ(gg_grouped_gemm(&p.desc, workspace.data, workspace.bytes, nullptr), GG_STATUS_SUCCESS);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "silent without GROUPGEMM_LOG";
}

}  // namespace
}  // namespace gg_test

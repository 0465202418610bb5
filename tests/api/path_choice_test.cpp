// Path choice and what a path needs, on the CPU: the choice is a pure function
// of a path table and a device status, so these tests bring their own tables
// (paths that support what the test says) and devices (usable or not, of a
// given compute capability). Then the build's own table, the device query and
// gg_path_available, whose answers depend on the machine: the tests ask the
// CUDA runtime themselves and expect what it implies. Last, which problems
// the GPU paths hand the skinny kernel.
#include <cuda_runtime_api.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "api/gemm_paths.h"
#include "api/validate.h"
#include "kernels/skinny/skinny_gemm.h"
#include "kernels/verified_kernels.h"
#include "plan/plan.h"
#include "problems.h"

namespace gg_test {
namespace {

using gg::api::GemmPath;
using ::testing::HasSubstr;

// Sets GROUPGEMM_UNVERIFIED_KERNELS (null: unsets it) for a scope.
class UnverifiedKernelsVariable {
 public:
  explicit UnverifiedKernelsVariable(const char* value) {
    const char* old = getenv(gg::kUnverifiedKernelsVariable);
    if (old != nullptr) old_ = old;
    had_ = old != nullptr;
    set(value);
  }
  ~UnverifiedKernelsVariable() { set(had_ ? old_.c_str() : nullptr); }

 private:
  static void set(const char* value) {
    if (value == nullptr) {
      unsetenv(gg::kUnverifiedKernelsVariable);
    } else {
      setenv(gg::kUnverifiedKernelsVariable, value, 1);
    }
  }
  std::string old_;
  bool had_ = false;
};

bool supports_all(const gg_gemm_desc&, std::string*) { return true; }

bool supports_none(const gg_gemm_desc&, std::string* why_not) {
  *why_not = "fp8 is not implemented here";
  return false;
}

size_t no_scratch(const gg_gemm_desc&) { return 0; }

gg_status never_run(const gg_gemm_desc&, void*, size_t, cudaStream_t) {
  return GG_STATUS_INTERNAL_ERROR;
}

GemmPath gpu_path(gg_path id, const char* name, int min_cc, int max_cc,
                  bool (*supports)(const gg_gemm_desc&, std::string*)) {
  return GemmPath{id, name, true, min_cc, max_cc, 16, 16, 256, supports, no_scratch, never_run};
}

const GemmPath kReferenceRow{GG_PATH_REFERENCE, "reference", false,    0, 0, 1, 1, 4,
                             supports_all,      no_scratch,  never_run};

gg::api::DeviceStatus device_of(int compute_capability) {
  gg::api::DeviceStatus device;
  device.usable = true;
  device.info.ordinal = 0;
  device.info.compute_capability = compute_capability;
  device.info.sm_count = 100;
  device.info.name = "Test GPU";
  return device;
}

gg::api::DeviceStatus no_device() {
  gg::api::DeviceStatus device;
  device.why_not = "no usable CUDA device: test";
  return device;
}

// An lhs and an rhs format, each with no fp32 scale.
struct OperandFormats {
  gg_dtype lhs_dtype;
  gg_block_scaling lhs_scaling;
  gg_dtype rhs_dtype;
  gg_block_scaling rhs_scaling;
};

void set_operand_formats(GemmProblem* p, const OperandFormats& f) {
  set_format(&p->arena, &p->desc.lhs, f.lhs_dtype, f.lhs_scaling, GG_SCALE_NONE);
  set_format(&p->arena, &p->desc.rhs, f.rhs_dtype, f.rhs_scaling, GG_SCALE_NONE);
}

TEST(AutoPath, TakesTheFirstGpuPathThatRunsAndSupports) {
  const std::vector<GemmPath> paths = {kReferenceRow,
                                       gpu_path(GG_PATH_SM90, "fast", 90, 90, supports_all),
                                       gpu_path(GG_PATH_PORTABLE, "slow", 80, 0, supports_all)};
  GemmProblem p = ragged_m_problem();
  const GemmPath* chosen = nullptr;
  ASSERT_EQ(gg::api::choose_auto_path(p.desc, paths, device_of(90), &chosen), GG_STATUS_SUCCESS);
  EXPECT_STREQ(chosen->name, "fast");
  ASSERT_EQ(gg::api::choose_auto_path(p.desc, paths, device_of(86), &chosen), GG_STATUS_SUCCESS);
  EXPECT_STREQ(chosen->name, "slow") << "the sm_90a-only path does not run on 8.6";
  ASSERT_EQ(gg::api::choose_auto_path(p.desc, paths, device_of(100), &chosen), GG_STATUS_SUCCESS);
  EXPECT_STREQ(chosen->name, "slow") << "nor on 10.0";
}

TEST(AutoPath, SkipsAPathThatDoesNotSupportTheProblem) {
  const std::vector<GemmPath> paths = {gpu_path(GG_PATH_SM90, "fast", 90, 90, supports_none),
                                       gpu_path(GG_PATH_PORTABLE, "slow", 80, 0, supports_all)};
  GemmProblem p = ragged_m_problem();
  const GemmPath* chosen = nullptr;
  ASSERT_EQ(gg::api::choose_auto_path(p.desc, paths, device_of(90), &chosen), GG_STATUS_SUCCESS);
  EXPECT_STREQ(chosen->name, "slow");
}

TEST(AutoPath, NeverTakesTheReference) {
  const std::vector<GemmPath> paths = {kReferenceRow};
  GemmProblem p = ragged_m_problem();
  const GemmPath* chosen = nullptr;
  EXPECT_EQ(gg::api::choose_auto_path(p.desc, paths, device_of(90), &chosen), GG_STATUS_NO_DEVICE);
}

TEST(AutoPath, NoDeviceSaysWhyAndPointsToTheReference) {
  const std::vector<GemmPath> paths = {gpu_path(GG_PATH_PORTABLE, "portable", 80, 0, supports_all)};
  GemmProblem p = ragged_m_problem();
  const GemmPath* chosen = nullptr;
  EXPECT_EQ(gg::api::choose_auto_path(p.desc, paths, no_device(), &chosen), GG_STATUS_NO_DEVICE);
  EXPECT_THAT(gg_last_error(), HasSubstr("no usable CUDA device: test"));
  EXPECT_THAT(gg_last_error(), HasSubstr("GG_PATH_REFERENCE"));
}

TEST(AutoPath, DeviceTooOldIsNoDevice) {
  const std::vector<GemmPath> paths = {gpu_path(GG_PATH_PORTABLE, "portable", 80, 0, supports_all)};
  GemmProblem p = ragged_m_problem();
  const GemmPath* chosen = nullptr;
  EXPECT_EQ(gg::api::choose_auto_path(p.desc, paths, device_of(75), &chosen), GG_STATUS_NO_DEVICE);
  EXPECT_THAT(gg_last_error(),
              HasSubstr("no GPU path of this build runs on device 0 (Test GPU): path portable "
                        "needs compute capability 8.0 or newer; device 0 (Test GPU) is 7.5"));
}

TEST(AutoPath, NoPathSupportingIsNotSupportedWithEachReason) {
  const std::vector<GemmPath> paths = {
      gpu_path(GG_PATH_SM90, "sm90", 90, 90, supports_none),
      gpu_path(GG_PATH_PORTABLE, "portable", 80, 0, supports_none)};
  GemmProblem p = ragged_k_problem();
  const GemmPath* chosen = nullptr;
  EXPECT_EQ(gg::api::choose_auto_path(p.desc, paths, device_of(90), &chosen),
            GG_STATUS_NOT_SUPPORTED);
  EXPECT_THAT(gg_last_error(),
              HasSubstr("no GPU path implements ragged-K bf16 G=3 M=18 P=32 Q=24 lhs=N rhs=N "
                        "out=fp32 on device 0 (Test GPU): sm90: fp8 is not implemented here; "
                        "portable: fp8 is not implemented here"));
}

TEST(RequestedPath, NotInTheBuild) {
  const std::vector<GemmPath> paths = {kReferenceRow};
  GemmProblem p = ragged_m_problem();
  p.desc.path = GG_PATH_SM90;
  const GemmPath* chosen = nullptr;
  EXPECT_EQ(gg::api::choose_requested_path(p.desc, paths, &chosen), GG_STATUS_NOT_SUPPORTED);
  EXPECT_STREQ(gg_last_error(), "path sm90 is not part of this build");
}

TEST(RequestedPath, NotSupportingSaysWhichProblemAndWhy) {
  const std::vector<GemmPath> paths = {
      gpu_path(GG_PATH_PORTABLE, "portable", 80, 0, supports_none)};
  GemmProblem p = ragged_m_problem();
  p.desc.path = GG_PATH_PORTABLE;
  const GemmPath* chosen = nullptr;
  EXPECT_EQ(gg::api::choose_requested_path(p.desc, paths, &chosen), GG_STATUS_NOT_SUPPORTED);
  EXPECT_STREQ(gg_last_error(),
               "path portable does not implement ragged-M bf16 G=3 M=18 N=24 K=32 rhs=T "
               "out=bf16: fp8 is not implemented here");
}

TEST(RequestedPath, TakenWithoutADevice) {
  const std::vector<GemmPath> paths = {kReferenceRow,
                                       gpu_path(GG_PATH_PORTABLE, "portable", 80, 0, supports_all)};
  GemmProblem p = ragged_m_problem();
  p.desc.path = GG_PATH_PORTABLE;
  const GemmPath* chosen = nullptr;
  ASSERT_EQ(gg::api::choose_requested_path(p.desc, paths, &chosen), GG_STATUS_SUCCESS);
  EXPECT_EQ(chosen->id, GG_PATH_PORTABLE);
}

TEST(RunsOn, CapabilityRange) {
  const GemmPath sm90 = gpu_path(GG_PATH_SM90, "sm90", 90, 90, supports_all);
  std::string why;
  EXPECT_TRUE(gg::api::runs_on(sm90, device_of(90), &why));
  EXPECT_FALSE(gg::api::runs_on(sm90, device_of(89), &why));
  EXPECT_EQ(why, "path sm90 needs compute capability 9.0; device 0 (Test GPU) is 8.9");
  EXPECT_FALSE(gg::api::runs_on(sm90, device_of(100), &why));
  EXPECT_FALSE(gg::api::runs_on(sm90, no_device(), &why));
  EXPECT_EQ(why, "no usable CUDA device: test");
  EXPECT_TRUE(gg::api::runs_on(kReferenceRow, no_device(), &why));
}

// The GPU paths' 16-byte vector loads, checked on the normalized descriptor.
class OperandAlignment : public ::testing::Test {
 protected:
  // quantized_alignment: 16 as on the sm90 path; 1 as on the portable one.
  gg_status check(const gg_gemm_desc& desc, size_t quantized_alignment = 16) {
    gg_gemm_desc normalized;
    EXPECT_EQ(gg::api::validate_gemm(&desc, &normalized), GG_STATUS_SUCCESS) << gg_last_error();
    return gg::api::check_operand_alignment(normalized, 16, quantized_alignment, "portable");
  }
};

TEST_F(OperandAlignment, PackedMultiplesOf8Bf16Pass) {
  GemmProblem p = ragged_m_problem();
  EXPECT_EQ(check(p.desc), GG_STATUS_SUCCESS);
}

TEST_F(OperandAlignment, DataPointer) {
  GemmProblem p = ragged_m_problem();
  p.desc.lhs.data = offset(p.desc.lhs.data, 2);
  EXPECT_EQ(check(p.desc), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(gg_last_error(), HasSubstr("desc->lhs.data"));
  EXPECT_THAT(gg_last_error(), HasSubstr("must be 16-byte aligned on path portable"));
}

TEST_F(OperandAlignment, RowStrideInBytes) {
  GemmProblem p = ragged_m_problem();
  p.desc.out.strides[0] = kN + 4;  // 56 bytes
  EXPECT_EQ(check(p.desc), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(gg_last_error(),
               "desc->out.strides[0] (28 elements, 56 bytes) must be a multiple of 16 bytes on "
               "path portable");
}

TEST_F(OperandAlignment, MatrixStrideOfStackedRhs) {
  GemmProblem p = ragged_m_problem();
  p.desc.rhs.strides[0] = kN * kK + 4;
  EXPECT_EQ(check(p.desc), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(gg_last_error(), HasSubstr("desc->rhs.strides[0]"));
}

TEST_F(OperandAlignment, PackedE2m1RowStrideCountsHalfBytes) {
  GemmProblem p = ragged_m_problem();
  set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
  set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
  EXPECT_EQ(check(p.desc), GG_STATUS_SUCCESS);  // 32 e2m1 = 16 bytes
  p.desc.lhs.strides[0] = kK + 16;              // 24 bytes
  EXPECT_EQ(check(p.desc), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(gg_last_error(), HasSubstr("(48 elements, 24 bytes)"));
  // The decode stage picks its load width per chunk: any stride, any start.
  p.desc.lhs.strides[0] = kK + 2;  // 17 bytes
  p.desc.rhs.data = offset(p.desc.rhs.data, 1);
  EXPECT_EQ(check(p.desc, 1), GG_STATUS_SUCCESS) << gg_last_error();
  const GemmPath* portable = gg::api::find_path(gg::api::gemm_paths(), GG_PATH_PORTABLE);
  EXPECT_EQ(portable->quantized_operand_alignment, 1u);
}

TEST_F(OperandAlignment, PointerArrayChecksStridesOnly) {
  GemmProblem p = ragged_m_problem();
  make_pointer_array(&p.arena, &p.desc.rhs);
  p.desc.rhs.strides[0] = 1;  // unused by a pointer array
  EXPECT_EQ(check(p.desc), GG_STATUS_SUCCESS);
  p.desc.rhs.strides[1] = kK + 4;
  EXPECT_EQ(check(p.desc), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(gg_last_error(), HasSubstr("desc->rhs.strides[1]"));
}

TEST_F(OperandAlignment, Bias) {
  GemmProblem p = ragged_m_problem();
  p.desc.bias = view(offset(p.arena.allocate(4096), 4), GG_DTYPE_FP32, {kGroups, kN});
  EXPECT_EQ(check(p.desc), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(gg_last_error(), HasSubstr("desc->bias.data"));
}

// The build's table: the reference, then the GPU paths fastest first, each
// with the 16-byte operand alignment the kernels' vector loads need.
TEST(BuildPaths, TableOrderAndNeeds) {
  const std::vector<GemmPath>& paths = gg::api::gemm_paths();
  ASSERT_EQ(paths.size(), 3u);
  EXPECT_EQ(paths[0].id, GG_PATH_REFERENCE);
  EXPECT_FALSE(paths[0].on_gpu);
  EXPECT_EQ(paths[1].id, GG_PATH_SM90);
  EXPECT_EQ(paths[1].min_compute_capability, 90);
  EXPECT_EQ(paths[1].max_compute_capability, 90);
  EXPECT_EQ(paths[2].id, GG_PATH_PORTABLE);
  EXPECT_EQ(paths[2].min_compute_capability, 80);
  for (size_t i = 1; i < paths.size(); ++i) {
    EXPECT_TRUE(paths[i].on_gpu);
    EXPECT_EQ(paths[i].operand_alignment, 16u);
    EXPECT_EQ(paths[i].workspace_alignment, 256u);
  }
}

// The sm90 row reads each op's own dimensions from the normalized
// descriptor: it takes them in [1, 2^31) (the kernel counts in int; a TMA map
// spans no empty dimension) and names the one it refuses, so that AUTO
// hands such problems to the portable path, which takes any.
TEST(BuildPaths, Sm90TakesEachOpsDimensionsInRange) {
  const std::vector<GemmPath>& paths = gg::api::gemm_paths();
  const GemmPath* sm90 = gg::api::find_path(paths, GG_PATH_SM90);
  const GemmPath* portable = gg::api::find_path(paths, GG_PATH_PORTABLE);
  ASSERT_NE(sm90, nullptr);
  ASSERT_NE(portable, nullptr);
  const int64_t too_long = int64_t{1} << 31;
  struct Case {
    const char* name;
    GemmProblem (*problem)();
    gg_layout lhs_layout, rhs_layout;
    int tensor;  // 0 lhs, 1 rhs
    int dim;
    int64_t value;
    const char* refusal;  // null: taken
  };
  const Case cases[] = {
      {"ragged-M M", ragged_m_problem, GG_LAYOUT_N, GG_LAYOUT_T, 0, 0, 0, "M = 0"},
      {"ragged-M K", ragged_m_problem, GG_LAYOUT_N, GG_LAYOUT_T, 0, 1, 0, "K = 0"},
      {"ragged-M N (T)", ragged_m_problem, GG_LAYOUT_N, GG_LAYOUT_T, 1, 1, 0, "N = 0"},
      {"ragged-M N (N)", ragged_m_problem, GG_LAYOUT_N, GG_LAYOUT_N, 1, 2, too_long,
       "N = 2147483648"},
      {"ragged-M M long", ragged_m_problem, GG_LAYOUT_N, GG_LAYOUT_T, 0, 0, too_long - 1, nullptr},
      {"ragged-K M (N)", ragged_k_problem, GG_LAYOUT_N, GG_LAYOUT_N, 0, 0, 0, "M = 0"},
      {"ragged-K M (T)", ragged_k_problem, GG_LAYOUT_T, GG_LAYOUT_N, 0, 1, 0, "M = 0"},
      {"ragged-K P (N)", ragged_k_problem, GG_LAYOUT_N, GG_LAYOUT_N, 0, 1, too_long,
       "P = 2147483648"},
      {"ragged-K P (T)", ragged_k_problem, GG_LAYOUT_T, GG_LAYOUT_N, 0, 0, 0, "P = 0"},
      {"ragged-K Q (N)", ragged_k_problem, GG_LAYOUT_N, GG_LAYOUT_N, 1, 1, 0, "Q = 0"},
      {"ragged-K Q (T)", ragged_k_problem, GG_LAYOUT_N, GG_LAYOUT_T, 1, 0, too_long,
       "Q = 2147483648"},
      {"ragged-K Q (T) long", ragged_k_problem, GG_LAYOUT_N, GG_LAYOUT_T, 1, 0, too_long - 1,
       nullptr},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    GemmProblem p = c.problem();
    // The problems are ragged-M lhs N, rhs T; ragged-K lhs and rhs N.
    if (c.lhs_layout != p.desc.lhs_layout) std::swap(p.desc.lhs.shape[0], p.desc.lhs.shape[1]);
    if (c.rhs_layout != p.desc.rhs_layout) {
      gg_tensor& rhs = p.desc.rhs;
      std::swap(rhs.shape[rhs.rank - 2], rhs.shape[rhs.rank - 1]);
    }
    p.desc.lhs_layout = c.lhs_layout;
    p.desc.rhs_layout = c.rhs_layout;
    // The support rules read only shapes, dtypes, layouts and flags: the
    // shapes are set on the descriptor as validated, with no memory behind.
    gg_gemm_desc normalized;
    ASSERT_EQ(gg::api::validate_gemm(&p.desc, &normalized), GG_STATUS_SUCCESS) << gg_last_error();
    gg_tensor& tensor = c.tensor == 0 ? normalized.lhs : normalized.rhs;
    tensor.shape[c.dim] = c.value;
    if (tensor.rank < 3) tensor.shape[tensor.rank] = -1;  // junk past the rank is never read
    std::string why;
    if (c.refusal == nullptr) {
      EXPECT_TRUE(sm90->supports(normalized, &why)) << why;
    } else {
      EXPECT_FALSE(sm90->supports(normalized, &why));
      EXPECT_THAT(why, HasSubstr(c.refusal));
      EXPECT_THAT(why, HasSubstr("[1, 2^31)"));
    }
    EXPECT_TRUE(portable->supports(normalized, &why)) << why;
  }
}

// The sm90 path runs bf16, fp16 and fp8 with tensor, group or rowwise
// scales or 1x128 x 128x128 blocks (e4m3 x e4m3, e5m2 x e4m3), and decodes
// MX and NV blocks and quantized weights with bf16 activations (ragged-M,
// weights [G, N, K]); the rest (another fp8 pair, weights with fp16
// activations) is refused, naming both operands' formats and where they
// are computed. The portable path takes them (exact decode into bf16) but
// for what it names: fp8 1x128 / 128x128 blocks, fp16 activations with
// quantized weights, ragged-K operands whose token blocks differ in size.
TEST(BuildPaths, QuantizedOperandsAndThePathsThatRunThem) {
  const std::vector<GemmPath>& paths = gg::api::gemm_paths();
  struct Operands {
    OperandFormats formats;
    const char* named;
    const char* sm90_refusal;      // null: the sm90 path takes it
    const char* portable_refusal;  // null: the portable path takes it
  };
  constexpr const char* kNotSm90 = "GG_PATH_REFERENCE computes every format";
  const Operands cases[] = {
      {{GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_DTYPE_E4M3, GG_BLOCK_NONE}, "lhs fp8 e4m3 x rhs fp8 e4m3",
       nullptr, nullptr},
      {{GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE},
       "lhs fp8 e5m2 rowwise x rhs fp8 e4m3 rowwise", nullptr, nullptr},
      {{GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_DTYPE_E5M2, GG_BLOCK_ROWWISE},
       "lhs fp8 e4m3 rowwise x rhs fp8 e5m2 rowwise", "e4m3 x e4m3 and e5m2 x e4m3", nullptr},
      {{GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_DTYPE_E2M1, GG_BLOCK_MX32}, "lhs mxfp4 x rhs mxfp4",
       nullptr, nullptr},
      {{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_DTYPE_E4M3, GG_BLOCK_MX32},
       "lhs mxfp8 e4m3 x rhs mxfp8 e4m3", nullptr, nullptr},
      {{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_DTYPE_E2M1, GG_BLOCK_MX32}, "lhs mxfp8 e4m3 x rhs mxfp4",
       nullptr, nullptr},
      {{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_DTYPE_E2M1, GG_BLOCK_NV16}, "lhs nvfp4 x rhs nvfp4",
       nullptr, nullptr},
      {{GG_DTYPE_BF16, GG_BLOCK_NONE, GG_DTYPE_E2M1, GG_BLOCK_MX32}, "lhs bf16 x rhs mxfp4",
       nullptr, nullptr},
      {{GG_DTYPE_BF16, GG_BLOCK_NONE, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE},
       "lhs bf16 x rhs fp8 e4m3 rowwise", nullptr, nullptr},
      {{GG_DTYPE_FP16, GG_BLOCK_NONE, GG_DTYPE_E4M3, GG_BLOCK_MX32}, "lhs fp16 x rhs mxfp8 e4m3",
       kNotSm90, "weight-only needs bf16 activations"},
      {{GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_DTYPE_E4M3, GG_BLOCK_128X128},
       "lhs fp8 e4m3 1x128 x rhs fp8 e4m3 128x128", nullptr, "GG_PATH_REFERENCE computes them"},
  };
  const UnverifiedKernelsVariable opted_in("1");  // the verified list is tested below
  for (const Operands& c : cases) {
    SCOPED_TRACE(c.named);
    GemmProblem p = ragged_m_problem();
    set_operand_formats(&p, c.formats);
    gg_gemm_desc normalized;
    ASSERT_EQ(gg::api::validate_gemm(&p.desc, &normalized), GG_STATUS_SUCCESS) << gg_last_error();
    std::string why;
    const bool sm90 = gg::api::find_path(paths, GG_PATH_SM90)->supports(normalized, &why);
    if (c.sm90_refusal == nullptr) {
      EXPECT_TRUE(sm90) << why;
    } else {
      EXPECT_FALSE(sm90);
      EXPECT_THAT(why, HasSubstr(c.named));
      EXPECT_THAT(why, HasSubstr(c.sm90_refusal));
    }
    why.clear();
    const bool portable = gg::api::find_path(paths, GG_PATH_PORTABLE)->supports(normalized, &why);
    p.desc.path = GG_PATH_PORTABLE;
    size_t bytes = 0;
    if (c.portable_refusal == nullptr) {
      EXPECT_TRUE(portable) << why;
      EXPECT_EQ(gg_grouped_gemm_workspace_size(&p.desc, &bytes), GG_STATUS_SUCCESS)
          << gg_last_error();
    } else {
      EXPECT_FALSE(portable);
      EXPECT_THAT(why, HasSubstr(c.named));
      EXPECT_THAT(why, HasSubstr(c.portable_refusal));
      EXPECT_EQ(gg_grouped_gemm_workspace_size(&p.desc, &bytes), GG_STATUS_NOT_SUPPORTED);
      EXPECT_THAT(gg_last_error(), HasSubstr(c.named));
    }
  }
}

// fp8 wgmma reads K-major operands from 16-byte aligned rows: the sm90 path
// refuses other layouts and strides, saying which, and GG_PATH_AUTO then
// takes the portable path; its fp8 kernels answer only once verified.
TEST(BuildPaths, Sm90Fp8NeedsKMajorAlignedOperandsAndVerifiedKernels) {
  const GemmPath* sm90 = gg::api::find_path(gg::api::gemm_paths(), GG_PATH_SM90);
  const OperandFormats e4m3{GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_DTYPE_E4M3, GG_BLOCK_NONE};
  const auto refusal = [&](GemmProblem& p) {
    gg_gemm_desc normalized;
    EXPECT_EQ(gg::api::validate_gemm(&p.desc, &normalized), GG_STATUS_SUCCESS) << gg_last_error();
    std::string why;
    return sm90->supports(normalized, &why) ? std::string() : why;
  };
  const UnverifiedKernelsVariable opted_in("1");
  {
    GemmProblem p = ragged_m_problem();
    set_operand_formats(&p, e4m3);
    EXPECT_EQ(refusal(p), "");
    p.desc.rhs_layout = GG_LAYOUT_N;
    p.desc.rhs = view(p.desc.rhs.data, GG_DTYPE_E4M3, {kGroups, kK, kN});
    set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_NONE);
    EXPECT_THAT(refusal(p), HasSubstr("rhs must be GG_LAYOUT_T ([G, N, K]"));
  }
  {
    GemmProblem p = ragged_m_problem();
    set_operand_formats(&p, e4m3);
    p.desc.lhs.strides[0] = kK + 8;  // 40 bytes
    EXPECT_THAT(refusal(p), HasSubstr("16-byte aligned data and row strides"));
  }
  {
    GemmProblem p = ragged_m_problem();
    set_operand_formats(&p, e4m3);
    make_pointer_array(&p.arena, &p.desc.rhs);
    EXPECT_EQ(refusal(p), "");  // with the opt-in
    const UnverifiedKernelsVariable unset(nullptr);
    const std::string gate =
        gg::unverified_kernel_refusal("the sm90 fp8 kernels for per-expert weights");
    EXPECT_EQ(refusal(p), gate.empty() ? "" : "sm90 path: " + gate);
  }
  {  // per-expert MX weights: the decoding kernels, through per-expert maps
    GemmProblem p = ragged_m_problem();
    set_operand_formats(&p, {GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_DTYPE_E4M3, GG_BLOCK_MX32});
    make_pointer_array(&p.arena, &p.desc.rhs);
    EXPECT_EQ(refusal(p), "");
    const UnverifiedKernelsVariable unset(nullptr);
    const std::string gate =
        gg::unverified_kernel_refusal("the sm90 decoding kernels for per-expert weights");
    EXPECT_EQ(refusal(p), gate.empty() ? "" : "sm90 path: " + gate);
  }
  {
    GemmProblem p = ragged_k_problem();  // both layout N: tokens as rows
    set_operand_formats(&p, e4m3);
    EXPECT_THAT(refusal(p), HasSubstr("lhs and rhs must be GG_LAYOUT_T ([P, M] and [Q, M]"));
  }
  {
    GemmProblem p = ragged_k_problem();
    p.desc.lhs_layout = GG_LAYOUT_T;
    p.desc.rhs_layout = GG_LAYOUT_T;
    p.desc.lhs = view(p.arena.allocate(kP * 32), GG_DTYPE_E4M3, {kP, 32});
    p.desc.rhs = view(p.arena.allocate(kQ * 32), GG_DTYPE_E4M3, {kQ, 32});
    set_operand_formats(&p, {GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE});
    EXPECT_EQ(refusal(p), "");
    // The weight gradient's 1 x 128 blocks along the tokens, e4m3 or e5m2
    // gradients (validation pairs them with each other only).
    const OperandFormats token_blocks{GG_DTYPE_E5M2, GG_BLOCK_1X128, GG_DTYPE_E4M3, GG_BLOCK_1X128};
    set_operand_formats(&p, token_blocks);
    EXPECT_EQ(refusal(p), "");
    set_operand_formats(&p, {GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE});
    // Without the opt-in the path answers as the verified list says (they
    // are on it: they passed their GPU tests on an H100).
    const UnverifiedKernelsVariable unset(nullptr);
    const std::string gate = gg::unverified_kernel_refusal("the sm90 fp8 kernels");
    EXPECT_EQ(gate, "");
    EXPECT_EQ(refusal(p), gate.empty() ? "" : "sm90 path: " + gate);
    set_operand_formats(&p, token_blocks);
    const std::string blocks_gate =
        gg::unverified_kernel_refusal(
            "the sm90 fp8 kernels for 1x128 x 1x128 weight gradients on split windows");
    EXPECT_EQ(refusal(p), blocks_gate.empty() ? "" : "sm90 path: " + blocks_gate);
  }
}

TEST(UnverifiedKernels, RefusedUntilTheOptInNamesThem) {
  for (const char* value : {static_cast<const char*>(nullptr), "0", "yes"}) {
    SCOPED_TRACE(value == nullptr ? "unset" : value);
    const UnverifiedKernelsVariable variable(value);
    const std::string why = gg::unverified_kernel_refusal("a kernel never run");
    EXPECT_THAT(why, HasSubstr("a kernel never run has not yet passed its GPU tests"));
    EXPECT_THAT(why, HasSubstr("GROUPGEMM_UNVERIFIED_KERNELS=1 runs it anyway"));
  }
  const UnverifiedKernelsVariable variable("1");
  EXPECT_EQ(gg::unverified_kernel_refusal("a kernel never run"), "");
}

// Without the opt-in the portable path takes a quantized format pair exactly
// when its decode kernel is on the verified list, and otherwise says so.
TEST(UnverifiedKernels, PortableDecodeKernelsAnswerOnlyOnceVerified) {
  struct Operands {
    OperandFormats formats;
    const char* kernel;
  };
  const Operands cases[] = {
      {{GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_DTYPE_E4M3, GG_BLOCK_NONE}, "fp8 x fp8"},
      {{GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_DTYPE_E5M2, GG_BLOCK_ROWWISE},
       "fp8 rowwise x fp8 rowwise"},
      {{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_DTYPE_E4M3, GG_BLOCK_MX32}, "mxfp8 x mxfp8"},
      {{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_DTYPE_E2M1, GG_BLOCK_MX32}, "mxfp8 x mxfp4"},
      {{GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_DTYPE_E2M1, GG_BLOCK_MX32}, "mxfp4 x mxfp4"},
      {{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_DTYPE_E2M1, GG_BLOCK_NV16}, "nvfp4 x nvfp4"},
      {{GG_DTYPE_BF16, GG_BLOCK_NONE, GG_DTYPE_E2M1, GG_BLOCK_NV16}, "bf16 x nvfp4"},
  };
  const UnverifiedKernelsVariable unset(nullptr);
  const GemmPath* portable = gg::api::find_path(gg::api::gemm_paths(), GG_PATH_PORTABLE);
  for (const Operands& c : cases) {
    SCOPED_TRACE(c.kernel);
    GemmProblem p = ragged_m_problem();
    set_operand_formats(&p, c.formats);
    gg_gemm_desc normalized;
    ASSERT_EQ(gg::api::validate_gemm(&p.desc, &normalized), GG_STATUS_SUCCESS) << gg_last_error();
    const std::string refusal =
        gg::unverified_kernel_refusal(std::string("the decode kernel for ") + c.kernel);
    std::string why;
    EXPECT_EQ(portable->supports(normalized, &why), refusal.empty()) << why;
    if (!refusal.empty()) {
      EXPECT_EQ(why, "portable path: " + refusal);
    }
  }
}

// Through the C API: a misaligned operand on a GPU path fails on any machine,
// before any device is needed.
TEST(BuildPaths, MisalignedOperandOnAGpuPathFailsBeforeTheDevice) {
  GemmProblem p = ragged_m_problem();
  p.desc.path = GG_PATH_PORTABLE;
  p.desc.lhs.strides[0] = kK + 4;
  size_t bytes = 0;
  const gg_status status = gg_grouped_gemm_workspace_size(&p.desc, &bytes);
  if (status == GG_STATUS_NOT_SUPPORTED) GTEST_SKIP() << gg_last_error();
  EXPECT_EQ(status, GG_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(gg_last_error(), HasSubstr("desc->lhs.strides[0]"));
  EXPECT_THAT(gg_last_error(), HasSubstr("on path portable"));
}

// What the CUDA runtime says of device 0, asked directly.
struct RuntimeView {
  bool usable = false;
  int compute_capability = 0;
};

RuntimeView runtime_view() {
  RuntimeView view;
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return view;
  }
  int major = 0;
  int minor = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
  view.usable = true;
  view.compute_capability = major * 10 + minor;
  return view;
}

TEST(Device, QueryAgreesWithTheRuntime) {
  const RuntimeView runtime = runtime_view();
  gg::DeviceInfo info;
  std::string why_not;
  EXPECT_EQ(gg::query_device(0, &info, &why_not), runtime.usable);
  if (runtime.usable) {
    EXPECT_EQ(info.ordinal, 0);
    EXPECT_EQ(info.compute_capability, runtime.compute_capability);
    EXPECT_GT(info.sm_count, 0);
    EXPECT_FALSE(info.name.empty());
  } else {
    int count = 0;
    std::string no_device;
    EXPECT_FALSE(gg::count_cuda_devices(&count, &no_device));
    EXPECT_EQ(why_not, no_device);
  }
}

TEST(Device, OrdinalOutOfRange) {
  gg::DeviceInfo info;
  std::string why_not;
  EXPECT_FALSE(gg::query_device(1 << 20, &info, &why_not));
  EXPECT_FALSE(why_not.empty());
}

TEST(PathAvailable, ReferenceAlways) {
  int available = -1;
  EXPECT_EQ(gg_path_available(GG_PATH_REFERENCE, 0, &available), GG_STATUS_SUCCESS);
  EXPECT_EQ(available, 1);
  EXPECT_STREQ(gg_last_error(), "");
}

TEST(PathAvailable, GpuPathsFollowTheDevice) {
  const RuntimeView runtime = runtime_view();
  const struct {
    gg_path path;
    bool expected;
  } cases[] = {
      {GG_PATH_PORTABLE, runtime.usable && runtime.compute_capability >= 80},
      {GG_PATH_SM90, runtime.usable && runtime.compute_capability == 90},
      {GG_PATH_AUTO, runtime.usable && runtime.compute_capability >= 80},
  };
  for (const auto& c : cases) {
    int available = -1;
    EXPECT_EQ(gg_path_available(c.path, 0, &available), GG_STATUS_SUCCESS);
    EXPECT_EQ(available, c.expected ? 1 : 0) << "path " << c.path;
    if (c.expected) {
      EXPECT_STREQ(gg_last_error(), "");
    } else {
      EXPECT_STRNE(gg_last_error(), "") << "a path that is not available says why";
    }
  }
}

TEST(PathAvailable, BadArguments) {
  int available = -1;
  EXPECT_EQ(gg_path_available(raw_enum<gg_path>(12), 0, &available), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(gg_last_error(), HasSubstr("path is not a gg_path (got 12)"));
  EXPECT_EQ(gg_path_available(GG_PATH_REFERENCE, 0, nullptr), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(gg_last_error(), "available is NULL");
}

// Without a GPU, a GPU path gets as far as the device and stops there, with
// the reason. (On a GPU machine the call would run; it is skipped there.)
TEST(NoDevice, GpuPathsStopAtTheDevice) {
  if (runtime_view().usable) GTEST_SKIP() << "a GPU is present";
  GemmProblem p = ragged_m_problem();
  HostWorkspace workspace;
  p.desc.path = GG_PATH_AUTO;
  EXPECT_EQ(gg_grouped_gemm(&p.desc, workspace.data, workspace.bytes, nullptr),
            GG_STATUS_NO_DEVICE);
  EXPECT_THAT(gg_last_error(), HasSubstr("GG_PATH_AUTO found no GPU"));
  size_t bytes = 0;
  EXPECT_EQ(gg_grouped_gemm_workspace_size(&p.desc, &bytes), GG_STATUS_NO_DEVICE);

  // An explicit path is checked against the device last, after every
  // argument, so it needs the workspace the path asks for.
  p.desc.path = GG_PATH_PORTABLE;
  ASSERT_EQ(gg_grouped_gemm_workspace_size(&p.desc, &bytes), GG_STATUS_SUCCESS) << gg_last_error();
  Arena arena;
  EXPECT_EQ(gg_grouped_gemm(&p.desc, arena.allocate(bytes), bytes, nullptr), GG_STATUS_NO_DEVICE);
  int count = 0;
  std::string no_device;
  EXPECT_FALSE(gg::count_cuda_devices(&count, &no_device));
  EXPECT_THAT(gg_last_error(), HasSubstr(no_device));

  uint32_t flags = 0;
  EXPECT_EQ(gg_check(workspace.data, GG_PATH_PORTABLE, nullptr, &flags), GG_STATUS_NO_DEVICE);
  EXPECT_THAT(gg_last_error(), HasSubstr("gg_check"));
}

// The skinny kernel (kernels/skinny/skinny_gemm.h): which descriptors it
// reads, and that a path hands it one only where the plan picks it and the
// kernel is verified or the opt-in is set.
std::string skinny_refusal(const gg_gemm_desc& desc) {
  gg_gemm_desc normalized;
  EXPECT_EQ(gg::api::validate_gemm(&desc, &normalized), GG_STATUS_SUCCESS) << gg_last_error();
  return gg::skinny::refusal(normalized);
}

TEST(SkinnyChoice, QuantizedWeightsWithBf16OrLikeTokens) {
  GemmProblem p = ragged_m_problem();  // lhs [18, 32], weights [3, 24, 32]
  set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP);
  EXPECT_EQ(skinny_refusal(p.desc), "");
  set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
  EXPECT_EQ(skinny_refusal(p.desc), "");
  set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE);
  set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
  EXPECT_THAT(skinny_refusal(p.desc), HasSubstr("the weights' element width"));  // mxfp8 x mxfp4
  set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
  EXPECT_EQ(skinny_refusal(p.desc), "");
  set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE);
  set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE);
  EXPECT_THAT(skinny_refusal(p.desc), HasSubstr("e2m1 or fp8 weights"));
}

TEST(SkinnyChoice, RefusesWhatItCannotRead) {
  {
    GemmProblem p = ragged_k_problem();
    set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
    set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
    EXPECT_THAT(skinny_refusal(p.desc), HasSubstr("ragged-M"));
  }
  {
    GemmProblem p = ragged_m_problem();
    set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE);
    p.desc.rhs_layout = GG_LAYOUT_N;
    p.desc.rhs.shape[1] = gg_test::kK, p.desc.rhs.shape[2] = gg_test::kN;  // [G, K, N]
    EXPECT_THAT(skinny_refusal(p.desc), HasSubstr("weights [G, N, K]"));
  }
  {
    GemmProblem p = ragged_m_problem();
    set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
    p.desc.lhs.strides[0] = gg_test::kK + 4;  // bf16 rows of 72 bytes
    p.desc.lhs.strides[1] = 1;
    EXPECT_THAT(skinny_refusal(p.desc), HasSubstr("16-byte aligned rows"));
  }
  {
    GemmProblem p = ragged_m_problem();
    set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
    p.desc.lhs.shape[1] = 48, p.desc.rhs.shape[2] = 48;  // K 48: a chunk and a half of e2m1
    p.desc.rhs.strides[1] = 64, p.desc.rhs.strides[2] = 1;  // rows of 32 bytes
    p.desc.rhs.strides[0] = 64 * gg_test::kN;
    p.desc.lhs.strides[0] = 48, p.desc.lhs.strides[1] = 1;
    EXPECT_THAT(skinny_refusal(p.desc), HasSubstr("K a multiple of 16 (fp8) or 32 (e2m1)"));
  }
}

TEST(SkinnyChoice, ChosenWhereThePlanPicksItOnceVerified) {
  GemmProblem p = ragged_m_problem();  // 18 rows over 3 groups
  set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP);
  gg_gemm_desc normalized;
  ASSERT_EQ(gg::api::validate_gemm(&p.desc, &normalized), GG_STATUS_SUCCESS);
  const gg::GemmShape shape = gg::gemm_shape(normalized, 132, 90);
  ASSERT_TRUE(gg::plan_skinny(shape));
  {
    UnverifiedKernelsVariable opt_in("1");
    EXPECT_TRUE(gg::skinny::chosen(normalized, shape));
    gg::GemmShape tall = shape;
    tall.m = 33 * tall.groups;  // groups averaging 33 rows: the paths' tiles
    EXPECT_FALSE(gg::skinny::chosen(normalized, tall));
  }
  {
    UnverifiedKernelsVariable off(nullptr);
    EXPECT_FALSE(gg::skinny::chosen(normalized, shape));  // not yet run on a GPU
  }
}

}  // namespace
}  // namespace gg_test

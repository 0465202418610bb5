// Every check of the quantize descriptor, as gemm_validation_test.cpp does for
// the GEMM: a valid problem with one field broken, the status, and a message
// naming the field, through both the run and the workspace-size query.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "problems.h"

namespace gg_test {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* name;
  QuantizeProblem (*make)();
  void (*change)(QuantizeProblem& p);
  gg_status status;
  const char* message;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

constexpr gg_status kInvalid = GG_STATUS_INVALID_ARGUMENT;
constexpr gg_status kNotSupported = GG_STATUS_NOT_SUPPORTED;

void rowwise_only(QuantizeProblem& p, gg_dtype dtype, gg_block_scaling scaling,
                  gg_scale_extent extent) {
  set_format(&p.arena, &p.desc.rowwise, dtype, scaling, extent);
  p.desc.columnwise = gg_tensor{};
}

const Case kCases[] = {
    {"PathUnknown", ragged_quantize_problem, [](QuantizeProblem& p) { set_raw(&p.desc.path, 4); },
     kInvalid, "desc->path is not a gg_path (got 4)"},
    {"NumGroupsZero", ragged_quantize_problem, [](QuantizeProblem& p) { p.desc.num_groups = 0; },
     kInvalid, "desc->num_groups must be > 0 (got 0)"},
    {"StackedWithOffsets", stacked_quantize_problem,
     [](QuantizeProblem& p) { p.desc.group_sizes.offsets = p.arena.allocate(16); }, kInvalid,
     "desc->group_sizes.offsets must be NULL when desc->group_sizes.sizes is NULL"},
    {"SizesTypeUnknown", ragged_quantize_problem,
     [](QuantizeProblem& p) { set_raw(&p.desc.group_sizes.type, 2); }, kInvalid,
     "desc->group_sizes.type must be GG_INDEX_INT32 or GG_INDEX_INT64 (got 2)"},
    {"SizesMisaligned", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       p.desc.group_sizes.sizes = offset(const_cast<void*>(p.desc.group_sizes.sizes), 1);
     },
     kInvalid, "desc->group_sizes.sizes"},
    {"InputDataNull", ragged_quantize_problem,
     [](QuantizeProblem& p) { p.desc.input.data = nullptr; }, kInvalid, "desc->input.data is NULL"},
    {"RaggedInputRank3", ragged_quantize_problem, [](QuantizeProblem& p) { p.desc.input.rank = 3; },
     kInvalid, "desc->input.rank must be 2 (desc->input is [M, K] (ragged"},
    {"StackedInputRank2", stacked_quantize_problem,
     [](QuantizeProblem& p) { p.desc.input.rank = 2; }, kInvalid,
     "desc->input.rank must be 3 (desc->input is [G, N, K] (stacked"},
    {"InputFp8", ragged_quantize_problem,
     [](QuantizeProblem& p) { p.desc.input.dtype = GG_DTYPE_E4M3; }, kInvalid,
     "desc->input.dtype must be bf16, fp16 or fp32 (got e4m3)"},
    {"InputBlockScaled", ragged_quantize_problem,
     [](QuantizeProblem& p) { p.desc.input.block_scaling = GG_BLOCK_MX32; }, kInvalid,
     "desc->input.block_scaling must be GG_BLOCK_NONE for bf16 elements"},
    {"InputNegativeRows", ragged_quantize_problem,
     [](QuantizeProblem& p) { p.desc.input.shape[0] = -4; }, kInvalid,
     "desc->input.shape[0] must be >= 0 (got -4)"},
    {"InputInnerStride", stacked_quantize_problem,
     [](QuantizeProblem& p) { p.desc.input.strides[2] = 2; }, kInvalid,
     "desc->input.strides[2] must be 1 (inner dimension contiguous), got 2"},
    {"StackedGroupsMismatch", stacked_quantize_problem,
     [](QuantizeProblem& p) { p.desc.input.shape[0] = 2; }, kInvalid,
     "desc->input.shape[0] (2) must equal num_groups (3)"},
    {"NothingAskedFor", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       p.desc.rowwise.data = nullptr;
       p.desc.columnwise.data = nullptr;
       p.desc.amax = nullptr;
     },
     kInvalid, "desc asks for nothing"},
    {"RowwiseBf16", ragged_quantize_problem,
     [](QuantizeProblem& p) { rowwise_only(p, GG_DTYPE_BF16, GG_BLOCK_NONE, GG_SCALE_NONE); },
     kInvalid, "desc->rowwise.dtype must be e4m3, e5m2 or e2m1 (got bf16)"},
    {"RowwiseRankMismatch", ragged_quantize_problem,
     [](QuantizeProblem& p) { p.desc.rowwise.rank = 3; }, kInvalid, "desc->rowwise.rank must be 2"},
    {"RowwiseColsMismatch", ragged_quantize_problem,
     [](QuantizeProblem& p) { p.desc.rowwise.shape[1] = kK - 8; }, kInvalid,
     "desc->rowwise.shape[1] (24) must equal desc->input.shape[1] (32)"},
    {"RowwiseStackedRowsMismatch", stacked_quantize_problem,
     [](QuantizeProblem& p) { p.desc.rowwise.shape[1] = kN - 8; }, kInvalid,
     "desc->rowwise.shape[1] (16) must equal desc->input.shape[1] (24)"},
    {"RowwiseInnerStride", ragged_quantize_problem,
     [](QuantizeProblem& p) { p.desc.rowwise.strides[1] = 4; }, kInvalid,
     "desc->rowwise.strides[1] must be 1 (inner dimension contiguous), got 4"},
    {"ColumnwiseNotTransposed", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       p.desc.columnwise.shape[0] = kRows;
       p.desc.columnwise.shape[1] = kK;
     },
     kInvalid, "desc->columnwise.shape[0] (18) must equal K = desc->input.shape[1] (32)"},
    {"ColumnwiseTokensMismatch", ragged_quantize_problem,
     [](QuantizeProblem& p) { p.desc.columnwise.shape[1] = kRows + 2; }, kInvalid,
     "desc->columnwise.shape[1] (20) must equal M = desc->input.shape[0] (18)"},
    {"ColumnwiseStackedMismatch", stacked_quantize_problem,
     [](QuantizeProblem& p) {
       p.desc.columnwise =
           view(p.arena.allocate(kGroups * kN * kK * 4), GG_DTYPE_E4M3, {kGroups, kN, kK});
       set_format(&p.arena, &p.desc.columnwise, GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE);
     },
     kInvalid, "desc->columnwise.shape[1] (24) must equal K = desc->input.shape[2] (32)"},
    {"ColumnwiseStackedGroups", stacked_quantize_problem,
     [](QuantizeProblem& p) {
       p.desc.columnwise =
           view(p.arena.allocate(kGroups * kN * kK * 4), GG_DTYPE_E4M3, {kGroups + 1, kK, kN});
       set_format(&p.arena, &p.desc.columnwise, GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE);
     },
     kInvalid, "desc->columnwise.shape[0] (4) must equal num_groups (3)"},
    {"RowwiseBlockScalesNull", ragged_quantize_problem,
     [](QuantizeProblem& p) { p.desc.rowwise.block_scales = nullptr; }, kInvalid,
     "desc->rowwise.block_scales is NULL (block_scaling mx32 needs it)"},
    {"RowwiseScaleNull", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       rowwise_only(p, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
       p.desc.rowwise.scale = nullptr;
     },
     kInvalid, "desc->rowwise.scale is NULL (scale_extent tensor needs it)"},
    {"RowwiseNv16OnE4m3", ragged_quantize_problem,
     [](QuantizeProblem& p) { rowwise_only(p, GG_DTYPE_E4M3, GG_BLOCK_NV16, GG_SCALE_TENSOR); },
     kInvalid, "desc->rowwise.block_scaling nv16 needs dtype e2m1 (got e4m3)"},
    {"RowwiseScalingOnE2m1", ragged_quantize_problem,
     [](QuantizeProblem& p) { rowwise_only(p, GG_DTYPE_E2M1, GG_BLOCK_ROWWISE, GG_SCALE_NONE); },
     kInvalid, "desc->rowwise.block_scaling rowwise needs dtype e4m3 or e5m2 (got e2m1)"},
    {"Rowwise128x128OnRaggedInput", ragged_quantize_problem,
     [](QuantizeProblem& p) { rowwise_only(p, GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE); },
     kInvalid, "desc->rowwise.block_scaling 128x128 is only for non-ragged tensors"},
    {"Columnwise128x128OnRaggedInput", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       set_format(&p.arena, &p.desc.columnwise, GG_DTYPE_E5M2, GG_BLOCK_128X128, GG_SCALE_NONE);
     },
     kInvalid, "desc->columnwise.block_scaling 128x128 is only for non-ragged tensors"},
    {"RowwiseE2m1OddColumns", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       rowwise_only(p, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP);
       p.desc.input.shape[1] = p.desc.rowwise.shape[1] = kK - 1;
     },
     kInvalid, "desc->rowwise.shape[1] must be even for e2m1"},
    {"ColumnwiseE2m1OddTokens", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       p.desc.rowwise = gg_tensor{};
       set_format(&p.arena, &p.desc.columnwise, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP);
       p.desc.input.shape[0] = p.desc.columnwise.shape[1] = kRows - 1;
     },
     kInvalid, "desc->columnwise.shape[1] must be even for e2m1"},
    {"AmaxMisaligned", ragged_quantize_problem,
     [](QuantizeProblem& p) { p.desc.amax = reinterpret_cast<float*>(offset(p.desc.amax, 2)); },
     kInvalid, "desc->amax"},

    // Output formats without a quantization rule.
    {"Fp8WithoutScale", ragged_quantize_problem,
     [](QuantizeProblem& p) { rowwise_only(p, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_NONE); },
     kNotSupported, "desc->rowwise (fp8 e4m3, scale_extent none): grouped_quantize has no rule"},
    {"Nvfp4WithoutScale", ragged_quantize_problem,
     [](QuantizeProblem& p) { rowwise_only(p, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_NONE); },
     kNotSupported, "desc->rowwise (nvfp4, scale_extent none)"},
    {"Mxfp8WithTensorScale", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       set_format(&p.arena, &p.desc.columnwise, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_TENSOR);
     },
     kNotSupported, "desc->columnwise (mxfp8 e4m3 (tensor scale), scale_extent tensor)"},
    {"E2m1WithoutBlockScales", stacked_quantize_problem,
     [](QuantizeProblem& p) { rowwise_only(p, GG_DTYPE_E2M1, GG_BLOCK_NONE, GG_SCALE_TENSOR); },
     kNotSupported, "desc->rowwise (e2m1 (tensor scale), scale_extent tensor)"},
    {"Fp8RowwiseWithGroupScale", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       set_format(&p.arena, &p.desc.columnwise, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_GROUP);
     },
     kNotSupported, "desc->columnwise (fp8 e4m3 rowwise (group scales), scale_extent group)"},
};

class QuantizeValidation : public ::testing::TestWithParam<Case> {};

TEST_P(QuantizeValidation, RunFailsNamingTheField) {
  const Case& c = GetParam();
  QuantizeProblem p = c.make();
  c.change(p);
  HostWorkspace workspace;
  EXPECT_EQ(gg_grouped_quantize(&p.desc, workspace.data, workspace.bytes, nullptr), c.status);
  EXPECT_THAT(gg_last_error(), HasSubstr(c.message));
}

TEST_P(QuantizeValidation, WorkspaceQueryFailsTheSameWay) {
  const Case& c = GetParam();
  QuantizeProblem p = c.make();
  c.change(p);
  size_t bytes = 0;
  EXPECT_EQ(gg_grouped_quantize_workspace_size(&p.desc, &bytes), c.status);
  EXPECT_THAT(gg_last_error(), HasSubstr(c.message));
}

INSTANTIATE_TEST_SUITE_P(Api, QuantizeValidation, ::testing::ValuesIn(kCases),
                         [](const auto& test) { return std::string(test.param.name); });

struct ValidCase {
  const char* name;
  QuantizeProblem (*make)();
  void (*change)(QuantizeProblem& p);
};

void PrintTo(const ValidCase& c, std::ostream* os) { *os << c.name; }

const ValidCase kValidCases[] = {
    {"RaggedMxfp8BothWays", ragged_quantize_problem, [](QuantizeProblem&) {}},
    {"Stacked128x128", stacked_quantize_problem, [](QuantizeProblem&) {}},
    {"AmaxOnly", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       p.desc.rowwise = gg_tensor{};
       p.desc.columnwise = gg_tensor{};
     }},
    {"Mxfp4BothWays", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       set_format(&p.arena, &p.desc.rowwise, GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE);
       set_format(&p.arena, &p.desc.columnwise, GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE);
     }},
    {"Fp8RowwiseBothWays", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       set_format(&p.arena, &p.desc.rowwise, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
       set_format(&p.arena, &p.desc.columnwise, GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
     }},
    {"Fp8RowwiseStacked", stacked_quantize_problem,
     [](QuantizeProblem& p) { rowwise_only(p, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE); }},
    {"Nvfp4GroupScales", ragged_quantize_problem,
     [](QuantizeProblem& p) { rowwise_only(p, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP); }},
    {"Fp8TensorScaleFp32Input", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       p.desc.input.dtype = GG_DTYPE_FP32;
       rowwise_only(p, GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_TENSOR);
     }},
    {"EmptyInputWithoutAddresses", ragged_quantize_problem,
     [](QuantizeProblem& p) {
       p.desc.input.shape[0] = p.desc.rowwise.shape[0] = p.desc.columnwise.shape[1] = 0;
       p.desc.input.data = nullptr;
       p.desc.rowwise.block_scales = p.desc.columnwise.block_scales = nullptr;
     }},
    {"Columnwise1x128Stacked", stacked_quantize_problem,
     [](QuantizeProblem& p) {
       p.desc.columnwise =
           view(p.arena.allocate(kGroups * kN * kK * 4), GG_DTYPE_E4M3, {kGroups, kK, kN});
       set_format(&p.arena, &p.desc.columnwise, GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE);
     }},
};

class QuantizeValid : public ::testing::TestWithParam<ValidCase> {};

TEST_P(QuantizeValid, WorkspaceQuerySucceeds) {
  QuantizeProblem p = GetParam().make();
  GetParam().change(p);
  size_t bytes = 0;
  EXPECT_EQ(gg_grouped_quantize_workspace_size(&p.desc, &bytes), GG_STATUS_SUCCESS)
      << gg_last_error();
  EXPECT_EQ(bytes, 256u);
  EXPECT_STREQ(gg_last_error(), "");
}

INSTANTIATE_TEST_SUITE_P(Api, QuantizeValid, ::testing::ValuesIn(kValidCases),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(QuantizeValidationArguments, NullDescriptorAndBytes) {
  size_t bytes = 0;
  EXPECT_EQ(gg_grouped_quantize_workspace_size(nullptr, &bytes), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(gg_last_error(), "desc is NULL");
  QuantizeProblem p = ragged_quantize_problem();
  EXPECT_EQ(gg_grouped_quantize_workspace_size(&p.desc, nullptr), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(gg_last_error(), "bytes is NULL");
}

TEST(QuantizeWorkspace, TooSmallNamesTheNeededBytes) {
  QuantizeProblem p = ragged_quantize_problem();
  HostWorkspace workspace;
  EXPECT_EQ(gg_grouped_quantize(&p.desc, workspace.data, 100, nullptr),
            GG_STATUS_WORKSPACE_TOO_SMALL);
  EXPECT_THAT(gg_last_error(), HasSubstr("workspace_bytes (100) is too small"));
  EXPECT_THAT(gg_last_error(), HasSubstr("needs 256 bytes"));
  EXPECT_EQ(gg_grouped_quantize(&p.desc, nullptr, 256, nullptr), GG_STATUS_WORKSPACE_TOO_SMALL);
  EXPECT_THAT(gg_last_error(), HasSubstr("workspace is NULL"));
}


// Every GPU path runs the quantize kernel; its workspace adds the amax words
// to the flags, with or without a device to run on.
TEST(QuantizeGpuPaths, ExplicitPathsSizeTheirWorkspace) {
  for (gg_path path : {GG_PATH_PORTABLE, GG_PATH_SM90}) {
    QuantizeProblem p = ragged_quantize_problem();
    p.desc.path = path;
    size_t bytes = 0;
    EXPECT_EQ(gg_grouped_quantize_workspace_size(&p.desc, &bytes), GG_STATUS_SUCCESS)
        << gg_last_error();
    EXPECT_EQ(bytes, 256u + 4u * (static_cast<size_t>(p.desc.num_groups) + 1u));
  }
}

TEST(QuantizeGpuPaths, WithoutADeviceTheRunSaysSo) {
  int available = 0;
  ASSERT_EQ(gg_path_available(GG_PATH_PORTABLE, 0, &available), GG_STATUS_SUCCESS);
  if (available) GTEST_SKIP() << "a GPU is present: the GPU suites run the kernel";
  for (gg_path path : {GG_PATH_AUTO, GG_PATH_PORTABLE, GG_PATH_SM90}) {
    QuantizeProblem p = stacked_quantize_problem();
    p.desc.path = path;
    HostWorkspace workspace;
    // A workspace big enough for the GPU paths, so the device is what fails.
    void* data = workspace.arena.allocate(4096);
    EXPECT_EQ(gg_grouped_quantize(&p.desc, data, 4096, nullptr), GG_STATUS_NO_DEVICE);
    EXPECT_STRNE(gg_last_error(), "");
  }
}

}  // namespace
}  // namespace gg_test

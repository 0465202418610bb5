// Every check of the GEMM descriptor: one case per message, each a valid
// problem with one field broken, expecting the status and a message naming
// the field. The workspace-size query validates the same descriptor, so each
// case runs through both entry points. Valid variants (formats, pointer
// arrays, padded strides, empty dimensions) must pass.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <math.h>

#include <string>

#include "api/validate.h"
#include "problems.h"

namespace gg_test {
namespace {

using ::testing::HasSubstr;

struct Case {
  const char* name;
  GemmProblem (*make)();
  void (*change)(GemmProblem& p);
  gg_status status;
  const char* message;  // a part of gg_last_error()
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

constexpr gg_status kInvalid = GG_STATUS_INVALID_ARGUMENT;
constexpr gg_status kNotSupported = GG_STATUS_NOT_SUPPORTED;

// ragged-M with fp8 operands of the given block scaling on both sides.
void both_operands(GemmProblem& p, gg_dtype dtype, gg_block_scaling scaling,
                   gg_scale_extent extent) {
  set_format(&p.arena, &p.desc.lhs, dtype, scaling, extent);
  set_format(&p.arena, &p.desc.rhs, dtype, scaling, extent);
}

const Case kCases[] = {
    // The descriptor's own fields.
    {"OpUnknown", ragged_m_problem, [](GemmProblem& p) { set_raw(&p.desc.op, 7); }, kInvalid,
     "desc->op is not a gg_op (got 7)"},
    {"PathUnknown", ragged_m_problem, [](GemmProblem& p) { set_raw(&p.desc.path, 9); }, kInvalid,
     "desc->path is not a gg_path (got 9)"},
    {"LhsLayoutUnknown", ragged_m_problem, [](GemmProblem& p) { set_raw(&p.desc.lhs_layout, 2); },
     kInvalid, "desc->lhs_layout is not a gg_layout"},
    {"RhsLayoutUnknown", ragged_m_problem, [](GemmProblem& p) { set_raw(&p.desc.rhs_layout, -1); },
     kInvalid, "desc->rhs_layout is not a gg_layout"},
    {"RaggedMLhsTransposed", ragged_m_problem,
     [](GemmProblem& p) { p.desc.lhs_layout = GG_LAYOUT_T; }, kInvalid,
     "desc->lhs_layout must be GG_LAYOUT_N for ragged-M"},
    {"FlagsUnknown", ragged_m_problem, [](GemmProblem& p) { p.desc.flags = 6; }, kInvalid,
     "desc->flags has unknown bits (0x6)"},
    {"ZeroUnusedRowsRaggedK", ragged_k_problem,
     [](GemmProblem& p) { p.desc.flags = GG_GEMM_ZERO_UNUSED_ROWS; }, kInvalid,
     "desc->flags: GG_GEMM_ZERO_UNUSED_ROWS is for ragged-M"},
    {"ZeroUnusedRowsWithOffsets", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.flags = GG_GEMM_ZERO_UNUSED_ROWS;
       p.desc.group_sizes.offsets = p.arena.allocate(kGroups * 4);
     },
     kInvalid, "GG_GEMM_ZERO_UNUSED_ROWS needs desc->group_sizes.offsets NULL"},
    {"NumGroupsZero", ragged_m_problem, [](GemmProblem& p) { p.desc.num_groups = 0; }, kInvalid,
     "desc->num_groups must be > 0 (got 0)"},
    {"NumGroupsNegativeRaggedK", ragged_k_problem, [](GemmProblem& p) { p.desc.num_groups = -2; },
     kInvalid, "desc->num_groups must be > 0 (got -2)"},
    {"SizesNull", ragged_m_problem, [](GemmProblem& p) { p.desc.group_sizes.sizes = nullptr; },
     kInvalid, "desc->group_sizes.sizes is NULL"},
    {"SizesNullRaggedK", ragged_k_problem,
     [](GemmProblem& p) { p.desc.group_sizes.sizes = nullptr; }, kInvalid,
     "desc->group_sizes.sizes is NULL"},
    {"SizesTypeUnknown", ragged_m_problem,
     [](GemmProblem& p) { set_raw(&p.desc.group_sizes.type, 5); }, kInvalid,
     "desc->group_sizes.type must be GG_INDEX_INT32 or GG_INDEX_INT64 (got 5)"},
    {"SizesMisaligned", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.group_sizes.sizes = offset(const_cast<void*>(p.desc.group_sizes.sizes), 2);
     },
     kInvalid, "desc->group_sizes.sizes"},
    {"OffsetsMisalignedInt64", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.group_sizes.type = GG_INDEX_INT64;
       p.desc.group_sizes.offsets = offset(p.arena.allocate(64), 4);
     },
     kInvalid, "desc->group_sizes.offsets"},

    // One tensor at a time: pointers, dtypes, ranks, shapes, flags, strides.
    {"LhsDataNull", ragged_m_problem, [](GemmProblem& p) { p.desc.lhs.data = nullptr; }, kInvalid,
     "desc->lhs.data is NULL"},
    {"RhsDataNull", ragged_m_problem, [](GemmProblem& p) { p.desc.rhs.data = nullptr; }, kInvalid,
     "desc->rhs.data is NULL"},
    {"OutDataNull", ragged_m_problem, [](GemmProblem& p) { p.desc.out.data = nullptr; }, kInvalid,
     "desc->out.data is NULL"},
    {"OutDataNullRaggedK", ragged_k_problem, [](GemmProblem& p) { p.desc.out.data = nullptr; },
     kInvalid, "desc->out.data is NULL"},
    {"LhsDataMisalignedForBf16", ragged_m_problem,
     [](GemmProblem& p) { p.desc.lhs.data = offset(p.desc.lhs.data, 1); }, kInvalid,
     "desc->lhs.data"},
    {"OutDataMisalignedForFp32", ragged_k_problem,
     [](GemmProblem& p) { p.desc.out.data = offset(p.desc.out.data, 2); }, kInvalid,
     "desc->out.data"},
    {"LhsDtypeUnknown", ragged_m_problem, [](GemmProblem& p) { set_raw(&p.desc.lhs.dtype, 6); },
     kInvalid, "desc->lhs.dtype is not a gg_dtype (got 6)"},
    {"LhsRank3", ragged_m_problem, [](GemmProblem& p) { p.desc.lhs.rank = 3; }, kInvalid,
     "desc->lhs.rank must be 2"},
    {"RhsRank2", ragged_m_problem, [](GemmProblem& p) { p.desc.rhs.rank = 2; }, kInvalid,
     "desc->rhs.rank must be 3"},
    {"OutRank2RaggedK", ragged_k_problem, [](GemmProblem& p) { p.desc.out.rank = 2; }, kInvalid,
     "desc->out.rank must be 3"},
    {"LhsRowsNegative", ragged_m_problem, [](GemmProblem& p) { p.desc.lhs.shape[0] = -1; },
     kInvalid, "desc->lhs.shape[0] must be >= 0 (got -1)"},
    {"RhsColsNegative", ragged_m_problem, [](GemmProblem& p) { p.desc.rhs.shape[2] = -5; },
     kInvalid, "desc->rhs.shape[2] must be >= 0 (got -5)"},
    {"RhsRowsNegativeRaggedK", ragged_k_problem, [](GemmProblem& p) { p.desc.rhs.shape[0] = -3; },
     kInvalid, "desc->rhs.shape[0] must be >= 0 (got -3)"},
    {"LhsUnknownFlags", ragged_m_problem, [](GemmProblem& p) { p.desc.lhs.flags = 4; }, kInvalid,
     "desc->lhs.flags has unknown bits 0x4"},
    {"LhsPointerArray", ragged_m_problem,
     [](GemmProblem& p) { p.desc.lhs.flags = GG_TENSOR_POINTER_ARRAY; }, kInvalid,
     "desc->lhs.flags: GG_TENSOR_POINTER_ARRAY is only allowed"},
    {"OutPointerArrayRaggedM", ragged_m_problem,
     [](GemmProblem& p) { p.desc.out.flags = GG_TENSOR_POINTER_ARRAY; }, kInvalid,
     "desc->out.flags: GG_TENSOR_POINTER_ARRAY"},
    {"RhsPointerArrayRaggedK", ragged_k_problem,
     [](GemmProblem& p) { p.desc.rhs.flags = GG_TENSOR_POINTER_ARRAY; }, kInvalid,
     "desc->rhs.flags: GG_TENSOR_POINTER_ARRAY"},
    {"PointerArrayMisaligned", ragged_m_problem,
     [](GemmProblem& p) {
       make_pointer_array(&p.arena, &p.desc.rhs);
       p.desc.rhs.data = offset(p.desc.rhs.data, 4);
     },
     kInvalid, "desc->rhs.data"},
    {"LhsInnerStride2", ragged_m_problem, [](GemmProblem& p) { p.desc.lhs.strides[1] = 2; },
     kInvalid, "desc->lhs.strides[1] must be 1 (inner dimension contiguous), got 2"},
    {"RhsInnerStride3RaggedK", ragged_k_problem, [](GemmProblem& p) { p.desc.rhs.strides[1] = 3; },
     kInvalid, "desc->rhs.strides[1] must be 1 (inner dimension contiguous), got 3"},
    {"LhsStrideNegative", ragged_m_problem, [](GemmProblem& p) { p.desc.lhs.strides[0] = -32; },
     kInvalid, "desc->lhs.strides[0] must be >= 0"},
    {"LhsRowsOverlap", ragged_m_problem, [](GemmProblem& p) { p.desc.lhs.strides[0] = 16; },
     kInvalid, "desc->lhs.strides[0] (16) must be >= shape[1] * strides[1] (32)"},
    {"RhsMatricesOverlap", ragged_m_problem,
     [](GemmProblem& p) { p.desc.rhs.strides[0] = kN * kK - 1; }, kInvalid, "desc->rhs.strides[0]"},
    {"OutRowsOverlapRaggedK", ragged_k_problem,
     [](GemmProblem& p) { p.desc.out.strides[1] = kQ - 8; }, kInvalid, "desc->out.strides[1]"},
    {"ShapeOverflow", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.rhs.shape[0] = int64_t{1} << 40;
       p.desc.rhs.shape[1] = int64_t{1} << 40;
     },
     kInvalid, "desc->rhs.shape"},

    {"StrideOverflow", ragged_m_problem,
     [](GemmProblem& p) { p.desc.lhs.strides[0] = int64_t{1} << 60; }, kInvalid,
     "desc->lhs: its last element lies more than 2^61 elements past desc->lhs.data"},

    // Shapes that tie the tensors together.
    {"RhsGroupsMismatch", ragged_m_problem, [](GemmProblem& p) { p.desc.rhs.shape[0] = 2; },
     kInvalid, "desc->rhs.shape[0] (2) must equal num_groups (3)"},
    {"RhsKMismatchLayoutT", ragged_m_problem, [](GemmProblem& p) { p.desc.rhs.shape[2] = kK - 8; },
     kInvalid, "desc->rhs.shape[2] (24) must equal K = desc->lhs.shape[1] (32)"},
    {"RhsKMismatchLayoutN", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.rhs_layout = GG_LAYOUT_N;  // [G, K, N] = [3, 24, 32]: K is 24, not 32
     },
     kInvalid, "desc->rhs.shape[1] (24) must equal K = desc->lhs.shape[1] (32)"},
    {"OutRowsMismatch", ragged_m_problem, [](GemmProblem& p) { p.desc.out.shape[0] = kRows - 1; },
     kInvalid, "desc->out.shape[0] (17) must equal M = desc->lhs.shape[0] (18)"},
    {"OutColsMismatch", ragged_m_problem, [](GemmProblem& p) { p.desc.out.shape[1] = 8; }, kInvalid,
     "desc->out.shape[1] (8) must equal N = desc->rhs.shape[1] (24)"},
    {"RaggedKRowsMismatch", ragged_k_problem, [](GemmProblem& p) { p.desc.rhs.shape[0] = 16; },
     kInvalid, "desc->rhs.shape[0] (16) must equal M = desc->lhs.shape[0] (18)"},
    {"RaggedKRowsMismatchLhsT", ragged_k_problem,
     [](GemmProblem& p) {
       p.desc.lhs_layout = GG_LAYOUT_T;  // lhs [P, M] = [18, 32]: M is 32
     },
     kInvalid, "desc->rhs.shape[0] (18) must equal M = desc->lhs.shape[1] (32)"},
    {"RaggedKOutGroups", ragged_k_problem, [](GemmProblem& p) { p.desc.out.shape[0] = 4; },
     kInvalid, "desc->out.shape[0] (4) must equal num_groups (3)"},
    {"RaggedKOutP", ragged_k_problem, [](GemmProblem& p) { p.desc.out.shape[1] = 8; }, kInvalid,
     "desc->out.shape[1] (8) must equal P = desc->lhs.shape[1] (32)"},
    {"RaggedKOutQ", ragged_k_problem, [](GemmProblem& p) { p.desc.out.shape[2] = 8; }, kInvalid,
     "desc->out.shape[2] (8) must equal Q = desc->rhs.shape[1] (24)"},
    {"RaggedKOutQRhsT", ragged_k_problem,
     [](GemmProblem& p) {
       p.desc.rhs = view(p.desc.rhs.data, GG_DTYPE_BF16, {kQ, kRows});
       p.desc.rhs_layout = GG_LAYOUT_T;
       p.desc.out.shape[2] = 8;
     },
     kInvalid, "desc->out.shape[2] (8) must equal Q = desc->rhs.shape[0] (24)"},

    // Bias.
    {"BiasGroupsMismatch", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.bias = view(p.arena.allocate(4096), GG_DTYPE_FP32, {2, kN});
     },
     kInvalid, "desc->bias.shape[0] (2) must equal num_groups (3)"},
    {"BiasColsMismatch", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.bias = view(p.arena.allocate(4096), GG_DTYPE_FP32, {kGroups, kN + 8});
     },
     kInvalid, "desc->bias.shape[1] (32) must equal N = desc->rhs.shape[1] (24)"},
    {"BiasRank3", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.bias = view(p.arena.allocate(4096), GG_DTYPE_FP32, {kGroups, 1, kN});
     },
     kInvalid, "desc->bias.rank must be 2"},
    {"BiasFp8", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.bias = view(p.arena.allocate(4096), GG_DTYPE_E4M3, {kGroups, kN});
     },
     kInvalid, "desc->bias.dtype must be bf16, fp16 or fp32 (got e4m3)"},
    {"BiasOnRaggedK", ragged_k_problem,
     [](GemmProblem& p) {
       p.desc.bias = view(p.arena.allocate(4096), GG_DTYPE_FP32, {kGroups, kQ});
     },
     kInvalid, "desc->bias.data must be NULL for ragged-K"},

    // Formats.
    {"OutFp8", ragged_m_problem, [](GemmProblem& p) { p.desc.out.dtype = GG_DTYPE_E4M3; }, kInvalid,
     "desc->out.dtype must be bf16, fp16 or fp32"},
    {"OutE2m1RaggedK", ragged_k_problem, [](GemmProblem& p) { p.desc.out.dtype = GG_DTYPE_E2M1; },
     kInvalid, "desc->out.dtype must be bf16, fp16 or fp32"},
    {"OutBlockScaled", ragged_m_problem,
     [](GemmProblem& p) { p.desc.out.block_scaling = GG_BLOCK_MX32; }, kInvalid,
     "desc->out.block_scaling must be GG_BLOCK_NONE for bf16 elements"},
    {"Bf16BlockScaled", ragged_m_problem,
     [](GemmProblem& p) { p.desc.lhs.block_scaling = GG_BLOCK_1X128; }, kInvalid,
     "desc->lhs.block_scaling must be GG_BLOCK_NONE for bf16 elements (got 1x128)"},
    {"Fp16WithScale", ragged_k_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_FP16, GG_BLOCK_NONE, GG_SCALE_TENSOR);
     },
     kInvalid, "desc->rhs.scale_extent must be GG_SCALE_NONE for fp16 elements (got tensor)"},
    {"BlockScalingUnknown", ragged_m_problem,
     [](GemmProblem& p) {
       both_operands(p, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_NONE);
       set_raw(&p.desc.lhs.block_scaling, 8);
     },
     kInvalid, "desc->lhs.block_scaling is not a gg_block_scaling (got 8)"},
    {"ScaleExtentUnknown", ragged_m_problem,
     [](GemmProblem& p) {
       both_operands(p, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_NONE);
       set_raw(&p.desc.rhs.scale_extent, 3);
     },
     kInvalid, "desc->rhs.scale_extent is not a gg_scale_extent (got 3)"},
    {"RowwiseOnE2m1", ragged_m_problem,
     [](GemmProblem& p) { both_operands(p, GG_DTYPE_E2M1, GG_BLOCK_ROWWISE, GG_SCALE_NONE); },
     kInvalid, "desc->lhs.block_scaling rowwise needs dtype e4m3 or e5m2 (got e2m1)"},
    {"RowwiseOnBf16", ragged_k_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_BF16, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
     },
     kInvalid, "desc->rhs.block_scaling must be GG_BLOCK_NONE for bf16 elements (got rowwise)"},
    {"RowwiseBlockScalesMisaligned", ragged_k_problem,
     [](GemmProblem& p) {
       both_operands(p, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
       p.desc.rhs.block_scales = offset(p.desc.rhs.block_scales, 2);
     },
     kInvalid, "desc->rhs.block_scales"},
    {"Nv16OnE4m3", ragged_k_problem,
     [](GemmProblem& p) { both_operands(p, GG_DTYPE_E4M3, GG_BLOCK_NV16, GG_SCALE_TENSOR); },
     kInvalid, "desc->lhs.block_scaling nv16 needs dtype e2m1 (got e4m3)"},
    {"Blockwise1x128OnE2m1", ragged_m_problem,
     [](GemmProblem& p) { both_operands(p, GG_DTYPE_E2M1, GG_BLOCK_1X128, GG_SCALE_NONE); },
     kInvalid, "desc->lhs.block_scaling 1x128 needs dtype e4m3 or e5m2 (got e2m1)"},
    {"Blockwise128x128OnRaggedLhs", ragged_m_problem,
     [](GemmProblem& p) { both_operands(p, GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE); },
     kInvalid, "desc->lhs.block_scaling 128x128 is only for non-ragged tensors"},
    {"Blockwise128x128OnRaggedKRhs", ragged_k_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE);
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE);
     },
     kInvalid, "desc->rhs.block_scaling 128x128 is only for non-ragged tensors"},
    {"BlockScalesNull", ragged_m_problem,
     [](GemmProblem& p) {
       both_operands(p, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
       p.desc.rhs.block_scales = nullptr;
     },
     kInvalid, "desc->rhs.block_scales is NULL (block_scaling mx32 needs it)"},
    {"BlockScalesNullRaggedK", ragged_k_problem,
     [](GemmProblem& p) {
       both_operands(p, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
       p.desc.lhs.block_scales = nullptr;
     },
     kInvalid, "desc->lhs.block_scales is NULL"},
    {"Fp32BlockScalesMisaligned", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE);
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE);
       p.desc.lhs.block_scales = offset(p.desc.lhs.block_scales, 2);
     },
     kInvalid, "desc->lhs.block_scales"},
    {"ScaleNull", ragged_m_problem,
     [](GemmProblem& p) {
       both_operands(p, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP);
       p.desc.lhs.scale = nullptr;
     },
     kInvalid, "desc->lhs.scale is NULL (scale_extent group needs it)"},
    {"ScaleMisaligned", ragged_k_problem,
     [](GemmProblem& p) {
       both_operands(p, GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_TENSOR);
       p.desc.rhs.scale = reinterpret_cast<float*>(offset(p.desc.rhs.scale, 1));
     },
     kInvalid, "desc->rhs.scale"},
    {"E2m1OddColumns", ragged_m_problem,
     [](GemmProblem& p) {
       both_operands(p, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
       p.desc.lhs.shape[1] = kK - 1;
     },
     kInvalid, "desc->lhs.shape[1] must be even for e2m1 (two elements per byte), got 31"},
    {"E2m1OddRowStride", ragged_k_problem,
     [](GemmProblem& p) {
       both_operands(p, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
       p.desc.rhs.strides[0] = kQ + 1;
     },
     kInvalid, "desc->rhs.strides[0] must be even for e2m1"},

    // Scalars.
    {"AlphaInfinite", ragged_m_problem, [](GemmProblem& p) { p.desc.alpha.value = INFINITY; },
     kInvalid, "desc->alpha.value must be finite"},
    {"BetaNan", ragged_k_problem, [](GemmProblem& p) { p.desc.beta.value = NAN; }, kInvalid,
     "desc->beta.value must be finite"},
    {"AlphaPerGroupMisaligned", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.alpha.per_group = static_cast<const float*>(offset(p.arena.allocate(16), 2));
     },
     kInvalid, "desc->alpha.per_group"},

    // Expressible, not implemented.
    {"Bf16TimesFp16", ragged_m_problem, [](GemmProblem& p) { p.desc.rhs.dtype = GG_DTYPE_FP16; },
     kNotSupported, "desc->lhs (bf16) x desc->rhs (fp16): operands of different formats"},
    {"Fp32Operands", ragged_k_problem,
     [](GemmProblem& p) {
       p.desc.lhs.dtype = GG_DTYPE_FP32;
       p.desc.rhs.dtype = GG_DTYPE_FP32;
     },
     kNotSupported, "desc->lhs.dtype fp32: fp32 operands are not supported"},
    {"E2m1WithoutBlockScales", ragged_m_problem,
     [](GemmProblem& p) { both_operands(p, GG_DTYPE_E2M1, GG_BLOCK_NONE, GG_SCALE_TENSOR); },
     kNotSupported, "desc->lhs: e2m1 without block scales is not supported"},
    {"Mxfp8TimesFp8", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
     },
     kNotSupported, "desc->lhs (mxfp8 e4m3) x desc->rhs (fp8 e4m3 (tensor scale))"},
    {"Bf16TimesNvfp4", ragged_k_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP);
     },
     kNotSupported, "desc->lhs (bf16) x desc->rhs (nvfp4 (group scales))"},
    {"RowwiseTimesFp8TensorScale", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
     },
     kNotSupported,
     "desc->lhs (fp8 e4m3 rowwise) x desc->rhs (fp8 e4m3 (tensor scale)): operands of "
     "different formats are not supported (quantized operands follow one recipe"},
    {"RowwiseTimes1x128RaggedK", ragged_k_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE);
     },
     kNotSupported, "desc->lhs (fp8 e5m2 rowwise) x desc->rhs (fp8 e4m3 1x128)"},
    {"Mxfp4TimesNvfp4", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE);
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
     },
     kNotSupported, "desc->lhs (mxfp4) x desc->rhs (nvfp4 (tensor scale))"},
    {"QuantizedLhsTimesBf16", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
     },
     kNotSupported,
     "desc->lhs (mxfp8 e4m3) x desc->rhs (bf16): a quantized lhs needs a quantized rhs"},
    {"WeightOnlyRaggedK", ragged_k_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
     },
     kNotSupported,
     "desc->lhs (bf16) x desc->rhs (fp8 e4m3 rowwise): weight-only (16-bit lhs, quantized rhs) "
     "is for ragged-M"},
    {"WeightOnlyRaggedKMxfp4", ragged_k_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE);
     },
     kNotSupported, "desc->lhs (bf16) x desc->rhs (mxfp4): weight-only"},
    {"WeightOnlyBlockwise", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE);
     },
     kNotSupported,
     "desc->lhs (bf16) x desc->rhs (fp8 e4m3 128x128): weight-only takes fp8 with a tensor or "
     "group scale, fp8 rowwise, mxfp8, mxfp4 or nvfp4 weights"},
};

class GemmValidation : public ::testing::TestWithParam<Case> {};

TEST_P(GemmValidation, RunFailsNamingTheField) {
  const Case& c = GetParam();
  GemmProblem p = c.make();
  c.change(p);
  HostWorkspace workspace;
  EXPECT_EQ(gg_grouped_gemm(&p.desc, workspace.data, workspace.bytes, nullptr), c.status);
  EXPECT_THAT(gg_last_error(), HasSubstr(c.message));
}

TEST_P(GemmValidation, WorkspaceQueryFailsTheSameWay) {
  const Case& c = GetParam();
  GemmProblem p = c.make();
  c.change(p);
  size_t bytes = 0;
  EXPECT_EQ(gg_grouped_gemm_workspace_size(&p.desc, &bytes), c.status);
  EXPECT_THAT(gg_last_error(), HasSubstr(c.message));
}

INSTANTIATE_TEST_SUITE_P(Api, GemmValidation, ::testing::ValuesIn(kCases),
                         [](const auto& test) { return std::string(test.param.name); });

// Valid problems: the workspace query succeeds with the reference's size,
// the flags word and nothing else.
struct ValidCase {
  const char* name;
  GemmProblem (*make)();
  void (*change)(GemmProblem& p);
};

void PrintTo(const ValidCase& c, std::ostream* os) { *os << c.name; }

const ValidCase kValidCases[] = {
    {"RaggedMBf16", ragged_m_problem, [](GemmProblem&) {}},
    {"RaggedKBf16", ragged_k_problem, [](GemmProblem&) {}},
    {"RaggedMRhsLayoutN", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.rhs = view(p.desc.rhs.data, GG_DTYPE_BF16, {kGroups, kK, kN});
       p.desc.rhs_layout = GG_LAYOUT_N;
     }},
    {"RaggedKBothTransposed", ragged_k_problem,
     [](GemmProblem& p) {
       p.desc.lhs = view(p.desc.lhs.data, GG_DTYPE_BF16, {kP, kRows});
       p.desc.rhs = view(p.desc.rhs.data, GG_DTYPE_BF16, {kQ, kRows});
       p.desc.lhs_layout = GG_LAYOUT_T;
       p.desc.rhs_layout = GG_LAYOUT_T;
     }},
    {"Fp16Int64Sizes", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.lhs.dtype = p.desc.rhs.dtype = p.desc.out.dtype = GG_DTYPE_FP16;
       p.desc.group_sizes.sizes = p.arena.allocate(kGroups * 8);
       p.desc.group_sizes.offsets = p.arena.allocate(kGroups * 8);
       p.desc.group_sizes.type = GG_INDEX_INT64;
     }},
    {"RhsPointerArray", ragged_m_problem,
     [](GemmProblem& p) { make_pointer_array(&p.arena, &p.desc.rhs); }},
    {"ZeroUnusedRows", ragged_m_problem,
     [](GemmProblem& p) { p.desc.flags = GG_GEMM_ZERO_UNUSED_ROWS; }},
    {"OutPointerArrayRaggedK", ragged_k_problem,
     [](GemmProblem& p) { make_pointer_array(&p.arena, &p.desc.out); }},
    {"PaddedStrides", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.lhs.strides[0] = kK + 8;
       p.desc.rhs.strides[1] = kK + 16;
       p.desc.rhs.strides[0] = kN * (kK + 16);
       p.desc.out.strides[0] = kN + 8;
     }},
    {"EmptyDimensions", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.lhs.shape[0] = p.desc.out.shape[0] = 0;
       p.desc.lhs.shape[1] = p.desc.rhs.shape[2] = 0;
     }},
    {"EmptyTensorsWithoutAddresses", ragged_m_problem,
     [](GemmProblem& p) {
       both_operands(p, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
       p.desc.lhs.shape[0] = p.desc.out.shape[0] = 0;
       p.desc.lhs.data = p.desc.out.data = p.desc.lhs.block_scales = nullptr;
     }},
    {"Fp8PerTensorE4m3TimesE5m2", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_GROUP);
     }},
    {"Fp8Unscaled", ragged_k_problem,
     [](GemmProblem& p) { both_operands(p, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_NONE); }},
    {"Mxfp8", ragged_k_problem,
     [](GemmProblem& p) { both_operands(p, GG_DTYPE_E5M2, GG_BLOCK_MX32, GG_SCALE_NONE); }},
    {"Nvfp4", ragged_m_problem,
     [](GemmProblem& p) { both_operands(p, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR); }},
    {"Mxfp4", ragged_m_problem,
     [](GemmProblem& p) { both_operands(p, GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE); }},
    {"Mxfp8TimesMxfp4RaggedK", ragged_k_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E5M2, GG_BLOCK_MX32, GG_SCALE_NONE);
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE);
     }},
    {"Fp8RowwiseE4m3TimesE5m2", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
     }},
    {"Fp8RowwiseRaggedK", ragged_k_problem,
     [](GemmProblem& p) { both_operands(p, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE); }},
    {"WeightOnlyBf16TimesFp8Group", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP);
     }},
    {"WeightOnlyBf16TimesFp8Rowwise", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
     }},
    {"WeightOnlyFp16TimesMxfp8", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.lhs.dtype = p.desc.out.dtype = GG_DTYPE_FP16;
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E5M2, GG_BLOCK_MX32, GG_SCALE_NONE);
     }},
    {"WeightOnlyBf16TimesMxfp4", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE);
     }},
    {"WeightOnlyBf16TimesNvfp4", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
     }},
    {"Blockwise1x128Times128x128", ragged_m_problem,
     [](GemmProblem& p) {
       set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE);
       set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE);
     }},
    {"BiasFp32", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.bias = view(p.arena.allocate(4096), GG_DTYPE_FP32, {kGroups, kN});
     }},
    {"InfiniteAlphaIgnoredPerGroup", ragged_m_problem,
     [](GemmProblem& p) {
       p.desc.alpha.value = INFINITY;
       p.desc.alpha.per_group = static_cast<const float*>(p.arena.allocate(16));
     }},
};

class GemmValid : public ::testing::TestWithParam<ValidCase> {};

TEST_P(GemmValid, WorkspaceQuerySucceeds) {
  GemmProblem p = GetParam().make();
  GetParam().change(p);
  size_t bytes = 0;
  EXPECT_EQ(gg_grouped_gemm_workspace_size(&p.desc, &bytes), GG_STATUS_SUCCESS) << gg_last_error();
  EXPECT_EQ(bytes, 256u);
  EXPECT_STREQ(gg_last_error(), "");
}

INSTANTIATE_TEST_SUITE_P(Api, GemmValid, ::testing::ValuesIn(kValidCases),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(GemmValidationArguments, NullDescriptor) {
  size_t bytes = 0;
  EXPECT_EQ(gg_grouped_gemm_workspace_size(nullptr, &bytes), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(gg_last_error(), "desc is NULL");
  HostWorkspace workspace;
  EXPECT_EQ(gg_grouped_gemm(nullptr, workspace.data, workspace.bytes, nullptr),
            GG_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(gg_last_error(), "desc is NULL");
}

TEST(GemmValidationArguments, NullBytes) {
  GemmProblem p = ragged_m_problem();
  EXPECT_EQ(gg_grouped_gemm_workspace_size(&p.desc, nullptr), GG_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(gg_last_error(), "bytes is NULL");
}

TEST(GemmWorkspace, TooSmallNamesTheNeededBytes) {
  GemmProblem p = ragged_m_problem();
  HostWorkspace workspace;
  EXPECT_EQ(gg_grouped_gemm(&p.desc, workspace.data, 255, nullptr), GG_STATUS_WORKSPACE_TOO_SMALL);
  EXPECT_THAT(gg_last_error(), HasSubstr("workspace_bytes (255) is too small"));
  EXPECT_THAT(gg_last_error(), HasSubstr("needs 256 bytes"));
}

TEST(GemmWorkspace, NullNamesTheNeededBytes) {
  GemmProblem p = ragged_k_problem();
  EXPECT_EQ(gg_grouped_gemm(&p.desc, nullptr, 0, nullptr), GG_STATUS_WORKSPACE_TOO_SMALL);
  EXPECT_THAT(gg_last_error(), HasSubstr("workspace is NULL"));
  EXPECT_THAT(gg_last_error(), HasSubstr("needs 256 bytes"));
}

TEST(GemmWorkspace, MisalignedForTheFlagsWord) {
  GemmProblem p = ragged_m_problem();
  HostWorkspace workspace;
  EXPECT_EQ(gg_grouped_gemm(&p.desc, offset(workspace.data, 1), workspace.bytes, nullptr),
            GG_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(gg_last_error(), HasSubstr("workspace"));
  EXPECT_THAT(gg_last_error(), HasSubstr("4-byte aligned"));
}

// Zero strides become the packed ones, the product of the later dimensions;
// given strides stay.
TEST(GemmNormalization, ZeroStridesArePacked) {
  GemmProblem p = ragged_m_problem();
  p.desc.out.strides[0] = kN + 8;
  gg_gemm_desc normalized;
  ASSERT_EQ(gg::api::validate_gemm(&p.desc, &normalized), GG_STATUS_SUCCESS) << gg_last_error();
  EXPECT_EQ(normalized.lhs.strides[0], kK);
  EXPECT_EQ(normalized.lhs.strides[1], 1);
  EXPECT_EQ(normalized.rhs.strides[0], kN * kK);
  EXPECT_EQ(normalized.rhs.strides[1], kK);
  EXPECT_EQ(normalized.rhs.strides[2], 1);
  EXPECT_EQ(normalized.out.strides[0], kN + 8);
  EXPECT_EQ(normalized.out.strides[1], 1);
  EXPECT_EQ(p.desc.lhs.strides[0], 0) << "the caller's descriptor is left as it was";
}

}  // namespace
}  // namespace gg_test

// See skinny_gemm.h.
#include "kernels/skinny/skinny_gemm.h"

#include <math.h>
#include <stdint.h>

#include "api/describe.h"
#include "api/error.h"
#include "api/field_checks.h"
#include "api/log.h"
#include "common/groups.h"
#include "common/workspace.h"
#include "kernels/device.h"
#include "kernels/portable/operand_decode.h"
#include "kernels/skinny/skinny_decode.h"
#include "kernels/skinny/skinny_launch.h"
#include "kernels/skinny/skinny_layout.h"
#include "kernels/verified_kernels.h"

namespace gg::skinny {
namespace {

using api::is_fp8;

// Whether quantized `t` has the scales the skinny kernel applies: MX32 or
// NV16 blocks for e2m1; MX32 blocks or fp32 tensor, group or rowwise scales
// for fp8.
bool scales_taken(const gg_tensor& t) {
  if (t.dtype == GG_DTYPE_E2M1) {
    return t.block_scaling == GG_BLOCK_MX32 || t.block_scaling == GG_BLOCK_NV16;
  }
  return t.block_scaling == GG_BLOCK_MX32 || t.block_scaling == GG_BLOCK_NONE ||
         t.block_scaling == GG_BLOCK_ROWWISE;
}

Tokens tokens_of(const gg_gemm_desc& d) {
  if (d.lhs.dtype == GG_DTYPE_E2M1) return Tokens::kE2m1;
  return is_fp8(d.lhs.dtype) ? Tokens::kFp8 : Tokens::kBf16;
}

}  // namespace

std::string refusal(const gg_gemm_desc& d) {
  const std::string formats =
      "lhs " + api::format_name(d.lhs) + " x rhs " + api::format_name(d.rhs);
  if (d.op != GG_OP_RAGGED_M) return "the skinny kernel is for ragged-M products";
  const bool e2m1 = d.rhs.dtype == GG_DTYPE_E2M1;
  if (!(e2m1 || is_fp8(d.rhs.dtype)) || !scales_taken(d.rhs)) {
    return formats + ": the skinny kernel takes e2m1 or fp8 weights";
  }
  const bool tokens_ok = d.lhs.dtype == GG_DTYPE_BF16 ||
                         ((e2m1 ? d.lhs.dtype == GG_DTYPE_E2M1 : is_fp8(d.lhs.dtype)) &&
                          scales_taken(d.lhs));
  if (!tokens_ok) {
    return formats + ": the skinny kernel takes bf16 tokens, or tokens of the weights' element "
                     "width";
  }
  if (d.rhs_layout != GG_LAYOUT_T || d.lhs_layout != GG_LAYOUT_N) {
    return formats + ": the skinny kernel reads tokens [M, K] and weights [G, N, K]";
  }
  const uint32_t pointers = (d.out.flags | d.lhs.flags) & GG_TENSOR_POINTER_ARRAY;
  if (pointers != 0) {
    return "the skinny kernel takes stacked tokens and outputs";
  }
  const int64_t m = d.lhs.shape[0];
  const int64_t k = d.lhs.shape[1];
  const int64_t n = d.rhs.shape[1];
  if (!api::rows_aligned_16(d.lhs) || !api::rows_aligned_16(d.rhs)) {
    return formats + ": the skinny kernel reads 16-byte aligned rows";
  }
  if (k % chunk_elements(e2m1) != 0) {
    return formats + ": the skinny kernel needs K a multiple of 16 (fp8) or 32 (e2m1)";
  }
  if (d.num_groups > kSkinnyMaxGroups) return "the skinny kernel takes at most 4096 groups";
  for (const int64_t extent : {m, n, k}) {
    if (extent < 1 || extent >= int64_t{1} << 31) {
      return "the skinny kernel takes M, N and K in [1, 2^31)";
    }
  }
  return "";
}

bool chosen(const gg_gemm_desc& d, const GemmShape& shape) {
  if (!plan_skinny(shape)) return false;
  std::string why_not = refusal(d);
  if (why_not.empty()) why_not = unverified_kernel_refusal("the skinny kernels");
  if (why_not.empty()) return true;
  // The path's own kernels run it; say why the plan's choice did not.
  if (api::log_enabled()) api::log_line("skinny kernel skipped: " + why_not);
  return false;
}

gg_status run(const gg_gemm_desc& d, const GemmShape& shape, void* workspace,
              cudaStream_t stream) {
  DeviceInfo device;
  std::string why_not;
  if (!query_device(-1, &device, &why_not)) {
    return api::fail(GG_STATUS_NO_DEVICE, "skinny kernel: %s", why_not.c_str());
  }
  Params p{};
  p.gemm = portable::gemm_params_of(d, shape,
                                    static_cast<char*>(workspace) + kWorkspaceScratchOffset);
  p.sizes = d.group_sizes.sizes;
  p.offsets = d.group_sizes.offsets;
  p.index_type = d.group_sizes.type;
  p.rows = shape.m;
  p.flags = workspace_flags(workspace);
  p.accumulator_scale =
      ldexpf(1.0f, accumulator_shift(d.lhs.dtype, d.lhs.block_scaling) +
                       accumulator_shift(d.rhs.dtype, d.rhs.block_scaling));
  // Disjoint prefix-sum groups hold at most one partial token tile each;
  // groups placed by offsets may each span all M rows.
  const int64_t tiles = d.group_sizes.offsets == nullptr
                            ? ragged_block_capacity(shape.m, kTileTokens, d.num_groups)
                            : d.num_groups * ceil_div(shape.m, kTileTokens);
  const int64_t max_items = tiles * ceil_div(shape.n, kCtaRows);
  if (api::log_enabled()) {
    api::log_line(api::text_printf(
        "skinny kernel: groups average %lld rows (<= %lld); %s, 16-token tiles of 256 columns",
        static_cast<long long>(shape.m / shape.groups), static_cast<long long>(kSkinnyGroupRows),
        api::describe_gemm(d).c_str()));
  }
  const cudaError_t error = launch(tokens_of(d), d.rhs.dtype == GG_DTYPE_E2M1, p, max_items,
                                   device.sm_count, stream);
  if (error != cudaSuccess) {
    return api::fail(GG_STATUS_CUDA_ERROR, "skinny kernel launch: %s", cudaGetErrorString(error));
  }
  return GG_STATUS_SUCCESS;
}

}  // namespace gg::skinny

// The portable path as the API layer sees it (kernels/paths.h): which
// problems it takes, the scratch it needs, and a run.
//
// Quantized operands (fp8 with a tensor, group or rowwise scale; mxfp8,
// mxfp4, nvfp4; weight-only with a bf16 lhs) run on the same kernel with a
// decode stage (decoded_tile.cuh); fp8 1x128 and 128x128 block scales,
// which need a promotion every 128 of K, are not among them.
//
// A run is two launches on the caller's stream: the metadata kernel (group
// extents and the ragged-M m-tile prefix, from the device sizes, into the
// workspace scratch) and the GEMM kernel chosen by the plan. The host reads
// nothing from the device and allocates nothing, so a run can be captured in
// a CUDA graph and replayed after the sizes change. The SM count and compute
// capability come from gg::query_device, which asks the runtime once per
// device.
#include <cuda_runtime_api.h>
#include <stdint.h>

#include <string>

#include "api/describe.h"
#include "api/error.h"
#include "api/log.h"
#include "api/names.h"
#include "common/groups.h"
#include "common/workspace.h"
#include "kernels/device.h"
#include "kernels/paths.h"
#include "kernels/portable/gemm_params.h"
#include "kernels/portable/launch.h"
#include "kernels/portable/quant_operand.h"
#include "kernels/skinny/skinny_gemm.h"
#include "kernels/tile_scheduler.h"
#include "kernels/verified_kernels.h"
#include "plan/plan.h"

namespace gg {
namespace {

using portable::Major;

bool is_16bit_float(gg_dtype dtype) { return dtype == GG_DTYPE_BF16 || dtype == GG_DTYPE_FP16; }

using portable::is_quantized;

// The block scalings the decode stage applies: none (an fp32 tensor or group
// scale, applied to the accumulator), MX, NV and rowwise.
bool is_decodable(const gg_tensor& t) {
  switch (t.block_scaling) {
    case GG_BLOCK_NONE:
    case GG_BLOCK_ROWWISE:
      return t.dtype != GG_DTYPE_E2M1;
    case GG_BLOCK_MX32:
      return true;
    case GG_BLOCK_NV16:
      return t.dtype == GG_DTYPE_E2M1;
    default:
      return false;
  }
}

bool is_output_type(gg_dtype dtype) { return is_16bit_float(dtype) || dtype == GG_DTYPE_FP32; }

bool is_scaled(const gg_tensor& t) {
  return t.block_scaling != GG_BLOCK_NONE || t.scale_extent != GG_SCALE_NONE;
}

bool is_pointer_array(const gg_tensor& t) { return (t.flags & GG_TENSOR_POINTER_ARRAY) != 0; }

bool reject(std::string* why_not, const std::string& reason) {
  if (why_not != nullptr) *why_not = "portable path: " + reason;
  return false;
}

gg_status cuda_failure(const char* what, cudaError_t error) {
  return api::fail(GG_STATUS_CUDA_ERROR, "portable path: %s: %s", what, cudaGetErrorString(error));
}

// Row stride of a rank-2 or rank-3 view; the group stride of a rank-3 one.
int64_t row_stride(const gg_tensor& t) { return t.strides[t.rank - 2]; }

// A host-side bound on the tile count, which the device-side sizes cannot
// exceed: it caps the grid of small problems.
int64_t max_tiles(const gg_gemm_desc& d, const GemmShape& shape, const TileConfig& config) {
  const int64_t tiles_n = ceil_div(shape.n, config.block_n);
  if (d.op == GG_OP_RAGGED_K) return d.num_groups * ceil_div(shape.m, config.block_m) * tiles_n;
  // Disjoint prefix-sum groups hold at most one partial m-tile each; groups
  // placed by offsets may each span all M rows.
  const int64_t m_tiles = d.group_sizes.offsets == nullptr
                              ? ragged_block_capacity(shape.m, config.block_m, d.num_groups)
                              : d.num_groups * ceil_div(shape.m, config.block_m);
  return m_tiles * tiles_n;
}

// The block size by which the metadata kernel numbers each group's blocks:
// the m-tile for ragged-M; for ragged-K with MX or NV block scales along the
// tokens, the scale block, so that a group's tile_begin is its first block.
int metadata_block(const gg_gemm_desc& d, const Plan& plan) {
  const int scale_block = portable::token_block_size(d);
  return d.op == GG_OP_RAGGED_K && scale_block > 0 ? scale_block : plan.config.block_m;
}

// The decode family of an operand, as the verified-kernel list names it.
std::string decode_family(const gg_tensor& t) {
  switch (t.block_scaling) {
    case GG_BLOCK_MX32:
      return t.dtype == GG_DTYPE_E2M1 ? "mxfp4" : "mxfp8";
    case GG_BLOCK_NV16:
      return "nvfp4";
    case GG_BLOCK_ROWWISE:
      return "fp8 rowwise";
    default:
      return is_quantized(t.dtype) ? "fp8" : "bf16";
  }
}

// Why the quantized operands of `d` cannot run here ("" when they can).
std::string quantized_refusal(const gg_gemm_desc& d) {
  const std::string formats = "lhs " + api::format_name(d.lhs) + " x rhs " + api::format_name(d.rhs);
  if (!is_quantized(d.rhs.dtype)) {
    return formats + " is not supported (a quantized lhs needs a quantized rhs)";
  }
  if (!is_quantized(d.lhs.dtype) && d.lhs.dtype != GG_DTYPE_BF16) {
    return formats + " is not supported: weight-only needs bf16 activations (quantized "
                     "weights decode exactly into bf16, not fp16)";
  }
  const int lhs_block = portable::decoded_block_size(d.lhs.block_scaling);
  const int rhs_block = portable::decoded_block_size(d.rhs.block_scaling);
  if (d.op == GG_OP_RAGGED_K && lhs_block != rhs_block && lhs_block > 0 && rhs_block > 0) {
    return formats + " is not supported: ragged-K operands with block scales along the tokens "
                     "need blocks of one size";
  }
  for (const gg_tensor* t : {&d.lhs, &d.rhs}) {
    if (is_quantized(t->dtype) && !is_decodable(*t)) {
      return formats + " is not supported: fp8 1x128 and 128x128 block scales need the "
                       "promotion every 128 of K of a kernel this path does not have; "
                       "GG_PATH_REFERENCE computes them";
    }
  }
  return unverified_kernel_refusal("the decode kernel for " + decode_family(d.lhs) + " x " +
                                   decode_family(d.rhs));
}

}  // namespace

portable::GemmParams portable::gemm_params_of(const gg_gemm_desc& d, const GemmShape& shape,
                                              void* scratch) {
  portable::GemmParams p{};
  p.op = d.op;
  p.groups = d.num_groups;
  p.records =
      reinterpret_cast<const GroupRecord*>(static_cast<char*>(scratch) + portable::kRecordsOffset);
  p.total_m_tiles = static_cast<const int64_t*>(scratch);
  p.out_rows = d.op == GG_OP_RAGGED_K ? shape.m : 0;
  p.out_cols = shape.n;
  p.depth = d.op == GG_OP_RAGGED_M ? shape.k : 0;
  p.lhs = d.lhs.data;
  p.lhs_stride = row_stride(d.lhs);
  p.rhs = d.rhs.data;
  p.rhs_stride = row_stride(d.rhs);
  p.rhs_group_stride = d.rhs.rank == 3 ? d.rhs.strides[0] : 0;
  p.rhs_pointers = is_pointer_array(d.rhs);
  p.out = d.out.data;
  p.out_type = d.out.dtype;
  p.out_stride = row_stride(d.out);
  p.out_group_stride = d.out.rank == 3 ? d.out.strides[0] : 0;
  p.out_pointers = is_pointer_array(d.out);
  p.zero_rows_end = (d.flags & GG_GEMM_ZERO_UNUSED_ROWS) ? d.out.shape[0] : 0;
  p.bias = d.bias.data;
  p.bias_type = d.bias.dtype;
  p.bias_stride = d.bias.data != nullptr ? d.bias.strides[0] : 0;
  p.alpha = d.alpha.value;
  p.beta = d.beta.value;
  p.alpha_per_group = d.alpha.per_group;
  p.beta_per_group = d.beta.per_group;
  p.lhs_quant = portable::quant_operand_of(d.lhs, d.op == GG_OP_RAGGED_M || d.lhs_layout == GG_LAYOUT_T, d);
  p.rhs_quant = portable::quant_operand_of(d.rhs, d.rhs_layout == GG_LAYOUT_T, d);
  return p;
}

bool portable_gemm_supports(const gg_gemm_desc& d, std::string* why_not) {
  if (is_quantized(d.lhs.dtype) || is_quantized(d.rhs.dtype)) {
    const std::string refusal = quantized_refusal(d);
    if (!refusal.empty()) return reject(why_not, refusal);
  } else if (!is_16bit_float(d.lhs.dtype) || d.rhs.dtype != d.lhs.dtype) {
    return reject(why_not, "lhs " + api::format_name(d.lhs) + " x rhs " + api::format_name(d.rhs) +
                               " is not supported (bf16 x bf16 or fp16 x fp16 only; "
                               "GG_PATH_REFERENCE computes every format)");
  } else if (is_scaled(d.lhs) || is_scaled(d.rhs)) {
    return reject(why_not, "block or fp32 scales on " + std::string(api::dtype_name(d.lhs.dtype)) +
                               " operands are not supported");
  }
  if (!is_output_type(d.out.dtype)) {
    return reject(why_not, std::string("out ") + api::dtype_name(d.out.dtype) +
                               " is not supported (bf16, fp16 or fp32)");
  }
  if (d.bias.data != nullptr && !is_output_type(d.bias.dtype)) {
    return reject(why_not, std::string("bias ") + api::dtype_name(d.bias.dtype) +
                               " is not supported (bf16, fp16 or fp32)");
  }
  if (is_pointer_array(d.lhs)) return reject(why_not, "lhs as a pointer array is not supported");
  if (d.op == GG_OP_RAGGED_M) {
    if (d.lhs_layout != GG_LAYOUT_N) {
      return reject(why_not, "ragged-M lhs must be GG_LAYOUT_N (rows contiguous in K)");
    }
    if (is_pointer_array(d.out)) {
      return reject(why_not, "ragged-M out as a pointer array is not supported");
    }
  } else {
    if (is_pointer_array(d.rhs)) {
      return reject(why_not, "ragged-K rhs as a pointer array is not supported");
    }
    if (d.bias.data != nullptr) return reject(why_not, "bias is for ragged-M only");
  }
  return true;
}

size_t portable_gemm_scratch_bytes(const gg_gemm_desc& desc) {
  return portable::metadata_scratch_bytes(desc.num_groups);
}

// The API layer has checked the descriptor, the 16-byte alignment, the
// workspace's size and alignment, and that the device is sm_80 or newer.
gg_status portable_gemm_run(const gg_gemm_desc& desc, void* workspace, size_t,
                            cudaStream_t stream) {
  DeviceInfo device;
  std::string why_not;
  if (!query_device(-1, &device, &why_not)) {
    return api::fail(GG_STATUS_NO_DEVICE, "portable path: %s", why_not.c_str());
  }

  const GemmShape shape = gemm_shape(desc, device.sm_count, device.compute_capability);
  if (skinny::chosen(desc, shape)) return skinny::run(desc, shape, workspace, stream);
  const Plan plan = plan_gemm(shape);
  if (api::log_enabled()) api::log_line(plan.describe());

  void* scratch = static_cast<char*>(workspace) + kWorkspaceScratchOffset;
  const portable::GemmParams params = portable::gemm_params_of(desc, shape, scratch);
  const portable::MetadataParams metadata{
      desc.group_sizes.sizes,
      desc.group_sizes.offsets,
      desc.group_sizes.type,
      desc.num_groups,
      desc.op == GG_OP_RAGGED_M ? shape.m : shape.k,  // the ragged dimension's capacity
      metadata_block(desc, plan),
      reinterpret_cast<GroupRecord*>(static_cast<char*>(scratch) + portable::kRecordsOffset),
      static_cast<int64_t*>(scratch),
      workspace_flags(workspace)};

  const bool ragged_m = desc.op == GG_OP_RAGGED_M;
  const Major lhs = ragged_m || desc.lhs_layout == GG_LAYOUT_T ? Major::kDepth : Major::kOuter;
  // ragged-M rhs [G, N, K] (T) and ragged-K rhs [Q, M] (T) are depth-contiguous.
  const Major rhs = desc.rhs_layout == GG_LAYOUT_T ? Major::kDepth : Major::kOuter;

  cudaError_t error = portable::launch_group_metadata(metadata, stream);
  if (error != cudaSuccess) return cuda_failure("metadata kernel launch", error);
  const int64_t tiles = max_tiles(desc, shape, plan.config);
  if (shape.decoded) {
    error = portable::launch_gemm_quantized(lhs, rhs, is_quantized(desc.lhs.dtype), params, tiles,
                                            device.sm_count, stream);
  } else {
    const auto launch =
        desc.lhs.dtype == GG_DTYPE_BF16 ? portable::launch_gemm_bf16 : portable::launch_gemm_fp16;
    error = launch(plan.tile, lhs, rhs, params, tiles, device.sm_count, stream);
  }
  if (error != cudaSuccess) return cuda_failure("GEMM kernel launch", error);
  return GG_STATUS_SUCCESS;
}

}  // namespace gg

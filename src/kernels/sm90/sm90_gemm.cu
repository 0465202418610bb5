// Host side of the Hopper grouped GEMM (grouped_gemm_kernel.cuh): what the
// path takes, the TMA maps of the operands and the output, the plan's tile,
// and the launch of the instance it names. bf16/fp16 operands in every
// layout; fp8 (e4m3 x e4m3, e5m2 x e4m3) with tensor, group or rowwise
// scales, 1x128 x 128x128 blocks (ragged-M) or 1x128 x 1x128 blocks along
// the tokens (ragged-K), in K-major layouts, which fp8 wgmma needs: ragged-M
// weights [G, N, K] (layout T, stacked or per expert), ragged-K operands
// [P, M] and [Q, M] (layout T, the quantizer's columnwise copies); MX and
// NV blocks and quantized weights with bf16 activations, ragged-M with
// weights [G, N, K] (stacked or per expert), and MX and NV blocks ragged-K
// along the tokens of columnwise copies [P, M] and [Q, M], decoded into
// bf16 tiles (decode_stage.cuh); mxfp8 x mxfp8 ragged-M with e4m3 weights
// [G, N, K] on fp8 wgmma, its MX scales promoted every 32-deep block
// (sm90_gemm_fp8_mx.cu). Quantized kernels answer users once verified
// (kernels/verified_kernels.h).
#include <cuda.h>
#include <cuda_runtime.h>

#include <array>
#include <string>

#include "api/describe.h"
#include "api/error.h"
#include "api/field_checks.h"
#include "api/log.h"
#include "common/workspace.h"
#include "kernels/device.h"
#include "kernels/paths.h"
#include "kernels/portable/quant_operand.h"
#include "kernels/sm90/expert_maps.h"
#include "kernels/sm90/grouped_gemm_kernel.cuh"
#include "kernels/sm90/tensor_map.h"
#include "kernels/sm90/token_maps.h"
#include "kernels/skinny/skinny_gemm.h"
#include "kernels/verified_kernels.h"
#include "plan/plan.h"

namespace gg::sm90 {
namespace {

// fp8 with fp32 scales per 1 x 128 or 128 x 128 block: promoted every k-step.
bool block_scaled(const gg_gemm_desc& d) {
  const auto blocks = [](const gg_tensor& t) {
    return t.block_scaling == GG_BLOCK_1X128 || t.block_scaling == GG_BLOCK_128X128;
  };
  return blocks(d.lhs) || blocks(d.rhs);
}

// A 3-D map {inner, outer, groups} over a matrix view with rows of `ld`
// elements and matrices `group_stride` elements apart, boxed as one operand
// tile of 128-byte k-steps: K-major {128 bytes, rows} or MN-major {64, 64}
// (16-bit only).
bool operand_map(CUtensorMap* map, gg_dtype type, const void* base, int64_t inner, int64_t outer,
                 int64_t groups, int64_t ld, int64_t group_stride, bool k_major, int tile_rows,
                 std::string* why_not) {
  const int64_t bytes = api::is_fp8(type) ? 1 : 2;
  const uint64_t dims[3] = {uint64_t(inner), uint64_t(outer), uint64_t(groups)};
  const uint64_t strides[2] = {uint64_t(ld * bytes),
                               uint64_t((groups > 1 ? group_stride : ld * outer) * bytes)};
  const uint32_t box[3] = {uint32_t(128 / bytes), uint32_t(k_major ? tile_rows : 64), 1};
  const CUtensorMapDataType dtype = api::is_fp8(type)        ? CU_TENSOR_MAP_DATA_TYPE_UINT8
                                    : type == GG_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                            : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  return encode_tile_map(map, dtype, 3, base, dims, strides, box, why_not);
}

// The map of an operand's raw codes (decode_stage.cuh): bytes, K-major,
// unswizzled, boxed as one k-step of `tile_rows` rows of `box_bytes` (a
// decoded step's 64 or 32 bytes; along tokens 16 more, decoded_steps.h);
// `k`, `ld` and `group_stride` count elements.
bool raw_operand_map(CUtensorMap* map, gg_dtype type, const void* base, int64_t k, int64_t rows,
                     int64_t groups, int64_t ld, int64_t group_stride, int tile_rows,
                     int box_bytes, std::string* why_not) {
  const int64_t bits = portable::element_bits(type);
  const uint64_t dims[3] = {uint64_t((k * bits + 7) / 8), uint64_t(rows), uint64_t(groups)};
  const uint64_t strides[2] = {uint64_t(ld * bits / 8),
                               uint64_t((groups > 1 ? group_stride : ld * rows) * bits / 8)};
  const uint32_t box[3] = {uint32_t(box_bytes), uint32_t(tile_rows), 1};
  return encode_tile_map(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, base, dims, strides, box, why_not,
                         false);
}

// The output's TMA-store map for boxes of `chunks` 128-byte chunks x 64 rows
// (epilogue.cuh's StagingLayout): 3-D {cols, rows, groups} for one, 4-D
// {chunk, chunks, rows, groups} over the row's whole chunks for two.
// Per-expert outputs (a pointer array) are given `maps`, the workspace's:
// their map is one expert's matrix, encoded over that aligned address, whose
// copies take each expert's own (expert_maps.h). Without a map (`bulk`
// false, `maps` null) the epilogue copies blocks out itself: for rows TMA
// cannot address exactly (a 3-D map's store clips the row's end only to 16
// bytes: it would write into the padding after a row of, say, 100 bf16
// values), as for the blocks that reach into a 4-D map's last, partial chunk.
void output_map(OutputParams* o, int64_t rows, int64_t groups, int chunks) {
  const int64_t bytes = o->dtype == GG_DTYPE_FP32 ? 4 : 2;
  const int64_t chunk_cols = 128 / bytes;
  const void* base = o->pointer_array ? static_cast<const void*>(o->maps) : o->data;
  const int64_t matrices = o->pointer_array ? 1 : groups;
  const int64_t whole_chunks = o->cols / chunk_cols;
  const bool addressable = base != nullptr && reinterpret_cast<uintptr_t>(base) % 16 == 0 &&
                           (o->ld * bytes) % 16 == 0 &&
                           (chunks == 1 ? (o->cols * bytes) % 16 == 0 : whole_chunks > 0) &&
                           (matrices == 1 || (o->group_stride * bytes) % 16 == 0);
  o->bulk = false;
  o->tma_cols = chunks == 1 ? o->cols : int(whole_chunks * chunk_cols);
  if (addressable) {
    const uint64_t matrix_stride =
        uint64_t((matrices > 1 ? o->group_stride : o->ld * rows) * bytes);
    const uint64_t dims3[3] = {uint64_t(o->cols), uint64_t(rows), uint64_t(matrices)};
    const uint64_t strides3[2] = {uint64_t(o->ld * bytes), matrix_stride};
    const uint32_t box3[3] = {uint32_t(chunk_cols), 64, 1};
    const uint64_t dims4[4] = {uint64_t(chunk_cols), uint64_t(whole_chunks), uint64_t(rows),
                               uint64_t(matrices)};
    const uint64_t strides4[3] = {128, uint64_t(o->ld * bytes), matrix_stride};
    const uint32_t box4[4] = {uint32_t(chunk_cols), 2, 64, 1};
    const CUtensorMapDataType type = o->dtype == GG_DTYPE_FP32   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                     : o->dtype == GG_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    std::string why_not;
    o->bulk = chunks == 1
                  ? encode_tile_map(&o->map, type, 3, base, dims3, strides3, box3, &why_not)
                  : encode_tile_map(&o->map, type, 4, base, dims4, strides4, box4, &why_not);
  }
  if (!o->bulk) o->maps = nullptr;
}

// Writes the per-expert copies of `matrix` (expert_maps.h), on the stream
// of the launch that reads them.
gg_status maps_of_experts(const CUtensorMap& matrix, const void* pointers, CUtensorMap* maps,
                          int groups, cudaStream_t stream) {
  const cudaError_t error = write_expert_maps(matrix, pointers, maps, groups, stream);
  if (error == cudaSuccess) return GG_STATUS_SUCCESS;
  return api::fail(GG_STATUS_CUDA_ERROR, "sm90 path: per-expert maps: %s",
                   cudaGetErrorString(error));
}

// The name under which the mxfp8 instances answer users (verified_kernels.h).
constexpr char kMxFp8Kernels[] = "the sm90 fp8 kernels for mxfp8";

// Whether `d` runs on the fp8 wgmma instances with MX blocks
// (sm90_gemm_fp8_mx.cu): mxfp8 x mxfp8 ragged-M, an e4m3 or e5m2 lhs times
// e4m3 weights [G, N, K] (K-major, stacked or per expert), 16-byte aligned
// rows; once their GPU tests have passed on a device (verified_kernels.h).
// Until then the decoding instances, verified, take these products.
bool mx_on_fp8_wgmma(const gg_gemm_desc& d) {
  return d.op == GG_OP_RAGGED_M && api::is_fp8(d.lhs.dtype) && d.rhs.dtype == GG_DTYPE_E4M3 &&
         d.lhs.block_scaling == GG_BLOCK_MX32 && d.rhs.block_scaling == GG_BLOCK_MX32 &&
         d.rhs_layout == GG_LAYOUT_T && api::rows_aligned_16(d.lhs) &&
         api::rows_aligned_16(d.rhs) && unverified_kernel_refusal(kMxFp8Kernels).empty();
}

// Whether `d` takes the decoding instances (sm90_gemm_decoded.cu):
// quantized weights with a bf16 lhs, or operands with MX or NV blocks. The
// fp8 wgmma instances take fp8 x fp8 with fp32 scales or 1x128 / 128x128
// blocks, and the mxfp8 products of mx_on_fp8_wgmma.
bool decodes(const gg_gemm_desc& d) {
  if (!portable::is_quantized(d.rhs.dtype) || mx_on_fp8_wgmma(d)) return false;
  if (d.lhs.dtype == GG_DTYPE_BF16) return true;
  const auto mx_or_nv = [](const gg_tensor& t) {
    return t.block_scaling == GG_BLOCK_MX32 || t.block_scaling == GG_BLOCK_NV16;
  };
  return portable::is_quantized(d.lhs.dtype) && (mx_or_nv(d.lhs) || mx_or_nv(d.rhs) ||
                                                 d.lhs.dtype == GG_DTYPE_E2M1 ||
                                                 d.rhs.dtype == GG_DTYPE_E2M1);
}

// How the instance's stages hold the operands (plan.h's Sm90Decode).
Sm90Decode decode_of(const gg_gemm_desc& d) {
  if (d.op == GG_OP_RAGGED_K && block_scaled(d)) return Sm90Decode::kFp8Tokens;
  if (mx_on_fp8_wgmma(d)) return Sm90Decode::kFp8Mx;
  if (!decodes(d)) return Sm90Decode::kNone;
  if (d.op == GG_OP_RAGGED_K) return Sm90Decode::kTokens;
  return d.lhs.dtype == GG_DTYPE_BF16 ? Sm90Decode::kRhs : Sm90Decode::kBoth;
}

// Launches the plan's instance for the element types of `d`.
gg_status launch_planned(Params& p, const gg_gemm_desc& d, const Sm90Plan& plan, bool a_kmajor,
                         bool b_kmajor, int sm_count, cudaStream_t stream) {
  const Instance which{d.op, plan.tile, plan.sparse_k, plan.multicast ? 2 : 1, a_kmajor, b_kmajor};
  if (decodes(d)) {
    return launch_decoded(p, which, decode_of(d), d.num_groups, sm_count, stream);
  }
  if (api::is_fp8(d.lhs.dtype)) {
    const Fp8Blocks blocks = mx_on_fp8_wgmma(d) ? Fp8Blocks::kMx32
                             : block_scaled(d)  ? Fp8Blocks::k128
                                                : Fp8Blocks::kNone;
    return launch_fp8(p, which, d.lhs.dtype, d.rhs.dtype, blocks, d.num_groups, sm_count, stream);
  }
  return launch_16bit(p, which, d.lhs.dtype == GG_DTYPE_BF16, d.num_groups, sm_count, stream);
}

void log_choice(const Sm90Plan& plan, const OutputParams& o) {
  if (!api::log_enabled()) return;
  api::log_line(plan.describe() + (o.bulk ? ", TMA-store epilogue" : ", direct-store epilogue"));
}


// Why the fp8 kernels cannot take `d` (empty: they can). fp8 wgmma reads
// K-major operands from 16-byte aligned rows, and the instances are the
// recipes' pairs: e4m3 x e4m3 (forward) and e5m2 x e4m3 (gradient x
// weights or activations).
std::string fp8_refusal(const gg_gemm_desc& d) {
  const std::string formats =
      "lhs " + api::format_name(d.lhs) + " x rhs " + api::format_name(d.rhs);
  if (d.rhs.dtype != GG_DTYPE_E4M3) {
    return formats + " is not supported (fp8 instances: e4m3 x e4m3 and e5m2 x e4m3; the "
                     "product's transpose swaps the operands, and the portable path takes "
                     "every pair)";
  }
  const bool token_blocks = d.op == GG_OP_RAGGED_K && d.lhs.block_scaling == GG_BLOCK_1X128 &&
                            d.rhs.block_scaling == GG_BLOCK_1X128;
  if (block_scaled(d)) {
    const bool k_blocks = d.op == GG_OP_RAGGED_M && d.lhs.block_scaling == GG_BLOCK_1X128 &&
                          d.rhs.block_scaling == GG_BLOCK_128X128;
    if (!k_blocks && !token_blocks) {
      return formats + " is not supported (fp8 blocks: ragged-M 1x128 activations x 128x128 "
                       "weights, ragged-K 1x128 x 1x128 along the tokens; GG_PATH_REFERENCE "
                       "computes the others)";
    }
  } else {
    for (const gg_tensor* t : {&d.lhs, &d.rhs}) {
      if (t->block_scaling != GG_BLOCK_NONE && t->block_scaling != GG_BLOCK_ROWWISE) {
        return formats + " is not supported (fp8 with tensor, group or rowwise scales, or "
                         "1x128 x 128x128 blocks; the portable path runs MX blocks)";
      }
    }
  }
  const bool k_major = d.op == GG_OP_RAGGED_M
                           ? d.rhs_layout == GG_LAYOUT_T
                           : d.lhs_layout == GG_LAYOUT_T && d.rhs_layout == GG_LAYOUT_T;
  if (!k_major) {
    return formats + (d.op == GG_OP_RAGGED_M
                          ? ": fp8 wgmma reads K-major operands only: rhs must be GG_LAYOUT_T "
                            "([G, N, K], the contraction contiguous)"
                          : ": fp8 wgmma reads K-major operands only: lhs and rhs must be "
                            "GG_LAYOUT_T ([P, M] and [Q, M], the tokens contiguous: the "
                            "quantizer's columnwise copies)");
  }
  // TMA reads rows that start on 16 bytes; the portable path takes the rest
  // (but fp8 blocks, which only GG_PATH_REFERENCE computes elsewhere).
  if (!api::rows_aligned_16(d.lhs) || !api::rows_aligned_16(d.rhs)) {
    return formats + ": the sm90 fp8 kernels need 16-byte aligned data and row strides" +
           (block_scaled(d) ? "" : " (the portable path takes any)");
  }
  if (d.op == GG_OP_RAGGED_M && (d.rhs.flags & GG_TENSOR_POINTER_ARRAY) != 0) {
    return unverified_kernel_refusal("the sm90 fp8 kernels for per-expert weights");
  }
  if (token_blocks) {
    return unverified_kernel_refusal(
        "the sm90 fp8 kernels for 1x128 x 1x128 weight gradients on split windows");
  }
  return unverified_kernel_refusal("the sm90 fp8 kernels");
}

// Why the decoding instances cannot take the ragged-K `d` (empty: they
// can): both operands' columnwise copies [P, M] and [Q, M] (tokens
// contiguous), of one block size (MX32 or NV16) along the tokens, with or
// without fp32 tensor or group scales; 16-byte aligned data and rows;
// stacked or per-expert outputs (the epilogue's per-expert maps, whatever
// the operands; per-expert outputs answer once their GPU tests pass).
std::string decoded_tokens_refusal(const gg_gemm_desc& d, const std::string& formats) {
  const auto blocks = [](const gg_tensor& t) {
    return t.block_scaling == GG_BLOCK_MX32 || t.block_scaling == GG_BLOCK_NV16;
  };
  if (!portable::is_quantized(d.lhs.dtype) || !blocks(d.lhs) || !blocks(d.rhs) ||
      d.lhs.block_scaling != d.rhs.block_scaling) {
    return formats + " is not supported (the sm90 weight gradient decodes MX or NV blocks of "
                     "one size on both operands; the portable path runs the others)";
  }
  if (d.lhs_layout != GG_LAYOUT_T || d.rhs_layout != GG_LAYOUT_T) {
    return formats + ": the sm90 decoding kernels read the weight gradient's operands as the "
                     "quantizer's columnwise copies: lhs and rhs must be GG_LAYOUT_T ([P, M] "
                     "and [Q, M], the tokens contiguous; the portable path takes the others)";
  }
  if (!api::rows_aligned_16(d.lhs) || !api::rows_aligned_16(d.rhs)) {
    return formats + ": the sm90 decoding kernels need 16-byte aligned data and rows (the "
                     "portable path takes any)";
  }
  if ((d.out.flags & GG_TENSOR_POINTER_ARRAY) != 0) {
    return unverified_kernel_refusal("the sm90 decoding kernels for per-expert weight gradients");
  }
  return unverified_kernel_refusal("the sm90 decoding kernels for the weight gradient");
}

// Why the decoding instances cannot take `d` (empty: they can): ragged-M
// with K-major weights [G, N, K], stacked; element and block scales along
// K (MX32, NV16), or fp32 tensor, group or rowwise scales; 16-byte aligned
// rows of whole 16-byte chunks of codes. Ragged-K: decoded_tokens_refusal.
std::string decoded_refusal(const gg_gemm_desc& d) {
  const std::string formats =
      "lhs " + api::format_name(d.lhs) + " x rhs " + api::format_name(d.rhs);
  if (d.op == GG_OP_RAGGED_K) return decoded_tokens_refusal(d, formats);
  for (const gg_tensor* t : {&d.lhs, &d.rhs}) {
    if (t->block_scaling == GG_BLOCK_1X128 || t->block_scaling == GG_BLOCK_128X128) {
      return formats + " is not supported (fp8 1x128 / 128x128 blocks pair only with each "
                       "other; GG_PATH_REFERENCE computes the rest)";
    }
  }
  if (d.rhs_layout != GG_LAYOUT_T) {
    return formats + ": the sm90 decoding kernels read K-major weights: rhs must be "
                     "GG_LAYOUT_T ([G, N, K]; the portable path takes [G, K, N])";
  }
  // TMA reads rows that start on 16 bytes; a decoded chunk of codes lies
  // wholly inside K (decode_stage.cuh).
  const int64_t k = d.lhs.shape[1];
  const auto fits = [&](const gg_tensor& t) {
    return api::rows_aligned_16(t) &&
           (!portable::is_quantized(t.dtype) || k % raw_chunk_elements(t.dtype) == 0);
  };
  if (!fits(d.lhs) || !fits(d.rhs)) {
    return formats + ": the sm90 decoding kernels need 16-byte aligned data and rows, and K a "
                     "multiple of 16 (fp8) or 32 (e2m1) (the portable path takes any)";
  }
  if ((d.rhs.flags & GG_TENSOR_POINTER_ARRAY) != 0) {
    return unverified_kernel_refusal("the sm90 decoding kernels for per-expert weights");
  }
  return unverified_kernel_refusal("the sm90 decoding kernels");
}

}  // namespace
}  // namespace gg::sm90

namespace gg {

bool sm90_gemm_supports(const gg_gemm_desc& d, std::string* why_not) {
  const bool sixteen_bit = d.lhs.dtype == GG_DTYPE_BF16 || d.lhs.dtype == GG_DTYPE_FP16;
  if (sm90::mx_on_fp8_wgmma(d)) {
    // It holds every condition of the mxfp8 instances.
  } else if (sm90::decodes(d)) {
    const std::string refusal = sm90::decoded_refusal(d);
    if (!refusal.empty()) {
      *why_not = "sm90 path: " + refusal;
      return false;
    }
  } else if (api::is_fp8(d.lhs.dtype) && api::is_fp8(d.rhs.dtype)) {
    const std::string refusal = sm90::fp8_refusal(d);
    if (!refusal.empty()) {
      *why_not = "sm90 path: " + refusal;
      return false;
    }
  } else if (!sixteen_bit || d.rhs.dtype != d.lhs.dtype) {
    *why_not = "sm90 path: lhs " + api::format_name(d.lhs) + " x rhs " + api::format_name(d.rhs) +
               " is not supported (bf16 or fp16 inputs of one type, fp8 pairs, MX or NV "
               "blocks, or quantized weights with bf16 activations; GG_PATH_REFERENCE computes "
               "every format)";
    return false;
  }
  if (d.num_groups > kSm90MaxGroups) {
    *why_not = "sm90 path: at most 2048 groups";
    return false;
  }
  // The problem's own dimensions, as sm90_gemm_run reads them: the kernel
  // counts them in int, and a TMA map cannot span an empty one (an empty
  // problem is the portable path's).
  const bool lhs_t = d.lhs_layout == GG_LAYOUT_T;
  const bool rhs_t = d.rhs_layout == GG_LAYOUT_T;
  struct Dim {
    const char* name;
    int64_t value;
  };
  // Ragged-M: lhs [M, K], rhs [G, N, K] (T) or [G, K, N]. Ragged-K: lhs
  // [M, P] or [P, M] (T), rhs [M, Q] or [Q, M] (T).
  const std::array<Dim, 3> dims =
      d.op == GG_OP_RAGGED_M
          ? std::array<Dim, 3>{{{"M", d.lhs.shape[0]},
                                {"K", d.lhs.shape[1]},
                                {"N", d.rhs.shape[rhs_t ? 1 : 2]}}}
          : std::array<Dim, 3>{{{"M", d.lhs.shape[lhs_t ? 1 : 0]},
                                {"P", d.lhs.shape[lhs_t ? 0 : 1]},
                                {"Q", d.rhs.shape[rhs_t ? 0 : 1]}}};
  for (const auto& dim : dims) {
    if (dim.value == 0 || dim.value >= int64_t{1} << 31) {
      *why_not = api::text_printf("sm90 path: %s = %lld; it takes dimensions in [1, 2^31)",
                                  dim.name, static_cast<long long>(dim.value));
      return false;
    }
  }
  return true;
}

namespace {

// Whether the op's per-group operand (ragged-M rhs, ragged-K out) is a
// device array of G pointers.
bool per_expert(const gg_gemm_desc& d) {
  const gg_tensor& t = d.op == GG_OP_RAGGED_M ? d.rhs : d.out;
  return (t.flags & GG_TENSOR_POINTER_ARRAY) != 0;
}

// Whether a ragged-K product loads its operands through per-group token
// maps: both hold tokens as rows (layout N, MN-major).
bool token_maps(const gg_gemm_desc& d) {
  return d.op == GG_OP_RAGGED_K && d.lhs_layout != GG_LAYOUT_T && d.rhs_layout != GG_LAYOUT_T;
}

}  // namespace

// The scratch holds the per-expert maps (expert_maps.h), then the token
// maps (token_maps.h), each where the problem takes them.
size_t sm90_gemm_scratch_bytes(const gg_gemm_desc& d) {
  return (per_expert(d) ? sm90::expert_maps_bytes(d.num_groups) : 0) +
         (token_maps(d) ? sm90::token_maps_bytes(d.num_groups) : 0);
}

gg_status sm90_gemm_run(const gg_gemm_desc& d, void* workspace, size_t, cudaStream_t stream) {
  using namespace sm90;
  DeviceInfo info;
  std::string why;
  if (!query_device(-1, &info, &why)) return GG_STATUS_NO_DEVICE;
  // The tensor maps are encoded by the driver API, which needs the device's
  // context current on this thread; a thread that has made no runtime call
  // yet (torch's autograd thread, for one) has none until cudaSetDevice
  // binds the primary context.
  if (const cudaError_t error = cudaSetDevice(info.ordinal); error != cudaSuccess) {
    return api::fail(GG_STATUS_CUDA_ERROR, "sm90 path: cudaSetDevice(%d): %s", info.ordinal,
                     cudaGetErrorString(error));
  }

  Params p{};
  p.out.data = d.out.data;
  p.out.dtype = d.out.dtype;
  p.out.pointer_array = (d.out.flags & GG_TENSOR_POINTER_ARRAY) != 0;
  p.out.alpha = d.alpha.value;
  p.out.beta = d.beta.value;
  p.out.alpha_per_group = d.alpha.per_group;
  p.out.beta_per_group = d.beta.per_group;
  p.sizes = d.group_sizes.sizes;
  p.offsets = d.group_sizes.offsets;
  p.index_type = d.group_sizes.type;
  p.rows_capacity = d.lhs_layout == GG_LAYOUT_T && d.op == GG_OP_RAGGED_K ? d.lhs.shape[1]
                                                                           : d.lhs.shape[0];
  p.groups = d.num_groups;
  p.flags = workspace_flags(workspace);
  const bool decoded = decodes(d);
  if (api::is_fp8(d.lhs.dtype) || decoded) {
    // As the portable path reads them: depth along the stored rows' columns.
    p.lhs_quant = portable::quant_operand_of(d.lhs, true, d);
    p.rhs_quant = portable::quant_operand_of(d.rhs, true, d);
  }
  char* scratch = static_cast<char*>(workspace) + kWorkspaceScratchOffset;
  CUtensorMap* expert_maps = per_expert(d) ? reinterpret_cast<CUtensorMap*>(scratch) : nullptr;

  GemmShape shape = gemm_shape(d, info.sm_count, info.compute_capability);
  // Groups of a few rows: the skinny kernel decodes each weight once per 16
  // tokens where these tiles decode it per tile (or promote it per MX
  // block); fp8 with fp32 scales is not decoded here, and stays.
  const bool decoded_here = decodes(d) || mx_on_fp8_wgmma(d);
  if (decoded_here && skinny::chosen(d, shape)) return skinny::run(d, shape, workspace, stream);
  shape.sm90_decode = decode_of(d);
  const Sm90Plan plan = plan_sm90_gemm(shape);
  const int block_m = plan.config.block_m;
  const int block_n = plan.config.block_n;
  const int64_t m = p.rows_capacity;
  const int sm_count = info.sm_count;
  bool a_kmajor;
  bool b_kmajor;
  bool ok;
  if (d.op == GG_OP_RAGGED_M) {
    // lhs [M, K]; rhs [G, N, K] (T, K-major) or [G, K, N] (N, MN-major).
    const int64_t k = d.lhs.shape[1];
    b_kmajor = d.rhs_layout == GG_LAYOUT_T;
    const int64_t n = b_kmajor ? d.rhs.shape[1] : d.rhs.shape[2];
    p.out_rows = 0;
    p.k_dim = int(k);
    p.out.cols = int(n);
    p.out.ld = d.out.strides[0];
    p.zero_rows_end = (d.flags & GG_GEMM_ZERO_UNUSED_ROWS) ? d.out.shape[0] : 0;
    p.out.bias = d.bias.data;
    p.out.bias_ld = d.bias.data ? d.bias.strides[0] : 0;
    p.out.bias_dtype = d.bias.dtype;
    output_map(&p.out, d.out.shape[0], 1, kStagingChunks<false>);
    log_choice(plan, p.out);
    a_kmajor = true;
    // Per-expert weights: one expert's matrix, over the maps' own address
    // until each copy takes its expert's (expert_maps.h).
    if (decoded) {  // the codes of quantized operands, K-major weights
      const bool lhs_decoded = portable::is_quantized(d.lhs.dtype);
      ok = (lhs_decoded ? raw_operand_map(&p.a_map, d.lhs.dtype, d.lhs.data, k, m, 1,
                                          d.lhs.strides[0], 0, block_m,
                                          raw_step_bytes(d.lhs.dtype), &why)
                        : operand_map(&p.a_map, d.lhs.dtype, d.lhs.data, k, m, 1,
                                      d.lhs.strides[0], 0, true, block_m, &why)) &&
           raw_operand_map(&p.b_map, d.rhs.dtype, expert_maps ? expert_maps : d.rhs.data, k, n,
                           expert_maps ? 1 : d.num_groups, d.rhs.strides[1], d.rhs.strides[0],
                           block_n, raw_step_bytes(d.rhs.dtype), &why);
    } else {
      ok = operand_map(&p.a_map, d.lhs.dtype, d.lhs.data, k, m, 1, d.lhs.strides[0], 0, true,
                       block_m, &why) &&
           operand_map(&p.b_map, d.rhs.dtype, expert_maps ? expert_maps : d.rhs.data,
                       b_kmajor ? k : n, b_kmajor ? n : k, expert_maps ? 1 : d.num_groups,
                       d.rhs.strides[1], d.rhs.strides[0], b_kmajor, block_n, &why);
    }
    if (!ok) return api::fail(GG_STATUS_CUDA_ERROR, "sm90 path: %s", why.c_str());
    if (expert_maps != nullptr) {
      const gg_status status =
          maps_of_experts(p.b_map, d.rhs.data, expert_maps, d.num_groups, stream);
      if (status != GG_STATUS_SUCCESS) return status;
      p.b_maps = expert_maps;
    }
    return launch_planned(p, d, plan, a_kmajor, b_kmajor, sm_count, stream);
  }
  // Ragged-K: lhs [M, P] (N, MN-major) or [P, M] (T, K-major); rhs [M, Q] or [Q, M].
  a_kmajor = d.lhs_layout == GG_LAYOUT_T;
  b_kmajor = d.rhs_layout == GG_LAYOUT_T;
  const int64_t pdim = a_kmajor ? d.lhs.shape[0] : d.lhs.shape[1];
  const int64_t qdim = b_kmajor ? d.rhs.shape[0] : d.rhs.shape[1];
  p.out_rows = int(pdim);
  p.k_dim = 0;
  // In a cluster pair each CTA loads half of the B tile.
  const int b_box_rows = plan.multicast ? block_n / 2 : block_n;
  p.out.cols = int(qdim);
  p.out.ld = d.out.strides[1];
  p.out.group_stride = p.out.pointer_array ? 0 : d.out.strides[0];
  p.out.maps = expert_maps;
  output_map(&p.out, pdim, d.num_groups,
             plan.sparse_k ? kStagingChunks<true> : kStagingChunks<false>);
  // G weight-sized outputs stream through L2 while the CTAs of a wave keep
  // re-reading the group's token rows from it; the outputs are not read
  // again by this launch, so their lines go first (on an H100:
  // decode wgrad 1.01-1.16x faster, 0.84-0.98 of the roofline; compute-bound
  // prefill within the noise).
  p.out.evict_first = true;
  log_choice(plan, p.out);
  if (shape.sm90_decode == Sm90Decode::kTokens) {
    // The codes of columnwise copies [P, M] and [Q, M], boxed along the tokens.
    ok = raw_operand_map(&p.a_map, d.lhs.dtype, d.lhs.data, m, pdim, 1, d.lhs.strides[0], 0,
                         block_m, token_box_bytes(d.lhs.dtype), &why) &&
         raw_operand_map(&p.b_map, d.rhs.dtype, d.rhs.data, m, qdim, 1, d.rhs.strides[0], 0,
                         b_box_rows, token_box_bytes(d.rhs.dtype), &why);
  } else {
    ok = operand_map(&p.a_map, d.lhs.dtype, d.lhs.data, a_kmajor ? m : pdim,
                     a_kmajor ? pdim : m, 1, d.lhs.strides[0], 0, a_kmajor, block_m, &why) &&
         operand_map(&p.b_map, d.rhs.dtype, d.rhs.data, b_kmajor ? m : qdim,
                     b_kmajor ? qdim : m, 1, d.rhs.strides[0], 0, b_kmajor, b_box_rows, &why);
  }
  if (!ok) return api::fail(GG_STATUS_CUDA_ERROR, "sm90 path: %s", why.c_str());
  if (p.out.maps != nullptr) {
    const gg_status status =
        maps_of_experts(p.out.map, d.out.data, expert_maps, d.num_groups, stream);
    if (status != GG_STATUS_SUCCESS) return status;
  }
  if (token_maps(d)) {
    CUtensorMap* maps = reinterpret_cast<CUtensorMap*>(
        scratch + (expert_maps != nullptr ? expert_maps_bytes(d.num_groups) : 0));
    const TokenOperand lhs{p.a_map, d.lhs.data, d.lhs.strides[0] * 2};
    const TokenOperand rhs{p.b_map, d.rhs.data, d.rhs.strides[0] * 2};
    const cudaError_t error = write_token_maps(lhs, rhs, p.sizes, p.offsets, p.index_type,
                                               p.groups, p.rows_capacity, maps, stream);
    if (error != cudaSuccess) {
      return api::fail(GG_STATUS_CUDA_ERROR, "sm90 path: per-group token maps: %s",
                       cudaGetErrorString(error));
    }
    p.token_maps = maps;
  }
  return launch_planned(p, d, plan, a_kmajor, b_kmajor, sm_count, stream);
}

}  // namespace gg

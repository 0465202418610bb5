// Hopper ragged-M grouped GEMM, bf16/fp16 in, fp32 accumulate:
//   out[g rows] = alpha_g * lhs[g rows] * rhs[g]^T + beta_g * out[g rows] + bias[g]
// with rhs stored [G, N, K] (K contiguous, the nn.Linear layout).
//
// Plan of the kernel. A persistent grid (one CTA per SM) of 3 warpgroups.
// Every CTA first builds the group table from the device sizes
// (group_table.cuh). Tiles of BM x BN outputs are numbered group after group,
// m-tile after m-tile, the n-tiles of one m-tile adjacent, so the CTAs working
// at one time share the lhs rows and the group's weights in L2. CTA c takes
// tiles c, c + grid, ...
//   - Warpgroup 0 is the producer: one thread issues TMA loads of a 128 x 64
//     lhs tile and a BN x 64 rhs tile per k-step into a ring of kStages
//     shared-memory stages, each guarded by a "full" mbarrier (TMA bytes
//     arrive) and an "empty" mbarrier (both consumers done reading). Rows past
//     M and columns past K or N read as zeros (TMA out-of-bounds fill); lhs rows
//     of the next group inside a tile are read but only affect output rows
//     that are never stored.
//   - Warpgroups 1 and 2 are consumers: each owns 64 rows of the tile and runs
//     wgmma m64nBNk16 on the 128B-swizzled stages, keeping one wgmma group in
//     flight while releasing the previous stage. The epilogue applies alpha,
//     beta, bias in fp32 and stores straight from registers, masked to the
//     group's rows and to N, so no write ever leaves the group.
// Register budget (setmaxnreg): producer 40, consumers 232.
#include <cuda.h>
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "common/groups.h"
#include "common/workspace.h"
#include "kernels/device.h"
#include "kernels/sm90/group_table.cuh"
#include "kernels/paths.h"
#include "kernels/sm90/sm90_primitives.cuh"
#include "kernels/sm90/tensor_map.h"
#include "kernels/sm90/wgmma.h"

namespace gg::sm90 {
namespace {

constexpr int kBlockM = 128;
constexpr int kBlockK = 64;
constexpr int kThreads = 384;
constexpr int kMaxGroups = 2048;  // group table in shared memory

template <int kBlockN>
struct Config {
  static constexpr int kStages = kBlockN == 256 ? 4 : 6;
  static constexpr int kLhsStageBytes = kBlockM * kBlockK * 2;
  static constexpr int kRhsStageBytes = kBlockN * kBlockK * 2;
  static constexpr int kStageBytes = kLhsStageBytes + kRhsStageBytes;
  static constexpr int kAccumulators = kBlockN / 2;
  // Stages (1024-aligned), then 2 mbarriers per stage, then the group table.
  static constexpr size_t kBarrierOffset = size_t(kStages) * kStageBytes;
  static constexpr size_t kTableOffset = kBarrierOffset + 2 * kStages * sizeof(uint64_t);
  static size_t smem_bytes(int groups) { return 1024 + kTableOffset + group_table_bytes(groups); }
};

struct Params {
  CUtensorMap lhs_map;  // [M, K]
  CUtensorMap rhs_map;  // [G, N, K]
  void* out;
  int64_t out_ld;
  gg_dtype out_dtype;
  const void* bias;     // [G, N] or null
  int64_t bias_ld;
  gg_dtype bias_dtype;
  float alpha;
  float beta;
  const float* alpha_per_group;
  const float* beta_per_group;
  const void* sizes;
  const void* offsets;
  gg_index_type index_type;
  int64_t m;
  int n;
  int k;
  int groups;
  uint32_t* flags;
};

__device__ __forceinline__ float load_value(const void* base, gg_dtype type, int64_t i) {
  switch (type) {
    case GG_DTYPE_BF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    case GG_DTYPE_FP16: return __half2float(static_cast<const __half*>(base)[i]);
    default: return static_cast<const float*>(base)[i];
  }
}

// Stores two adjacent outputs (i is even, N is a multiple of 8, so the pair is
// aligned and either wholly inside N or wholly outside).
__device__ __forceinline__ void store_pair(void* base, gg_dtype type, int64_t i, float v0, float v1) {
  switch (type) {
    case GG_DTYPE_BF16:
      *reinterpret_cast<__nv_bfloat162*>(static_cast<__nv_bfloat16*>(base) + i) =
          __floats2bfloat162_rn(v0, v1);
      break;
    case GG_DTYPE_FP16:
      *reinterpret_cast<__half2*>(static_cast<__half*>(base) + i) = __floats2half2_rn(v0, v1);
      break;
    default:
      *reinterpret_cast<float2*>(static_cast<float*>(base) + i) = make_float2(v0, v1);
      break;
  }
}

struct Tile {
  int group;
  int row0;       // first row of the tile
  int rows;       // rows of the tile inside the group (1..kBlockM)
  int col0;
};

template <int kBlockN, typename T>
__global__ void __launch_bounds__(kThreads, 1) ragged_m_kernel(const __grid_constant__ Params p) {
  using Cfg = Config<kBlockN>;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = reinterpret_cast<uint8_t*>(
      (reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + Cfg::kBarrierOffset);
  uint64_t* empty = full + Cfg::kStages;
  const GroupTable table = group_table_at(smem + Cfg::kTableOffset, p.groups);

  const int warpgroup = static_cast<int>(threadIdx.x) / 128;
  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      cuda::ptx::mbarrier_init(&full[s], 1);
      cuda::ptx::mbarrier_init(&empty[s], 8);  // one arrival per consumer warp
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  const uint32_t flags = build_group_table<kThreads>(table, p.sizes, p.offsets, p.index_type,
                                                     p.groups, p.m, kBlockM);
  if (blockIdx.x == 0 && threadIdx.x == 0 && flags != 0) atomicOr(p.flags, flags);
  __syncthreads();

  const int n_tiles = (p.n + kBlockN - 1) / kBlockN;
  const int total_tiles = table.tile_prefix[p.groups] * n_tiles;
  const int k_steps = (p.k + kBlockK - 1) / kBlockK;

  auto tile_at = [&](int tile) {
    const int m_tile = tile / n_tiles;
    const int g = find_group(table.tile_prefix, p.groups, m_tile);
    Tile t;
    t.group = g;
    t.row0 = table.start[g] + (m_tile - table.tile_prefix[g]) * kBlockM;
    t.rows = min(kBlockM, table.start[g] + table.rows[g] - t.row0);
    t.col0 = (tile - m_tile * n_tiles) * kBlockN;
    return t;
  };

  if (warpgroup == 0) {
    release_registers<40>();
    if (threadIdx.x == 0) {
      int stage = 0;
      uint32_t phase = 0;
      for (int tile = blockIdx.x; tile < total_tiles; tile += gridDim.x) {
        const Tile t = tile_at(tile);
        for (int ks = 0; ks < k_steps; ++ks) {
          wait_barrier(&empty[stage], phase ^ 1);
          uint8_t* lhs_stage = smem + size_t(stage) * Cfg::kStageBytes;
          uint8_t* rhs_stage = lhs_stage + Cfg::kLhsStageBytes;
          cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                               cuda::ptx::space_shared, &full[stage],
                                               Cfg::kStageBytes);
          const int32_t lhs_coords[2] = {ks * kBlockK, t.row0};
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                          lhs_stage, &p.lhs_map, lhs_coords, &full[stage]);
          const int32_t rhs_coords[3] = {ks * kBlockK, t.col0, t.group};
          cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global,
                                          rhs_stage, &p.rhs_map, rhs_coords, &full[stage]);
          if (++stage == Cfg::kStages) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
    }
    return;
  }

  claim_registers<232>();
  const int consumer = warpgroup - 1;     // which 64 rows of the tile
  const int thread = static_cast<int>(threadIdx.x) % 128;
  const int warp = thread / 32;
  const int lane = thread % 32;
  float acc[Cfg::kAccumulators];
  int stage = 0;
  uint32_t phase = 0;
  for (int tile = blockIdx.x; tile < total_tiles; tile += gridDim.x) {
    const Tile t = tile_at(tile);
    int previous_stage = -1;
    for (int ks = 0; ks < k_steps; ++ks) {
      wait_barrier(&full[stage], phase);
      const uint8_t* lhs_stage = smem + size_t(stage) * Cfg::kStageBytes;
      const uint64_t desc_a = kmajor_sw128_desc(lhs_stage + consumer * 64 * 128);
      const uint64_t desc_b = kmajor_sw128_desc(lhs_stage + Cfg::kLhsStageBytes);
      fence_accumulators(acc);
      wgmma_fence();
#pragma unroll
      for (int k16 = 0; k16 < kBlockK / 16; ++k16) {
        Wgmma<kBlockN, T>::mma(acc, advance_k16(desc_a, k16), advance_k16(desc_b, k16),
                               ks > 0 || k16 > 0);
      }
      wgmma_commit();
      fence_accumulators(acc);
      // The group issued one step ago has now finished reading its stage.
      wgmma_wait<1>();
      if (previous_stage >= 0 && lane == 0) cuda::ptx::mbarrier_arrive(&empty[previous_stage]);
      previous_stage = stage;
      if (++stage == Cfg::kStages) {
        stage = 0;
        phase ^= 1;
      }
    }
    wgmma_wait<0>();
    fence_accumulators(acc);
    if (previous_stage >= 0 && lane == 0) cuda::ptx::mbarrier_arrive(&empty[previous_stage]);
    if (k_steps == 0) {
#pragma unroll
      for (int i = 0; i < Cfg::kAccumulators; ++i) acc[i] = 0.0f;
    }

    // Epilogue: accumulator i of this thread is row warp*16 + lane/4 + 8*((i/2)%2),
    // column 8*(i/4) + 2*(lane%4) + i%2 of the consumer's 64 x BN block.
    const float alpha = p.alpha_per_group ? p.alpha_per_group[t.group] : p.alpha;
    const float beta = p.beta_per_group ? p.beta_per_group[t.group] : p.beta;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row_in_tile = consumer * 64 + warp * 16 + lane / 4 + 8 * half;
      if (row_in_tile >= t.rows) continue;
      const int64_t row = t.row0 + row_in_tile;
#pragma unroll
      for (int j = 0; j < kBlockN / 8; ++j) {
        const int col = t.col0 + 8 * j + 2 * (lane % 4);
        if (col >= p.n) continue;
        float v0 = alpha * acc[j * 4 + half * 2];
        float v1 = alpha * acc[j * 4 + half * 2 + 1];
        const int64_t index = row * p.out_ld + col;
        if (beta != 0.0f) {
          v0 += beta * load_value(p.out, p.out_dtype, index);
          v1 += beta * load_value(p.out, p.out_dtype, index + 1);
        }
        if (p.bias != nullptr) {
          const int64_t b = int64_t(t.group) * p.bias_ld + col;
          v0 += load_value(p.bias, p.bias_dtype, b);
          v1 += load_value(p.bias, p.bias_dtype, b + 1);
        }
        store_pair(p.out, p.out_dtype, index, v0, v1);
      }
    }
  }
}

CUtensorMapDataType map_type(gg_dtype type) {
  return type == GG_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
}

template <int kBlockN, typename T>
gg_status launch(const gg_gemm_desc& d, uint32_t* flags, cudaStream_t stream, int sm_count) {
  using Cfg = Config<kBlockN>;
  Params p{};
  std::string why;
  const int64_t m = d.lhs.shape[0];
  const int64_t k = d.lhs.shape[1];
  const int64_t n = d.rhs.shape[1];
  const uint64_t lhs_dims[2] = {uint64_t(k), uint64_t(m)};
  const uint64_t lhs_strides[1] = {uint64_t(d.lhs.strides[0]) * 2};
  const uint32_t lhs_box[2] = {kBlockK, kBlockM};
  const uint64_t rhs_dims[3] = {uint64_t(k), uint64_t(n), uint64_t(d.num_groups)};
  const uint64_t rhs_strides[2] = {uint64_t(d.rhs.strides[1]) * 2, uint64_t(d.rhs.strides[0]) * 2};
  const uint32_t rhs_box[3] = {kBlockK, kBlockN, 1};
  if (!encode_tile_map(&p.lhs_map, map_type(d.lhs.dtype), 2, d.lhs.data, lhs_dims, lhs_strides,
                       lhs_box, &why) ||
      !encode_tile_map(&p.rhs_map, map_type(d.rhs.dtype), 3, d.rhs.data, rhs_dims, rhs_strides,
                       rhs_box, &why)) {
    return GG_STATUS_CUDA_ERROR;
  }
  p.out = d.out.data;
  p.out_ld = d.out.strides[0];
  p.out_dtype = d.out.dtype;
  p.bias = d.bias.data;
  p.bias_ld = d.bias.data ? d.bias.strides[0] : 0;
  p.bias_dtype = d.bias.dtype;
  p.alpha = d.alpha.value;
  p.beta = d.beta.value;
  p.alpha_per_group = d.alpha.per_group;
  p.beta_per_group = d.beta.per_group;
  p.sizes = d.group_sizes.sizes;
  p.offsets = d.group_sizes.offsets;
  p.index_type = d.group_sizes.type;
  p.m = m;
  p.n = static_cast<int>(n);
  p.k = static_cast<int>(k);
  p.groups = d.num_groups;
  p.flags = flags;

  const size_t smem = Cfg::smem_bytes(d.num_groups);
  auto kernel = ragged_m_kernel<kBlockN, T>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)) !=
      cudaSuccess) {
    return GG_STATUS_CUDA_ERROR;
  }
  kernel<<<sm_count, kThreads, smem, stream>>>(p);
  return cudaGetLastError() == cudaSuccess ? GG_STATUS_SUCCESS : GG_STATUS_CUDA_ERROR;
}

}  // namespace
}  // namespace gg::sm90

namespace gg {

bool sm90_gemm_supports(const gg_gemm_desc& d, std::string* why_not) {
  if (d.op != GG_OP_RAGGED_M) return *why_not = "sm90 path: only ragged-M so far", false;
  if (d.lhs.dtype != GG_DTYPE_BF16 && d.lhs.dtype != GG_DTYPE_FP16)
    return *why_not = "sm90 path: bf16/fp16 inputs only", false;
  if (d.rhs_layout != GG_LAYOUT_T)
    return *why_not = "sm90 path: rhs [G, N, K] (layout T) only so far", false;
  if (d.rhs.flags & GG_TENSOR_POINTER_ARRAY)
    return *why_not = "sm90 path: per-expert rhs pointers not yet", false;
  if (d.num_groups > sm90::kMaxGroups) return *why_not = "sm90 path: at most 2048 groups", false;
  if (d.lhs.shape[0] >= (int64_t{1} << 31)) return *why_not = "sm90 path: M < 2^31", false;
  return true;
}

size_t sm90_gemm_scratch_bytes(const gg_gemm_desc&) { return 0; }

gg_status sm90_gemm_run(const gg_gemm_desc& d, void* workspace, size_t, cudaStream_t stream) {
  using namespace sm90;
  DeviceInfo info;
  std::string why;
  if (!query_device(-1, &info, &why)) return GG_STATUS_NO_DEVICE;
  uint32_t* flags = workspace_flags(workspace);
  const int64_t n = d.rhs.shape[1];
  const bool bf16 = d.lhs.dtype == GG_DTYPE_BF16;
  if (n > 128) {
    return bf16 ? launch<256, __nv_bfloat16>(d, flags, stream, info.sm_count)
                : launch<256, __half>(d, flags, stream, info.sm_count);
  }
  return bf16 ? launch<128, __nv_bfloat16>(d, flags, stream, info.sm_count)
              : launch<128, __half>(d, flags, stream, info.sm_count);
}

}  // namespace gg

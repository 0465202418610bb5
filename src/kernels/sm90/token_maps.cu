// The per-group token map writer: see token_maps.h. One CTA builds the
// group table and then writes each map with one thread: a copy of the whole
// operand's map, its global address moved to the group's first row and its
// token dimension cut to the group's rows, released to the tensor-map
// proxy. An empty group's maps keep one row; no k-step reads them.
#include "kernels/sm90/token_maps.h"

#include <cuda/ptx>

#include "kernels/group_table.cuh"

namespace gg::sm90 {
namespace {

constexpr int kThreads = 1024;

__device__ void write_token_map(CUtensorMap* slot, const TokenOperand& operand, int32_t start,
                                int32_t rows) {
  *slot = operand.map;
  // The copy stays before the replaces: cuda::ptx's tensormap.replace has
  // no memory clobber, so the compiler would be free to sink the stores.
  asm volatile("" ::: "memory");
  const auto* base = static_cast<const char*>(operand.data);
  cuda::ptx::tensormap_replace_global_address(
      cuda::ptx::space_global, slot, reinterpret_cast<uint64_t>(base + start * operand.row_bytes));
  // Dimension 1 of an MN-major operand map ({inner, tokens, 1}) is the tokens.
  cuda::ptx::tensormap_replace_global_dim(cuda::ptx::space_global, slot, cuda::ptx::n32_t<1>{},
                                          static_cast<uint32_t>(rows > 0 ? rows : 1));
  cuda::ptx::fence_proxy_tensormap_generic(cuda::ptx::sem_release, cuda::ptx::scope_gpu);
}

__global__ void __launch_bounds__(kThreads)
    token_maps_kernel(const __grid_constant__ TokenOperand lhs,
                      const __grid_constant__ TokenOperand rhs, const void* sizes,
                      const void* offsets, gg_index_type index_type, int groups,
                      int64_t rows_capacity, CUtensorMap* maps) {
  cudaTriggerProgrammaticLaunchCompletion();  // the GEMM may start (wait_for_map_writer)
  extern __shared__ int32_t table_storage[];
  const GroupTable table = group_table_at(table_storage, groups);
  // The flags are the GEMM's to report: its own table sees the same sizes.
  build_group_table<kThreads>(table, sizes, offsets, index_type, groups, rows_capacity, 1);
  for (int i = static_cast<int>(threadIdx.x); i < 2 * groups; i += kThreads) {
    const int g = i < groups ? i : i - groups;
    write_token_map(maps + i, i < groups ? lhs : rhs, table.start[g], table.rows[g]);
  }
}

}  // namespace

cudaError_t write_token_maps(const TokenOperand& lhs, const TokenOperand& rhs, const void* sizes,
                             const void* offsets, gg_index_type index_type, int groups,
                             int64_t rows_capacity, CUtensorMap* maps, cudaStream_t stream) {
  if (groups <= 0) return cudaSuccess;
  const size_t smem = group_table_bytes(groups);
  token_maps_kernel<<<1, kThreads, smem, stream>>>(lhs, rhs, sizes, offsets, index_type, groups,
                                                   rows_capacity, maps);
  return cudaGetLastError();
}

}  // namespace gg::sm90

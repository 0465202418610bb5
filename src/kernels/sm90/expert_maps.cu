// The per-expert map writer: see expert_maps.h. One thread a map: it copies
// the host-encoded map into its slot, replaces the global address there,
// and releases the write to the tensor-map proxy. Pointers are the caller's
// contract (16-byte aligned device memory, as on the portable path); a map
// whose group has no rows is written but never used.
#include "kernels/sm90/expert_maps.h"

#include <cuda/ptx>

namespace gg::sm90 {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads)
    expert_maps_kernel(const __grid_constant__ CUtensorMap matrix, const void* const* pointers,
                       CUtensorMap* maps, int groups) {
  cudaTriggerProgrammaticLaunchCompletion();  // the GEMM may start (wait_for_map_writer)
  const int g = static_cast<int>(blockIdx.x) * kThreads + static_cast<int>(threadIdx.x);
  if (g >= groups) return;
  CUtensorMap* slot = maps + g;
  *slot = matrix;
  // The copy stays before the replace: cuda::ptx's tensormap.replace has no
  // memory clobber, so the compiler would be free to sink the stores past it.
  asm volatile("" ::: "memory");
  cuda::ptx::tensormap_replace_global_address(cuda::ptx::space_global, slot,
                                              reinterpret_cast<uint64_t>(pointers[g]));
  cuda::ptx::fence_proxy_tensormap_generic(cuda::ptx::sem_release, cuda::ptx::scope_gpu);
}

}  // namespace

cudaError_t write_expert_maps(const CUtensorMap& matrix, const void* pointers, CUtensorMap* maps,
                              int groups, cudaStream_t stream) {
  if (groups <= 0) return cudaSuccess;
  const unsigned blocks = static_cast<unsigned>((groups + kThreads - 1) / kThreads);
  const auto* addresses = static_cast<const void* const*>(pointers);
  expert_maps_kernel<<<blocks, kThreads, 0, stream>>>(matrix, addresses, maps, groups);
  return cudaGetLastError();
}

}  // namespace gg::sm90

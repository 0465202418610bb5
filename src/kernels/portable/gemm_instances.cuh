// Launch of the portable GEMM kernel for one input type: picks the
// instantiation (tile config x operand orientations, 8 per type) and sizes the
// persistent grid. Each input type is its own translation unit (gemm_bf16.cu,
// gemm_fp16.cu), so the 16 kernels compile in parallel.
//
// Per device and instantiation, the first launch raises the kernel's dynamic
// shared-memory limit and asks how many CTAs fit on an SM; both answers are
// kept, so later launches (and graph captures) make no attribute calls. The
// grid is that many CTAs per SM, capped by the host's bound on the tile count.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include <algorithm>
#include <atomic>

#include "kernels/portable/gemm_kernel.cuh"
#include "kernels/portable/gemm_params.h"
#include "plan/plan.h"

namespace gg::portable {

constexpr int kMaxDevices = 64;

using Launcher = cudaError_t (*)(const GemmParams&, int64_t, int, cudaStream_t);

// CTAs of `kernel` that fit on one SM of the current device, after allowing it
// `smem_bytes` of dynamic shared memory; 0 with *error set on failure.
// `cache` holds the answer per device (0: not asked yet).
template <class KernelParams>
int resident_ctas(void (*kernel)(KernelParams), int threads, int smem_bytes,
                  std::atomic<int> (&cache)[kMaxDevices], cudaError_t* error) {
  int device = 0;
  *error = cudaGetDevice(&device);
  if (*error != cudaSuccess) return 0;
  const bool cached = device < kMaxDevices;
  if (cached) {
    const int known = cache[device].load(std::memory_order_relaxed);
    if (known > 0) return known;
  }
  *error = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  if (*error != cudaSuccess) return 0;
  int ctas = 0;
  *error = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, smem_bytes);
  if (*error != cudaSuccess) return 0;
  if (ctas == 0) {
    *error = cudaErrorInvalidConfiguration;  // the kernel cannot fit on this device
    return 0;
  }
  if (cached) cache[device].store(ctas, std::memory_order_relaxed);
  return ctas;
}

template <PortableTile kTile, class T, Major kLhs, Major kRhs, bool kLhsDecoded = false,
          bool kRhsDecoded = false>
cudaError_t launch_instance(const GemmParams& params, int64_t max_tiles, int sm_count,
                            cudaStream_t stream) {
  using Gemm = PortableGemm<kTile, T, kLhs, kRhs, kLhsDecoded, kRhsDecoded>;
  static std::atomic<int> ctas_cache[kMaxDevices];
  void (*kernel)(GemmParams) = portable_gemm_kernel<kTile, T, kLhs, kRhs, kLhsDecoded, kRhsDecoded>;
  cudaError_t error = cudaSuccess;
  const int ctas_per_sm =
      resident_ctas(kernel, Gemm::kThreads, Gemm::kSmemBytes, ctas_cache, &error);
  if (error != cudaSuccess) return error;
  const int64_t grid = std::min<int64_t>(max_tiles, int64_t{sm_count} * ctas_per_sm);
  if (grid <= 0) return cudaSuccess;  // no tile can exist: nothing to write
  kernel<<<static_cast<unsigned>(grid), Gemm::kThreads, Gemm::kSmemBytes, stream>>>(params);
  return cudaGetLastError();
}

template <PortableTile kTile, class T>
Launcher launcher_for(Major lhs, Major rhs) {
  if (lhs == Major::kDepth) {
    return rhs == Major::kDepth ? launch_instance<kTile, T, Major::kDepth, Major::kDepth>
                                : launch_instance<kTile, T, Major::kDepth, Major::kOuter>;
  }
  return rhs == Major::kDepth ? launch_instance<kTile, T, Major::kOuter, Major::kDepth>
                              : launch_instance<kTile, T, Major::kOuter, Major::kOuter>;
}

// The launch for input type T: see launch.h.
template <class T>
cudaError_t launch_gemm(PortableTile tile, Major lhs, Major rhs, const GemmParams& params,
                        int64_t max_tiles, int sm_count, cudaStream_t stream) {
  const Launcher launch = tile == PortableTile::k128x128
                              ? launcher_for<PortableTile::k128x128, T>(lhs, rhs)
                              : launcher_for<PortableTile::k64x128, T>(lhs, rhs);
  return launch(params, max_tiles, sm_count, stream);
}

}  // namespace gg::portable

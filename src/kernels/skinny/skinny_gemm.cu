// The skinny kernel's instances: the weights' codes (e2m1, fp8) times the
// tokens' operand as the formats pair (bf16 with either; fp8 with fp8, e2m1
// with e2m1), four kernels. Per device and instance, the first launch
// allows the kernel the dynamic shared memory of the largest group table
// and asks how many CTAs fit on an SM; later launches (and graph captures)
// make no attribute calls.
#include <algorithm>
#include <atomic>

#include "kernels/portable/gemm_instances.cuh"
#include "kernels/skinny/skinny_kernel.cuh"
#include "kernels/skinny/skinny_launch.h"
#include "plan/plan.h"

namespace gg::skinny {
namespace {

constexpr int kMaxTableBytes = static_cast<int>(group_table_bytes(kSkinnyMaxGroups));

template <Tokens kTokens, bool kE2m1>
cudaError_t launch_instance(const Params& params, int64_t max_items, int sm_count,
                            cudaStream_t stream) {
  static std::atomic<int> ctas_cache[portable::kMaxDevices];
  void (*kernel)(Params) = skinny_kernel<kTokens, kE2m1>;
  cudaError_t error = cudaSuccess;
  const int ctas_per_sm =
      portable::resident_ctas(kernel, kThreads, kMaxTableBytes, ctas_cache, &error);
  if (error != cudaSuccess) return error;
  const int64_t grid = std::min<int64_t>(max_items, int64_t{sm_count} * ctas_per_sm);
  if (grid <= 0) return cudaSuccess;  // no item can exist: nothing to write
  const size_t smem = group_table_bytes(params.gemm.groups);
  kernel<<<static_cast<unsigned>(grid), kThreads, smem, stream>>>(params);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch(Tokens tokens, bool e2m1, const Params& params, int64_t max_items,
                   int sm_count, cudaStream_t stream) {
  switch (tokens) {
    case Tokens::kBf16:
      return e2m1 ? launch_instance<Tokens::kBf16, true>(params, max_items, sm_count, stream)
                  : launch_instance<Tokens::kBf16, false>(params, max_items, sm_count, stream);
    case Tokens::kFp8:
      return launch_instance<Tokens::kFp8, false>(params, max_items, sm_count, stream);
    default:
      return launch_instance<Tokens::kE2m1, true>(params, max_items, sm_count, stream);
  }
}

}  // namespace gg::skinny

// The fp8 instances of the Hopper grouped GEMM (grouped_gemm_kernel.cuh):
// both operands K-major (fp8 wgmma reads no other), the pairs a recipe's
// products take: e4m3 x e4m3 (forward) and e5m2 x e4m3 (the gradient
// times the weights in dgrad, times the activations in wgrad). Their fp32
// tensor, group or rowwise scales are applied in the epilogue.
#include <cuda_fp8.h>

#include "kernels/sm90/grouped_gemm_kernel.cuh"

namespace gg::sm90 {

gg_status launch_fp8(Params& p, const Instance& which, gg_dtype lhs, gg_dtype rhs, int groups,
                     int sm_count, cudaStream_t stream) {
  if (!which.a_kmajor || !which.b_kmajor || rhs != GG_DTYPE_E4M3) return GG_STATUS_INTERNAL_ERROR;
  using E4m3 = __nv_fp8_e4m3;
  using E5m2 = __nv_fp8_e5m2;
  return lhs == GG_DTYPE_E4M3
             ? launch_instance<Fp8Operands<E4m3, E4m3>, true, true>(p, which, groups, sm_count,
                                                                    stream)
             : launch_instance<Fp8Operands<E5m2, E4m3>, true, true>(p, which, groups, sm_count,
                                                                    stream);
}

}  // namespace gg::sm90

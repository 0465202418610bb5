// The fp8 instances of the Hopper grouped GEMM (grouped_gemm_kernel.cuh):
// both operands K-major (fp8 wgmma reads no other), the pairs a recipe's
// products take: e4m3 x e4m3 (forward) and e5m2 x e4m3 (the gradient
// times the weights in dgrad, times the activations in wgrad). Their fp32
// tensor, group or rowwise scales are applied in the epilogue; with 1 x 128
// (lhs) x 128 x 128 (rhs) blocks, ragged-M, each k-step is promoted into
// the accumulators times its blocks' scales.
#include <cuda_fp8.h>

#include "kernels/sm90/grouped_gemm_kernel.cuh"

namespace gg::sm90 {

namespace {

template <bool kBlockScaled>
gg_status launch_pair(Params& p, const Instance& which, gg_dtype lhs, int groups, int sm_count,
                      cudaStream_t stream) {
  using E4m3 = __nv_fp8_e4m3;
  using E5m2 = __nv_fp8_e5m2;
  return lhs == GG_DTYPE_E4M3
             ? launch_instance<Fp8Operands<E4m3, E4m3, kBlockScaled>, true, true>(
                   p, which, groups, sm_count, stream)
             : launch_instance<Fp8Operands<E5m2, E4m3, kBlockScaled>, true, true>(
                   p, which, groups, sm_count, stream);
}

}  // namespace

gg_status launch_fp8(Params& p, const Instance& which, gg_dtype lhs, gg_dtype rhs,
                     bool block_scaled, int groups, int sm_count, cudaStream_t stream) {
  if (!which.a_kmajor || !which.b_kmajor || rhs != GG_DTYPE_E4M3) return GG_STATUS_INTERNAL_ERROR;
  return block_scaled ? launch_pair<true>(p, which, lhs, groups, sm_count, stream)
                      : launch_pair<false>(p, which, lhs, groups, sm_count, stream);
}

}  // namespace gg::sm90

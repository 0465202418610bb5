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

gg_status launch_fp8(Params& p, const Instance& which, gg_dtype lhs, gg_dtype rhs,
                     Fp8Blocks blocks, int groups, int sm_count, cudaStream_t stream) {
  if (!which.a_kmajor || !which.b_kmajor || rhs != GG_DTYPE_E4M3) return GG_STATUS_INTERNAL_ERROR;
  switch (blocks) {
    case Fp8Blocks::kNone:
      return launch_fp8_pair<Fp8Blocks::kNone>(p, which, lhs, groups, sm_count, stream);
    case Fp8Blocks::k128:
      return launch_fp8_pair<Fp8Blocks::k128>(p, which, lhs, groups, sm_count, stream);
    case Fp8Blocks::kMx32:  // sm90_gemm_fp8_mx.cu
      return launch_fp8_mx(p, which, lhs, groups, sm_count, stream);
  }
  return GG_STATUS_INTERNAL_ERROR;
}

}  // namespace gg::sm90

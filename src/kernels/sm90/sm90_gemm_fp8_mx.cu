// The mxfp8 instances of the Hopper grouped GEMM (grouped_gemm_kernel.cuh's
// kMxBlocks): ragged-M, activations or gradients (e4m3 or e5m2) times
// K-major e4m3 weights [G, N, K], each operand with e8m0 scales per 32
// elements along K. Their fp8 codes go to the tensor cores as they are,
// and each 32-deep wgmma is promoted into the accumulators times its rows'
// and columns' block scales (products of two powers of two, exact in fp32
// wherever they lie in its range), rather than decoded into bf16 for bf16
// wgmmas: at the fp8 rate, with half the operand bytes in shared memory.
// 128 x 128 and 64 x 256 tiles; compiled apart from the other fp8
// instances, so that the two build in parallel.
#include <cuda_fp8.h>

#include "kernels/sm90/grouped_gemm_kernel.cuh"

namespace gg::sm90 {

gg_status launch_fp8_mx(Params& p, const Instance& which, gg_dtype lhs, int groups, int sm_count,
                        cudaStream_t stream) {
  using E4m3 = __nv_fp8_e4m3;
  using E5m2 = __nv_fp8_e5m2;
  if (which.op != GG_OP_RAGGED_M || !which.a_kmajor || !which.b_kmajor) {
    return GG_STATUS_INTERNAL_ERROR;
  }
  return lhs == GG_DTYPE_E4M3
             ? launch_instance<Fp8Operands<E4m3, E4m3, Fp8Blocks::kMx32>, true, true>(
                   p, which, groups, sm_count, stream)
             : launch_instance<Fp8Operands<E5m2, E4m3, Fp8Blocks::kMx32>, true, true>(
                   p, which, groups, sm_count, stream);
}

}  // namespace gg::sm90

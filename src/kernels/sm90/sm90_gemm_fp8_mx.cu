// The mxfp8 instances of the Hopper grouped GEMM (grouped_gemm_kernel.cuh's
// kMxBlocks): ragged-M, activations or gradients (e4m3 or e5m2) times
// K-major e4m3 weights [G, N, K], each operand with e8m0 scales per 32
// elements along K. Their fp8 codes go to the tensor cores as they are,
// and each 32-deep wgmma is promoted into the accumulators times its rows'
// and columns' block scales (products of two powers of two, exact in fp32
// wherever they lie in its range), rather than decoded into bf16 for bf16
// wgmmas: at the fp8 rate, with half the operand bytes in shared memory.
// 128 x 128 tiles only (the 64 x 256 one spilled); compiled apart from the
// other fp8 instances, so that the two build in parallel.
#include "kernels/sm90/grouped_gemm_kernel.cuh"

namespace gg::sm90 {

gg_status launch_fp8_mx(Params& p, const Instance& which, gg_dtype lhs, int groups, int sm_count,
                        cudaStream_t stream) {
  return launch_fp8_pair<Fp8Blocks::kMx32>(p, which, lhs, groups, sm_count, stream);
}

}  // namespace gg::sm90

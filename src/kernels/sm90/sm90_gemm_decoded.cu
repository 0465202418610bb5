// The decoding instances of the Hopper grouped GEMM (grouped_gemm_kernel.cuh,
// decode_stage.cuh): quantized operands (mxfp8, mxfp4, nvfp4, and fp8 with
// tensor, group or rowwise scales as quantized weights) whose codes TMA
// brings into shared memory and the consumers decode exactly into bf16 tiles
// for bf16 wgmmas. Ragged-M, K-major: quantized weights [G, N, K] with a
// quantized or a bf16 lhs [M, K] (weight-only).
#include "kernels/sm90/grouped_gemm_kernel.cuh"

namespace gg::sm90 {

gg_status launch_decoded(Params& p, const Instance& which, bool lhs_decoded, int groups,
                         int sm_count, cudaStream_t stream) {
  if (which.op != GG_OP_RAGGED_M || !which.a_kmajor || !which.b_kmajor) {
    return GG_STATUS_INTERNAL_ERROR;
  }
  return lhs_decoded ? launch_instance<DecodedOperands<true>, true, true>(p, which, groups,
                                                                         sm_count, stream)
                     : launch_instance<DecodedOperands<false>, true, true>(p, which, groups,
                                                                          sm_count, stream);
}

}  // namespace gg::sm90

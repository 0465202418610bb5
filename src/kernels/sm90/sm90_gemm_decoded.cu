// The decoding instances of the Hopper grouped GEMM (grouped_gemm_kernel.cuh,
// decode_stage.cuh): quantized operands (mxfp8, mxfp4, nvfp4, and fp8 with
// tensor, group or rowwise scales as quantized weights) whose codes TMA
// brings into shared memory and the consumers decode exactly into bf16 tiles
// for bf16 wgmmas. Ragged-M, K-major: quantized weights [G, N, K] with a
// quantized or a bf16 lhs [M, K] (weight-only); ragged-K (the weight
// gradient) along the tokens of the quantizer's columnwise copies [P, M]
// and [Q, M].
#include "kernels/sm90/grouped_gemm_kernel.cuh"

namespace gg::sm90 {

gg_status launch_decoded(Params& p, const Instance& which, Sm90Decode decode, int groups,
                         int sm_count, cudaStream_t stream) {
  if (!which.a_kmajor || !which.b_kmajor) return GG_STATUS_INTERNAL_ERROR;
  switch (decode) {
    case Sm90Decode::kRhs:
      return launch_instance<DecodedOperands<Sm90Decode::kRhs>, true, true>(p, which, groups,
                                                                            sm_count, stream);
    case Sm90Decode::kBoth:
      return launch_instance<DecodedOperands<Sm90Decode::kBoth>, true, true>(p, which, groups,
                                                                             sm_count, stream);
    case Sm90Decode::kTokens:
      return launch_instance<DecodedOperands<Sm90Decode::kTokens>, true, true>(p, which, groups,
                                                                               sm_count, stream);
    case Sm90Decode::kNone:
    case Sm90Decode::kFp8Tokens:  // the fp8 instances' (sm90_gemm_fp8.cu, sm90_gemm_fp8_mx.cu)
    case Sm90Decode::kFp8Mx:
      break;
  }
  return GG_STATUS_INTERNAL_ERROR;
}

}  // namespace gg::sm90

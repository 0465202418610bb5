// The bf16 and fp16 instances of the Hopper grouped GEMM
// (grouped_gemm_kernel.cuh): every operand layout of both ops. Ragged-M
// lhs is [M, K], K-major; its weights and both ragged-K operands are read
// in place, K-major or MN-major.
#include "kernels/sm90/grouped_gemm_kernel.cuh"

namespace gg::sm90 {
namespace {

template <typename T>
gg_status launch_majors(Params& p, const Instance& which, int groups, int sm_count,
                        cudaStream_t stream) {
  if (which.a_kmajor) {
    return which.b_kmajor
               ? launch_instance<T, true, true>(p, which, groups, sm_count, stream)
               : launch_instance<T, true, false>(p, which, groups, sm_count, stream);
  }
  if (which.op != GG_OP_RAGGED_K) return GG_STATUS_INTERNAL_ERROR;
  return which.b_kmajor ? launch_instance<T, false, true>(p, which, groups, sm_count, stream)
                        : launch_instance<T, false, false>(p, which, groups, sm_count, stream);
}

}  // namespace

gg_status launch_16bit(Params& p, const Instance& which, bool bf16, int groups, int sm_count,
                       cudaStream_t stream) {
  return bf16 ? launch_majors<__nv_bfloat16>(p, which, groups, sm_count, stream)
              : launch_majors<__half>(p, which, groups, sm_count, stream);
}

}  // namespace gg::sm90

// The portable GEMM kernels with quantized operands (gemm_instances.cuh):
// both operands decoded, in the four orientations, or a bf16 lhs with a
// decoded rhs (weight-only, ragged-M), in its two. One tile config only
// (plan.h's kQuantizedTile), so six kernels in all.
#include <cuda_bf16.h>

#include "kernels/portable/gemm_instances.cuh"
#include "kernels/portable/launch.h"

namespace gg::portable {

cudaError_t launch_gemm_quantized(Major lhs, Major rhs, bool lhs_decoded,
                                  const GemmParams& params, int64_t max_tiles, int sm_count,
                                  cudaStream_t stream) {
  using T = __nv_bfloat16;
  constexpr PortableTile kTile = kQuantizedTile;
  constexpr Major D = Major::kDepth;
  constexpr Major O = Major::kOuter;
  Launcher launch;
  if (!lhs_decoded) {
    launch = rhs == D ? launch_instance<kTile, T, D, D, false, true>
                      : launch_instance<kTile, T, D, O, false, true>;
  } else if (lhs == D) {
    launch = rhs == D ? launch_instance<kTile, T, D, D, true, true>
                      : launch_instance<kTile, T, D, O, true, true>;
  } else {
    launch = rhs == D ? launch_instance<kTile, T, O, D, true, true>
                      : launch_instance<kTile, T, O, O, true, true>;
  }
  return launch(params, max_tiles, sm_count, stream);
}

}  // namespace gg::portable

// The portable GEMM kernels with bf16 inputs (gemm_instances.cuh).
#include <cuda_bf16.h>

#include "kernels/portable/gemm_instances.cuh"
#include "kernels/portable/launch.h"

namespace gg::portable {

cudaError_t launch_gemm_bf16(PortableTile tile, Major lhs, Major rhs, const GemmParams& params,
                             int64_t max_tiles, int sm_count, cudaStream_t stream) {
  return launch_gemm<__nv_bfloat16>(tile, lhs, rhs, params, max_tiles, sm_count, stream);
}

}  // namespace gg::portable

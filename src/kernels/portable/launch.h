// Host entry points of the portable kernels, between the launcher
// (portable_gemm.cpp, plain C++) and the CUDA translation units that hold the
// kernels. Both enqueue on `stream` and return the launch error, if any.
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/portable/gemm_params.h"
#include "plan/plan.h"

namespace gg::portable {

// The metadata kernel: one CTA, before the GEMM kernel on the same stream.
cudaError_t launch_group_metadata(const MetadataParams& params, cudaStream_t stream);

// The GEMM kernel for one tile config and operand orientation, with bf16 or
// fp16 inputs. The persistent grid is as many CTAs as fit on `sm_count` SMs,
// but no more than `max_tiles`, a host-side bound on the tile count.
cudaError_t launch_gemm_bf16(PortableTile tile, Major lhs, Major rhs, const GemmParams& params,
                             int64_t max_tiles, int sm_count, cudaStream_t stream);
cudaError_t launch_gemm_fp16(PortableTile tile, Major lhs, Major rhs, const GemmParams& params,
                             int64_t max_tiles, int sm_count, cudaStream_t stream);

// The GEMM kernel with a quantized rhs, decoded into bf16 (decoded_tile.cuh),
// and a quantized lhs too (lhs_decoded) or a bf16 one (weight-only, ragged-M:
// lhs depth-major). One tile config, kQuantizedTile, which the plan picks for
// every quantized problem.
cudaError_t launch_gemm_quantized(Major lhs, Major rhs, bool lhs_decoded,
                                  const GemmParams& params, int64_t max_tiles, int sm_count,
                                  cudaStream_t stream);

}  // namespace gg::portable

// The skinny kernel's launch, between its host code (skinny_gemm.cpp) and
// the CUDA translation unit that holds its instances (skinny_gemm.cu).
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/skinny/skinny_kernel_params.h"

namespace gg::skinny {

// Enqueues the instance for the tokens' operand `tokens` and the weights'
// codes (e2m1 or fp8) on a persistent grid of at most `max_items` CTAs.
cudaError_t launch(Tokens tokens, bool e2m1, const Params& params, int64_t max_items,
                   int sm_count, cudaStream_t stream);

}  // namespace gg::skinny

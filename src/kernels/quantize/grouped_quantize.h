// Host entry point of the grouped-quantize kernels (grouped_quantize.cu),
// called by the launcher in quantize_path.cpp.
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "kernels/quantize/quantize_params.h"

namespace gg::quantize {

// A host-side bound on the tiles (128 tokens x 128 K) that any device sizes
// give.
int64_t max_tiles(const QuantizeParams& params);

// Enqueues the amax launch (when params.amax_pass) and the quantize launch on
// `stream`. Each grid is persistent: as many CTAs as fit on `sm_count` SMs,
// but no more than max_tiles.
cudaError_t launch_grouped_quantize(const QuantizeParams& params, int sm_count,
                                    cudaStream_t stream);

}  // namespace gg::quantize

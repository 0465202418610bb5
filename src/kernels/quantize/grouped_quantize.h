// Host entry point of the grouped-quantize kernels (quantize_kernel.cuh),
// called by the launcher in quantize_path.cpp.
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "groupgemm/groupgemm.h"
#include "kernels/quantize/quantize_params.h"

namespace gg::quantize {

// A host-side bound on the tiles (params.tile_rows tokens x 128 K) that any
// device sizes give.
int64_t max_tiles(const QuantizeParams& params);

// Enqueues the amax launch (when params.amax_pass) and the quantize launch on
// `stream`, tiles of params.tile_rows tokens (64, 128 or 256; fp32 input
// 64 or 128). Each grid is persistent: as many CTAs as fit on `sm_count` SMs,
// but no more than max_tiles.
cudaError_t launch_grouped_quantize(const QuantizeParams& params, int sm_count,
                                    cudaStream_t stream);

// The same for one input type and tile height; instantiated in
// quantize_tiles_<kTm>.cu.
template <gg_dtype kIn, int kTm>
cudaError_t launch_passes(const QuantizeParams& params, int sm_count, cudaStream_t stream);

}  // namespace gg::quantize

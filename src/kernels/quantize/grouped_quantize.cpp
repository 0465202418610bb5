// The host side of the grouped-quantize kernels (quantize_kernel.cuh): the
// bound on their tiles and the choice of the instance for the input type
// and the plan's tile height. Each height's instances are compiled in a file
// of their own (quantize_tiles_<height>.cu), so that they build in parallel.
#include "kernels/quantize/grouped_quantize.h"

#include <cuda_runtime_api.h>
#include <stdint.h>

#include "common/groups.h"
#include "kernels/tile_scheduler.h"

namespace gg::quantize {
namespace {

// The instance for the plan's tile height (fp32 input: no 256, whose two
// stages would exceed shared memory).
template <gg_dtype kIn>
cudaError_t launch_for_height(const QuantizeParams& params, int sm_count, cudaStream_t stream) {
  switch (params.tile_rows) {
    case 64: return launch_passes<kIn, 64>(params, sm_count, stream);
    case 128: return launch_passes<kIn, 128>(params, sm_count, stream);
    case 256:
      if constexpr (kIn != GG_DTYPE_FP32) return launch_passes<kIn, 256>(params, sm_count, stream);
      [[fallthrough]];
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

int64_t max_tiles(const QuantizeParams& p) {
  const int64_t tiles_k = ceil_div(p.cols, kTileCols);
  const int64_t rows = p.tile_rows;
  if (p.stacked) return p.groups * ceil_div(p.rows, rows) * tiles_k;
  // Prefix-sum groups hold at most one partial tile each; groups placed by
  // offsets may each span all M rows.
  const int64_t m_tiles = p.offsets == nullptr ? ragged_block_capacity(p.rows, rows, p.groups)
                                               : p.groups * ceil_div(p.rows, rows);
  return m_tiles * tiles_k;
}

cudaError_t launch_grouped_quantize(const QuantizeParams& params, int sm_count,
                                    cudaStream_t stream) {
  switch (params.input_type) {
    case GG_DTYPE_BF16: return launch_for_height<GG_DTYPE_BF16>(params, sm_count, stream);
    case GG_DTYPE_FP16: return launch_for_height<GG_DTYPE_FP16>(params, sm_count, stream);
    default: return launch_for_height<GG_DTYPE_FP32>(params, sm_count, stream);
  }
}

}  // namespace gg::quantize

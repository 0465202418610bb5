// Metadata kernel of the portable path: one CTA of 1024 threads that reads
// the device sizes (and offsets) once per launch and writes, for every group,
// its clamped extent and its range of ragged-M m-tiles (a GroupRecord), plus
// the m-tile total, into the workspace scratch. The GEMM kernel that follows
// on the stream reads them.
//
// Why a separate launch rather than a scan in every CTA: any G must work
// (G = 4096 and beyond), and a table of G records does not fit next to the
// GEMM's pipeline in shared memory; in global memory it costs one tiny launch,
// and each tile then finds its group in a few L2 reads (tile_scheduler.h).
//
// Groups go 1024 at a time. Each chunk takes two block-wide inclusive sums:
// the sizes clamped to [0, M] (capped at M with the earlier chunks' carry:
// the prefix-sum layout's previous_end for gg::clamp_group, which then applies
// the one clamping rule and its flags), and then the m-tiles of the clamped
// sizes. Flags seen by any thread are ORed into the workspace, only if set.
#include <cuda_runtime.h>
#include <stdint.h>

#include "common/groups.h"
#include "kernels/portable/gemm_params.h"
#include "kernels/portable/launch.h"
#include "kernels/tile_scheduler.h"

namespace gg::portable {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
static_assert(kWarps == 32, "one warp scans the per-warp sums");

struct BlockSum {
  int64_t inclusive;  // this thread's value plus those of all lower threads
  int64_t total;      // over the CTA
};

// Inclusive sum of `value` over the CTA. Every thread calls it; `partials`
// (kWarps entries) is free again on return.
__device__ BlockSum block_inclusive_sum(int64_t value, int64_t* partials) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int64_t below = __shfl_up_sync(0xffffffffu, value, d);
    if (lane >= d) value += below;
  }
  if (lane == 31) partials[warp] = value;
  __syncthreads();
  if (warp == 0) {
    int64_t sum = partials[lane];
#pragma unroll
    for (int d = 1; d < 32; d *= 2) {
      const int64_t below = __shfl_up_sync(0xffffffffu, sum, d);
      if (lane >= d) sum += below;
    }
    partials[lane] = sum;  // now: sum of warps 0 .. lane
  }
  __syncthreads();
  const BlockSum sum{value + (warp > 0 ? partials[warp - 1] : 0), partials[kWarps - 1]};
  __syncthreads();
  return sum;
}

__global__ void __launch_bounds__(kThreads)
    group_metadata_kernel(const __grid_constant__ MetadataParams p) {
  __shared__ int64_t partials[kWarps];
  const bool has_offsets = p.offsets != nullptr;
  uint32_t flags = 0;
  int64_t rows_before = 0;   // capped prefix of the counted sizes of earlier chunks
  int64_t tiles_before = 0;  // m-tiles of earlier chunks
  for (int64_t base = 0; base < p.groups; base += kThreads) {
    const int64_t g = base + threadIdx.x;
    const bool live = g < p.groups;
    const int64_t raw_size = live ? load_index(p.sizes, p.index_type, g) : 0;
    const int64_t counted = counted_size(raw_size, p.rows);
    const BlockSum rows = block_inclusive_sum(counted, partials);
    const int64_t previous_end = capped_sum(rows_before, rows.inclusive - counted, p.rows);
    GroupExtent extent{0, 0};
    if (live) {
      const int64_t raw_offset = has_offsets ? load_index(p.offsets, p.index_type, g) : 0;
      extent = clamp_group(raw_size, has_offsets, raw_offset, previous_end, p.rows, &flags);
    }
    const int64_t tiles = ceil_div(extent.size, p.block_m);
    const BlockSum m_tiles = block_inclusive_sum(tiles, partials);
    if (live) {
      const int64_t end = tiles_before + m_tiles.inclusive;
      p.records[g] = GroupRecord{extent.start, extent.size, end - tiles, end};
    }
    rows_before = capped_sum(rows_before, rows.total, p.rows);
    tiles_before += m_tiles.total;
  }
  if (threadIdx.x == 0) *p.total_m_tiles = tiles_before;
  if (flags != 0) atomicOr(p.flags, flags);
}

}  // namespace

cudaError_t launch_group_metadata(const MetadataParams& params, cudaStream_t stream) {
  group_metadata_kernel<<<1, kThreads, 0, stream>>>(params);
  return cudaGetLastError();
}

}  // namespace gg::portable

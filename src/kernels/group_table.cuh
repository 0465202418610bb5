// Per-CTA group table for the kernels that build their own (the Hopper
// kernels, the skinny kernel): every CTA reads the G device
// sizes once at start and builds, in shared memory, each group's clamped
// first row, row count and the prefix of its m-tiles. A tile index then maps
// to its group by a binary search in shared memory. One launch, no setup
// kernel: reading G sizes costs each CTA a few hundred nanoseconds, far less
// than a second launch.
//
// The clamping is gg::clamp_group's rule (src/common/groups.h), in a parallel
// form: a size is first clipped to [0, M] (so int64 prefix sums cannot
// overflow); in the prefix-sum layout the group ends at min(M, inclusive
// prefix); with explicit offsets each group is clamped on its own.
#pragma once

#include <cub/block/block_scan.cuh>
#include <stdint.h>

#include "common/groups.h"

namespace gg {

struct GroupTable {
  int32_t* start;        // [G] first row
  int32_t* rows;         // [G] rows after clamping
  int32_t* tile_prefix;  // [G + 1] m-tiles before group g
};

// Bytes of shared memory a table of `groups` entries takes.
__host__ __device__ constexpr size_t group_table_bytes(int64_t groups) {
  return static_cast<size_t>(3 * groups + 1) * sizeof(int32_t);
}

__device__ __forceinline__ GroupTable group_table_at(void* smem, int groups) {
  int32_t* base = static_cast<int32_t*>(smem);
  return GroupTable{base, base + groups, base + 2 * groups};
}

// Fills `table` cooperatively (all kThreads threads of the CTA must call it)
// and returns the GG_DEVICE_* flags this CTA saw (every thread gets them).
template <int kThreads>
__device__ uint32_t build_group_table(GroupTable table, const void* sizes, const void* offsets,
                                      gg_index_type type, int groups, int64_t rows_capacity,
                                      int block_m) {
  // Warp scans: their scratch is a few words per warp, not one per thread.
  using Scan = cub::BlockScan<int64_t, kThreads, cub::BLOCK_SCAN_WARP_SCANS>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ uint32_t flags_shared;
  if (threadIdx.x == 0) {
    flags_shared = 0;
    table.tile_prefix[0] = 0;
  }
  uint32_t flags = 0;
  int64_t row_carry = 0;   // unclamped rows of all earlier chunks
  int64_t tile_carry = 0;  // m-tiles of all earlier chunks
  for (int base = 0; base < groups; base += kThreads) {
    const int g = base + static_cast<int>(threadIdx.x);
    int64_t size = 0;
    int64_t offset = 0;
    if (g < groups) {
      size = load_index(sizes, type, g);
      if (size < 0) {
        flags |= GG_DEVICE_NEGATIVE_SIZE;
        size = 0;
      }
      if (size > rows_capacity) {
        flags |= GG_DEVICE_SIZES_EXCEED_ROWS;
        size = rows_capacity;
      }
      if (offsets != nullptr) offset = load_index(offsets, type, g);
    }
    int64_t inclusive_rows = 0;
    int64_t chunk_rows = 0;
    Scan(scan_storage).InclusiveSum(size, inclusive_rows, chunk_rows);
    __syncthreads();
    int64_t start;
    int64_t count;
    if (offsets == nullptr) {
      const int64_t end = row_carry + inclusive_rows;
      start = end - size < rows_capacity ? end - size : rows_capacity;
      const int64_t clamped_end = end < rows_capacity ? end : rows_capacity;
      if (size > 0 && end > rows_capacity) flags |= GG_DEVICE_SIZES_EXCEED_ROWS;
      count = clamped_end - start;
    } else {
      start = offset;
      if (start < 0 || start > rows_capacity) {
        if (g < groups) flags |= GG_DEVICE_OFFSET_OUT_OF_RANGE;
        start = start < 0 ? 0 : rows_capacity;
      }
      count = size;
      if (count > rows_capacity - start) {
        flags |= GG_DEVICE_SIZES_EXCEED_ROWS;
        count = rows_capacity - start;
      }
    }
    const int64_t tiles = g < groups ? (count + block_m - 1) / block_m : 0;
    int64_t inclusive_tiles = 0;
    int64_t chunk_tiles = 0;
    Scan(scan_storage).InclusiveSum(tiles, inclusive_tiles, chunk_tiles);
    __syncthreads();
    if (g < groups) {
      table.start[g] = static_cast<int32_t>(start);
      table.rows[g] = static_cast<int32_t>(count);
      table.tile_prefix[g + 1] = static_cast<int32_t>(tile_carry + inclusive_tiles);
    }
    row_carry += chunk_rows;
    tile_carry += chunk_tiles;
  }
  if (flags != 0) atomicOr(&flags_shared, flags);
  __syncthreads();
  return flags_shared;
}

// The group owning global m-tile `tile` (tile_prefix[g] <= tile < tile_prefix[g+1]).
__device__ __forceinline__ int find_group(const int32_t* tile_prefix, int groups, int tile) {
  int lo = 0;
  int hi = groups - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) >> 1;
    if (tile_prefix[mid] <= tile) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace gg

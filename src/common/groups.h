// Group extents from device-side sizes: the one rule every path applies.
//
// Sizes and offsets come from memory the host never reads, so they may be
// wrong. They are clamped, never trusted: a negative size counts as 0; a group
// that would run past the buffer's M rows is cut at M (and every later group
// of a prefix-sum layout is then empty); an offset outside [0, M] is pulled
// into it. Each correction sets a GG_DEVICE_* bit that gg_check reports.
// The reference, the kernels and the tests all call these functions, so every
// path agrees on what a bad size means.
#pragma once

#include <stdint.h>

#include "common/hd.h"
#include "groupgemm/groupgemm.h"

namespace gg {

struct GroupExtent {
  int64_t start;  // first row of the group
  int64_t size;   // rows, after clamping
};

GG_HD int64_t load_index(const void* array, gg_index_type type, int64_t i) {
  return type == GG_INDEX_INT32 ? static_cast<int64_t>(static_cast<const int32_t*>(array)[i])
                                : static_cast<const int64_t*>(array)[i];
}

// Clamps group g given its raw size, its raw offset (ignored unless
// has_offset) and the end of the previous group (prefix-sum layout).
// Returns the extent and ORs problems into *flags.
GG_HD GroupExtent clamp_group(int64_t raw_size, bool has_offset, int64_t raw_offset,
                              int64_t previous_end, int64_t rows, uint32_t* flags) {
  int64_t size = raw_size;
  if (size < 0) {
    *flags |= GG_DEVICE_NEGATIVE_SIZE;
    size = 0;
  }
  int64_t start = previous_end;
  if (has_offset) {
    start = raw_offset;
    if (start < 0 || start > rows) {
      *flags |= GG_DEVICE_OFFSET_OUT_OF_RANGE;
      start = start < 0 ? 0 : rows;
    }
  }
  if (size > rows - start) {
    *flags |= GG_DEVICE_SIZES_EXCEED_ROWS;
    size = rows - start;
  }
  return GroupExtent{start, size};
}

// Number of block rows a group of `size` rows occupies when blocks of
// `block` rows restart at every group start.
GG_HD int64_t blocks_of(int64_t size, int64_t block) { return (size + block - 1) / block; }

// Block rows needed for any sizes of `groups` groups summing to at most
// `rows`: every full block, plus at most one partial block per non-empty
// group.
GG_HD int64_t ragged_block_capacity(int64_t rows, int64_t block, int64_t groups) {
  return rows / block + (groups < rows ? groups : rows);
}

}  // namespace gg

// Tile scheduler: which output tile a CTA of a persistent grid computes.
//
// CTA c takes the linear tile indices c, c + grid, c + 2 grid, ...
//   ragged-M: tile t = m_tile * tiles_n + n_tile. The m-tiles are numbered
//     group after group: group g owns [tile_begin_g, tile_end_g), a prefix sum
//     of ceil(size_g / block_m) over the clamped sizes. Those sums live in one
//     GroupRecord per group, written once per launch (a metadata kernel does it
//     on the device from the device sizes). The n-tiles of one m-tile are
//     adjacent, so the CTAs running at one time share lhs rows and the group's
//     weights in L2. Finding the group of an m-tile is a search over tile_end
//     that a warp runs 32-ary: each lane probes one boundary, a ballot picks
//     the chunk that holds the answer, and each round divides the range by 32
//     (G = 4096 takes three rounds).
//   ragged-K: every group has the same tiles_m x tiles_n output tiles whatever
//     its size (a zero-size group still writes beta * out), so t splits by
//     division: group-major, then m-tile, then n-tile.
//
// Prefix sums of sizes are capped at the row capacity: a size is first clamped
// to [0, rows], so no int64 sum can overflow, and the end of all groups before
// g in the prefix-sum layout is min(rows, sum of clamped sizes) — exactly the
// previous_end that gg::clamp_group expects. Everything here is GG_HD: the CPU
// tests run the math the kernels run.
#pragma once

#include <stdint.h>

#include "common/hd.h"

namespace gg {

// One group's extent after clamping, and its m-tiles (ragged-M numbering).
struct GroupRecord {
  int64_t start;       // first row (token) of the group
  int64_t size;        // rows (tokens), clamped
  int64_t tile_begin;  // first m-tile of the group
  int64_t tile_end;    // one past its last m-tile
};

GG_HD int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A raw size as the capped prefix sum counts it: clamped to [0, rows].
GG_HD int64_t counted_size(int64_t raw_size, int64_t rows) {
  return raw_size < 0 ? 0 : (raw_size > rows ? rows : raw_size);
}

// min(rows, carry + partial) for a carry already capped at rows and a
// partial sum of counted sizes: the capped prefix sum, without overflow.
GG_HD int64_t capped_sum(int64_t carry, int64_t partial, int64_t rows) {
  return partial >= rows - carry ? rows : carry + partial;
}

// ---- ragged-M: tile -> (group, rows, n-tile) ----

struct MTileIndex {
  int64_t m_tile;  // global m-tile, over all groups
  int64_t n_tile;
};

GG_HD MTileIndex split_ragged_m(int64_t tile, int64_t tiles_n) {
  return MTileIndex{tile / tiles_n, tile % tiles_n};
}

// First row of global m-tile `m_tile`, which belongs to `group`.
GG_HD int64_t m_tile_first_row(const GroupRecord& group, int64_t m_tile, int block_m) {
  return group.start + (m_tile - group.tile_begin) * block_m;
}

// 32-ary search for the first group whose tile_end exceeds an m-tile. The
// answer lies in [lo, hi); every lane probes the last index of one of 32
// equal chunks, and the first lane whose probe is past the m-tile names the
// chunk holding the answer. Lane 31 always probes hi - 1, which holds.
constexpr int kSearchLanes = 32;

struct SearchRange {
  int64_t lo;
  int64_t hi;
};

GG_HD int64_t search_step(const SearchRange& range) {
  return ceil_div(range.hi - range.lo, kSearchLanes);
}

GG_HD int64_t search_probe(const SearchRange& range, int lane) {
  const int64_t probe = range.lo + (lane + 1) * search_step(range) - 1;
  return probe < range.hi - 1 ? probe : range.hi - 1;
}

// The range after a round in which `first_lane` was the first lane whose
// probe was past the m-tile.
GG_HD SearchRange search_narrow(const SearchRange& range, int first_lane) {
  const int64_t step = search_step(range);
  const int64_t hi = range.lo + (first_lane + 1) * step;
  return SearchRange{range.lo + first_lane * step, hi < range.hi ? hi : range.hi};
}

// ---- ragged-K: tile -> (group, m-tile, n-tile) ----

struct KTileIndex {
  int64_t group;
  int64_t m_tile;
  int64_t n_tile;
};

GG_HD KTileIndex split_ragged_k(int64_t tile, int64_t tiles_m, int64_t tiles_n) {
  const int64_t per_group = tiles_m * tiles_n;
  const int64_t in_group = tile % per_group;
  return KTileIndex{tile / per_group, in_group / tiles_n, in_group % tiles_n};
}

// The contraction slices of a ragged-K group of `size` tokens from `start`.
// Slices of block_k tokens begin at the start rounded down to a 16-byte chunk
// of `chunk` elements, so that token-contiguous operands are copied in aligned
// chunks; the tokens before the start are then zeroed. An empty group has no
// slice.
struct DepthSlices {
  int64_t first;  // depth of slice 0
  int64_t count;
};

GG_HD DepthSlices ragged_k_slices(int64_t start, int64_t size, int chunk, int block_k) {
  const int64_t first = start - start % chunk;
  return DepthSlices{first, size > 0 ? ceil_div(start + size - first, block_k) : 0};
}

}  // namespace gg

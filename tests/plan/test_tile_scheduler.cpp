// The tile scheduler's math (src/kernels/tile_scheduler.h) against models
// written from the problem statement: group extents from exact 128-bit prefix
// sums, the owning group of an m-tile by a linear scan, and the coverage rule
// that every output element of every group is in exactly one tile.
#include "kernels/tile_scheduler.h"

#include <gtest/gtest.h>
#include <stdint.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "common/groups.h"
#include "groupgemm/groupgemm.h"

namespace gg {
namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

TEST(TileScheduler, CeilDiv) {
  EXPECT_EQ(ceil_div(0, 128), 0);
  EXPECT_EQ(ceil_div(1, 128), 1);
  EXPECT_EQ(ceil_div(128, 128), 1);
  EXPECT_EQ(ceil_div(129, 128), 2);
  EXPECT_EQ(ceil_div(int64_t{1} << 40, 64), int64_t{1} << 34);
}

TEST(TileScheduler, CountedSizeClampsToRows) {
  EXPECT_EQ(counted_size(-5, 100), 0);
  EXPECT_EQ(counted_size(0, 100), 0);
  EXPECT_EQ(counted_size(37, 100), 37);
  EXPECT_EQ(counted_size(100, 100), 100);
  EXPECT_EQ(counted_size(kInt64Max, 100), 100);
}

TEST(TileScheduler, CappedSumNeverPassesRows) {
  EXPECT_EQ(capped_sum(0, 0, 100), 0);
  EXPECT_EQ(capped_sum(30, 40, 100), 70);
  EXPECT_EQ(capped_sum(30, 70, 100), 100);
  EXPECT_EQ(capped_sum(100, 0, 100), 100);
  EXPECT_EQ(capped_sum(99, 1024 * 100, 100), 100);
  EXPECT_EQ(capped_sum(kInt64Max - 1, kInt64Max, kInt64Max), kInt64Max);
}

// ---- group records: the metadata kernel's algorithm against the spec ----

struct Sizes {
  std::vector<int64_t> sizes;
  std::vector<int64_t> offsets;  // empty: prefix-sum layout
};

// Exact model of the clamping rule: with __int128 prefix sums nothing can
// overflow, so the rule is applied as written in groupgemm.h / groups.h.
std::vector<GroupRecord> expected_records(const Sizes& in, int64_t rows, int block_m,
                                          uint32_t* flags) {
  std::vector<GroupRecord> out;
  __int128 sum = 0;  // of max(0, size) over the groups so far
  int64_t tiles = 0;
  for (size_t g = 0; g < in.sizes.size(); ++g) {
    const int64_t s = in.sizes[g];
    if (s < 0) *flags |= GG_DEVICE_NEGATIVE_SIZE;
    const __int128 counted = s < 0 ? 0 : s;
    int64_t start;
    int64_t size;
    if (in.offsets.empty()) {
      const __int128 end = sum + counted;
      start = static_cast<int64_t>(std::min<__int128>(sum, rows));
      size = static_cast<int64_t>(std::min<__int128>(end, rows)) - start;
      if (counted > 0 && end > rows) *flags |= GG_DEVICE_SIZES_EXCEED_ROWS;
      sum = end;
    } else {
      const int64_t o = in.offsets[g];
      if (o < 0 || o > rows) *flags |= GG_DEVICE_OFFSET_OUT_OF_RANGE;
      start = std::clamp<int64_t>(o, 0, rows);
      if (counted > rows - start) *flags |= GG_DEVICE_SIZES_EXCEED_ROWS;
      size = static_cast<int64_t>(std::min<__int128>(counted, rows - start));
    }
    const int64_t group_tiles = (size + block_m - 1) / block_m;
    out.push_back(GroupRecord{start, size, tiles, tiles + group_tiles});
    tiles += group_tiles;
  }
  return out;
}

// The metadata kernel's algorithm on the CPU: groups in chunks of `chunk`
// "threads", each chunk reduced by inclusive sums, the capped carry between
// chunks, gg::clamp_group for the rule.
std::vector<GroupRecord> chunked_records(const Sizes& in, int64_t rows, int block_m, int chunk,
                                         uint32_t* flags, int64_t* total_tiles) {
  const int64_t groups = static_cast<int64_t>(in.sizes.size());
  std::vector<GroupRecord> out(in.sizes.size());
  const bool has_offsets = !in.offsets.empty();
  int64_t rows_before = 0;
  int64_t tiles_before = 0;
  for (int64_t base = 0; base < groups; base += chunk) {
    const int64_t n = std::min<int64_t>(chunk, groups - base);
    std::vector<int64_t> counted(n);
    std::vector<int64_t> rows_through(n);
    for (int64_t i = 0; i < n; ++i) {
      counted[i] = counted_size(in.sizes[base + i], rows);
      rows_through[i] = counted[i] + (i > 0 ? rows_through[i - 1] : 0);
    }
    std::vector<int64_t> tiles(n);
    std::vector<GroupExtent> extents(n);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t previous_end = capped_sum(rows_before, rows_through[i] - counted[i], rows);
      extents[i] = clamp_group(in.sizes[base + i], has_offsets,
                               has_offsets ? in.offsets[base + i] : 0, previous_end, rows, flags);
      tiles[i] = ceil_div(extents[i].size, block_m);
    }
    int64_t tiles_through = 0;
    for (int64_t i = 0; i < n; ++i) {
      tiles_through += tiles[i];
      out[base + i] =
          GroupRecord{extents[i].start, extents[i].size, tiles_before + tiles_through - tiles[i],
                      tiles_before + tiles_through};
    }
    rows_before = capped_sum(rows_before, rows_through[n - 1], rows);
    tiles_before += tiles_through;
  }
  *total_tiles = tiles_before;
  return out;
}

void expect_records_match(const Sizes& in, int64_t rows, int block_m) {
  uint32_t want_flags = 0;
  const std::vector<GroupRecord> want = expected_records(in, rows, block_m, &want_flags);
  for (int chunk : {1, 3, 32, 1024}) {
    uint32_t flags = 0;
    int64_t total = -1;
    const std::vector<GroupRecord> got = chunked_records(in, rows, block_m, chunk, &flags, &total);
    ASSERT_EQ(got.size(), want.size());
    for (size_t g = 0; g < want.size(); ++g) {
      SCOPED_TRACE(testing::Message() << "chunk " << chunk << " group " << g);
      EXPECT_EQ(got[g].start, want[g].start);
      EXPECT_EQ(got[g].size, want[g].size);
      EXPECT_EQ(got[g].tile_begin, want[g].tile_begin);
      EXPECT_EQ(got[g].tile_end, want[g].tile_end);
    }
    EXPECT_EQ(flags, want_flags) << "chunk " << chunk;
    EXPECT_EQ(total, want.empty() ? 0 : want.back().tile_end);
  }
}

TEST(GroupRecords, PrefixLayoutWithinRows) {
  expect_records_match({{5, 0, 128, 129, 1, 0}, {}}, 1000, 128);
}

TEST(GroupRecords, PrefixLayoutCutAtRows) {
  // The third group crosses M; every later group is empty.
  expect_records_match({{40, 50, 30, 7, 0, 9}, {}}, 100, 64);
}

TEST(GroupRecords, NegativeAndHugeSizes) {
  expect_records_match({{-3, 10, kInt64Max, kInt64Max, -kInt64Max - 1, 4}, {}}, 64, 64);
  expect_records_match({{kInt64Max, 1}, {}}, 64, 16);
  expect_records_match({{-1, -1}, {}}, 64, 16);
}

TEST(GroupRecords, ExplicitOffsets) {
  expect_records_match({{10, 20, 5, 40, -2}, {0, 16, 200, -7, 50}}, 100, 16);
  expect_records_match({{kInt64Max, 3}, {99, kInt64Max}}, 100, 16);
}

TEST(GroupRecords, RandomManyGroups) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t groups = 1 + static_cast<int64_t>(rng() % 5000);
    const int64_t rows = static_cast<int64_t>(rng() % 100000);
    const int block_m = trial % 2 == 0 ? 64 : 128;
    Sizes in;
    for (int64_t g = 0; g < groups; ++g) {
      // Mostly plausible sizes around rows / groups, some negative or huge.
      const int64_t typical = static_cast<int64_t>(rng() % (2 * rows / groups + 2));
      const uint64_t pick = rng() % 100;
      in.sizes.push_back(pick == 0 ? -static_cast<int64_t>(rng() % 50)
                                   : (pick == 1 ? kInt64Max / 2 : typical));
      if (trial % 4 == 3) in.offsets.push_back(static_cast<int64_t>(rng() % (rows + 20)) - 10);
    }
    SCOPED_TRACE(testing::Message() << "trial " << trial);
    expect_records_match(in, rows, block_m);
  }
}

// ---- the warp search: owning group of an m-tile ----

struct SearchResult {
  int64_t group;
  int rounds;
};

// A warp's find_group on the CPU: 32 lanes probe, the ballot is the first
// lane whose probe is past the m-tile.
SearchResult warp_search(const std::vector<int64_t>& tile_end, int64_t lo, int64_t m_tile) {
  SearchRange range{lo, static_cast<int64_t>(tile_end.size())};
  int rounds = 0;
  while (range.hi - range.lo > 1) {
    int first = -1;
    for (int lane = 0; lane < kSearchLanes && first < 0; ++lane) {
      const int64_t probe = search_probe(range, lane);
      EXPECT_GE(probe, range.lo);
      EXPECT_LT(probe, range.hi);
      if (tile_end[probe] > m_tile) first = lane;
    }
    EXPECT_GE(first, 0) << "no lane past m-tile " << m_tile;
    if (first < 0) return {-1, rounds};
    range = search_narrow(range, first);
    ++rounds;
  }
  return {range.lo, rounds};
}

int64_t owner_by_scan(const std::vector<int64_t>& tile_end, int64_t m_tile) {
  for (size_t g = 0; g < tile_end.size(); ++g) {
    if (tile_end[g] > m_tile) return static_cast<int64_t>(g);
  }
  return -1;
}

// ceil(log32(groups)): the rounds a 32-ary search needs.
int max_rounds(int64_t groups) {
  int rounds = 0;
  for (int64_t reach = 1; reach < groups; reach *= kSearchLanes) ++rounds;
  return rounds;
}

std::vector<int64_t> random_tile_ends(std::mt19937_64& rng, int64_t groups, int empty_percent) {
  std::vector<int64_t> tile_end;
  int64_t total = 0;
  for (int64_t g = 0; g < groups; ++g) {
    if (static_cast<int>(rng() % 100) >= empty_percent)
      total += 1 + static_cast<int64_t>(rng() % 5);
    tile_end.push_back(total);
  }
  return tile_end;
}

TEST(WarpSearch, FindsOwnerFromAnyLowerBound) {
  std::mt19937_64 rng(11);
  for (int64_t groups : {1, 2, 31, 32, 33, 256, 1000, 1024, 1025, 4096}) {
    for (int empty_percent : {0, 50, 95}) {
      const std::vector<int64_t> tile_end = random_tile_ends(rng, groups, empty_percent);
      const int64_t total = tile_end.back();
      int64_t hint = 0;  // as a CTA walks its tiles in increasing order
      for (int64_t m_tile = 0; m_tile < total; ++m_tile) {
        const int64_t owner = owner_by_scan(tile_end, m_tile);
        const SearchResult from_zero = warp_search(tile_end, 0, m_tile);
        ASSERT_EQ(from_zero.group, owner) << "G " << groups << " m-tile " << m_tile;
        EXPECT_LE(from_zero.rounds, max_rounds(groups));
        const SearchResult from_hint = warp_search(tile_end, hint, m_tile);
        ASSERT_EQ(from_hint.group, owner) << "G " << groups << " m-tile " << m_tile;
        hint = from_hint.group;
      }
    }
  }
}

TEST(WarpSearch, SkipsEmptyGroupsAtBothEnds) {
  // Groups 0, 1 and 4, 5 are empty; m-tiles 0..2 are group 2's, 3 is group 3's.
  const std::vector<int64_t> tile_end = {0, 0, 3, 4, 4, 4};
  EXPECT_EQ(warp_search(tile_end, 0, 0).group, 2);
  EXPECT_EQ(warp_search(tile_end, 0, 2).group, 2);
  EXPECT_EQ(warp_search(tile_end, 0, 3).group, 3);
  EXPECT_EQ(warp_search(tile_end, 2, 3).group, 3);
}

// ---- coverage: every output element of every group in exactly one tile ----

TEST(RaggedMTiles, CoverEveryGroupRowExactlyOnce) {
  std::mt19937_64 rng(3);
  const int block_m = 64;
  const int block_n = 128;
  for (int trial = 0; trial < 30; ++trial) {
    const int64_t rows = 1 + static_cast<int64_t>(rng() % 700);
    const int64_t cols = 1 + static_cast<int64_t>(rng() % 300);
    const int64_t groups = 1 + static_cast<int64_t>(rng() % 40);
    Sizes in;
    for (int64_t g = 0; g < groups; ++g) {
      in.sizes.push_back(static_cast<int64_t>(rng() % (2 * rows / groups + 2)));
    }
    uint32_t flags = 0;
    const std::vector<GroupRecord> records = expected_records(in, rows, block_m, &flags);
    std::vector<int64_t> tile_end;
    for (const GroupRecord& r : records) tile_end.push_back(r.tile_end);
    const int64_t tiles_n = ceil_div(cols, block_n);
    const int64_t tiles = records.back().tile_end * tiles_n;

    // covered[row * cols + col]: how many tiles wrote the element.
    std::vector<int> covered(static_cast<size_t>(rows * cols), 0);
    for (int64_t t = 0; t < tiles; ++t) {
      const MTileIndex index = split_ragged_m(t, tiles_n);
      const int64_t g = warp_search(tile_end, 0, index.m_tile).group;
      ASSERT_GE(g, 0);
      const GroupRecord& group = records[g];
      const int64_t first = m_tile_first_row(group, index.m_tile, block_m);
      const int64_t group_end = group.start + group.size;
      EXPECT_GE(first, group.start);
      EXPECT_LT(first, group_end);
      for (int64_t r = first; r < std::min<int64_t>(first + block_m, group_end); ++r) {
        for (int64_t c = index.n_tile * block_n;
             c < std::min<int64_t>((index.n_tile + 1) * block_n, cols); ++c) {
          ++covered[r * cols + c];
        }
      }
    }
    std::vector<int> owners(static_cast<size_t>(rows), 0);
    for (const GroupRecord& r : records) {
      for (int64_t row = r.start; row < r.start + r.size; ++row) ++owners[row];
    }
    for (int64_t row = 0; row < rows; ++row) {
      for (int64_t c = 0; c < cols; ++c) {
        ASSERT_EQ(covered[row * cols + c], owners[row]) << "row " << row << " col " << c;
      }
    }
  }
}

TEST(RaggedKTiles, EveryGroupTileOnce) {
  const int64_t groups = 5;
  const int64_t tiles_m = 3;
  const int64_t tiles_n = 4;
  std::vector<int> seen(groups * tiles_m * tiles_n, 0);
  for (int64_t t = 0; t < groups * tiles_m * tiles_n; ++t) {
    const KTileIndex index = split_ragged_k(t, tiles_m, tiles_n);
    ASSERT_GE(index.group, 0);
    ASSERT_LT(index.group, groups);
    ASSERT_GE(index.m_tile, 0);
    ASSERT_LT(index.m_tile, tiles_m);
    ASSERT_GE(index.n_tile, 0);
    ASSERT_LT(index.n_tile, tiles_n);
    ++seen[(index.group * tiles_m + index.m_tile) * tiles_n + index.n_tile];
  }
  for (int count : seen) EXPECT_EQ(count, 1);
}

TEST(RaggedKSlices, CoverTheGroupFromAnAlignedChunk) {
  const int chunk = 8;
  const int block_k = 32;
  for (int64_t start = 0; start < 80; ++start) {
    for (int64_t size = 0; size < 120; ++size) {
      const DepthSlices s = ragged_k_slices(start, size, chunk, block_k);
      SCOPED_TRACE(testing::Message() << "start " << start << " size " << size);
      if (size == 0) {
        EXPECT_EQ(s.count, 0);
        continue;
      }
      EXPECT_EQ(s.first % chunk, 0);
      EXPECT_LE(s.first, start);
      EXPECT_GT(s.first + chunk, start);
      // The slices reach the group's end, and the last one is not idle.
      EXPECT_GE(s.first + s.count * block_k, start + size);
      EXPECT_LT(s.first + (s.count - 1) * block_k, start + size);
    }
  }
}

}  // namespace
}  // namespace gg

// The Hopper ragged-M tile order (kernels/sm90/tile_order.h): every output
// tile of a group exactly once, and neighbouring tiles sharing a weight tile.
#include "kernels/sm90/tile_order.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using gg::sm90::kBandMTiles;
using gg::sm90::tile_in_group;
using gg::sm90::TileInGroup;

TEST(Sm90TileOrder, VisitsEveryTileOfAGroupOnce) {
  for (int m_tiles : {1, 2, 3, 4, 7, 8, 9, 15, 16, 17, 33, 100}) {
    for (int n_tiles : {1, 2, 5, 16, 56}) {
      std::vector<int> seen(static_cast<size_t>(m_tiles * n_tiles), 0);
      for (int local = 0; local < m_tiles * n_tiles; ++local) {
        const TileInGroup t = tile_in_group(local, m_tiles, n_tiles);
        ASSERT_GE(t.m_tile, 0);
        ASSERT_LT(t.m_tile, m_tiles);
        ASSERT_GE(t.n_tile, 0);
        ASSERT_LT(t.n_tile, n_tiles);
        ++seen[static_cast<size_t>(t.m_tile * n_tiles + t.n_tile)];
      }
      for (int count : seen) EXPECT_EQ(count, 1) << m_tiles << " x " << n_tiles;
    }
  }
}

TEST(Sm90TileOrder, ABandWalksEachWeightTileWithAllItsRows) {
  // 20 m-tiles: bands of 8, 8 and 4. Inside a band, consecutive tiles share
  // the n-tile until every m-tile of the band has had it.
  const int m_tiles = 20;
  const int n_tiles = 6;
  int local = 0;
  for (int band_first = 0; band_first < m_tiles; band_first += kBandMTiles) {
    const int band = m_tiles - band_first < kBandMTiles ? m_tiles - band_first : kBandMTiles;
    for (int n = 0; n < n_tiles; ++n) {
      for (int m = 0; m < band; ++m, ++local) {
        const TileInGroup t = tile_in_group(local, m_tiles, n_tiles);
        EXPECT_EQ(t.n_tile, n) << "tile " << local;
        EXPECT_EQ(t.m_tile, band_first + m) << "tile " << local;
      }
    }
  }
  EXPECT_EQ(local, m_tiles * n_tiles);
}

TEST(Sm90TileOrder, ASmallGroupReadsEachWeightTileOnce) {
  // Four m-tiles (a 512-row expert): the four tiles of one n-tile are adjacent.
  for (int local = 0; local < 4 * 16; ++local) {
    const TileInGroup t = tile_in_group(local, 4, 16);
    EXPECT_EQ(t.n_tile, local / 4);
    EXPECT_EQ(t.m_tile, local % 4);
  }
}

}  // namespace

// The order in which the Hopper ragged-M kernel walks one group's output
// tiles, chosen so that the CTAs running at the same time share operands in
// L2. Within a group, m-tiles are taken in bands of kBandMTiles; a band walks
// its n-tiles one after another, and for each n-tile all of the band's
// m-tiles back to back. The CTAs of one wave (tiles c, c + 1, ...) thus read
// the same weight tile at the same moment, and a band's lhs rows (at most
// kBandMTiles x 128 rows) stay in L2 while the band walks every n-tile.
// A group with few m-tiles (decode, or 512-row experts) is one band: its
// weights are read once per n-tile, not once per m-tile.
#pragma once

#include "common/hd.h"

namespace gg::sm90 {

constexpr int kBandMTiles = 8;

struct TileInGroup {
  int m_tile;  // 0 .. m_tiles-1 within the group
  int n_tile;  // 0 .. n_tiles-1
};

// Tile `local` (0 .. m_tiles * n_tiles - 1) of a group with m_tiles x n_tiles
// output tiles.
GG_HD TileInGroup tile_in_group(int local, int m_tiles, int n_tiles) {
  const int band = local / (kBandMTiles * n_tiles);
  const int band_first = band * kBandMTiles;
  const int band_m_tiles = m_tiles - band_first < kBandMTiles ? m_tiles - band_first : kBandMTiles;
  const int in_band = local - band * kBandMTiles * n_tiles;
  return TileInGroup{band_first + in_band % band_m_tiles, in_band / band_m_tiles};
}

}  // namespace gg::sm90

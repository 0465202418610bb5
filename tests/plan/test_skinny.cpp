// The skinny kernel's decode and fragment layout on the CPU
// (kernels/skinny/skinny_decode.h, skinny_layout.h): every e2m1 code in
// every position of a word, times every MX32 and NV16 scale code, and
// every fp8 code times every e8m0 code (and without block scales), gives
// the portable path's decode_to_bf16 (tests/plan/test_operand_decode.cpp
// ties it to the reference), times 2^-8 where nvfp4's accumulator is
// multiplied back; the bf16 tokens' interleave puts each depth where the
// e2m1 decode puts it; every depth of a 512-deep block meets the same depth
// on the other side of its mma, once; and the plan's rule.
#include <gtest/gtest.h>
#include <math.h>
#include <stdint.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "formats/codecs.h"
#include "kernels/portable/mma_layout.h"
#include "kernels/portable/operand_decode.h"
#include "kernels/skinny/skinny_decode.h"
#include "kernels/skinny/skinny_layout.h"
#include "plan/plan.h"

namespace gg::skinny {
namespace {

float half_value(uint32_t word, int half) {
  return fmt::bf16_to_float(static_cast<uint16_t>(word >> (16 * half)));
}

// Expects decoded `got` x 2^shift to be the reference's bf16 value (both
// NaN, or the same value and sign).
void expect_value(float got, int shift, uint16_t want_bits) {
  const float want = fmt::bf16_to_float(want_bits);
  if (isnan(want) || isnan(got)) {
    EXPECT_TRUE(isnan(want) && isnan(got)) << got << " vs " << want;
    return;
  }
  const float scaled = ldexpf(got, shift);
  EXPECT_EQ(scaled, want);
  EXPECT_EQ(signbit(scaled), signbit(want));
}

TEST(SkinnyDecode, E2m1InEveryPositionTimesEveryScaleCode) {
  for (gg_block_scaling scaling : {GG_BLOCK_MX32, GG_BLOCK_NV16}) {
    const int shift = accumulator_shift(GG_DTYPE_E2M1, scaling);
    for (int scale_code = 0; scale_code < 256; ++scale_code) {
      const PairFactors f = e2m1_factors(scaling, static_cast<uint8_t>(scale_code));
      for (int rotation = 0; rotation < 16; ++rotation) {
        // Element i of the word holds code (3 i + rotation) % 16: over the
        // rotations every code reaches every position, and neighbours
        // differ, so a swapped nibble shows.
        uint32_t codes = 0;
        for (int i = 0; i < 8; ++i) {
          codes |= static_cast<uint32_t>((i * 3 + rotation) % 16) << (4 * i);
        }
        for (int j = 0; j < 4; ++j) {
          const uint32_t pair = e2m1_pair(codes, j, f);
          for (int half = 0; half < 2; ++half) {
            const int element = j + 4 * half;
            const uint8_t code = static_cast<uint8_t>((codes >> (4 * element)) & 0xFu);
            SCOPED_TRACE(testing::Message() << "scaling " << scaling << " scale code "
                                            << scale_code << " element " << element << " code "
                                            << int{code});
            expect_value(half_value(pair, half), shift,
                         portable::decode_to_bf16(GG_DTYPE_E2M1, code, scaling,
                                                  static_cast<uint8_t>(scale_code)));
          }
        }
      }
    }
  }
}

void check_fp8(gg_dtype dtype, gg_block_scaling scaling, int scale_codes) {
  const bool e5m2 = dtype == GG_DTYPE_E5M2;
  for (int scale_code = 0; scale_code < scale_codes; ++scale_code) {
    const PairFactors f = fp8_factors(e5m2, scaling, static_cast<uint8_t>(scale_code));
    for (int first = 0; first < 256; first += 4) {
      // A word of four codes, in a chunk whose special-code check sees them.
      uint32_t codes = 0;
      for (int b = 0; b < 4; ++b) codes |= static_cast<uint32_t>((first + b * 65) % 256) << (8 * b);
      // The kernel flags a whole chunk: a word without a special code may
      // take the special route too, and must come out the same.
      for (bool flagged : {false, true}) {
        const bool special = flagged || sm90::has_special_fp8(e5m2, codes);
        for (int pair = 0; pair < 2; ++pair) {
          const uint32_t word = fp8_pair(e5m2, codes, pair, f, special);
          for (int half = 0; half < 2; ++half) {
            const uint8_t code = static_cast<uint8_t>(codes >> (8 * (2 * pair + half)));
            SCOPED_TRACE(testing::Message() << "dtype " << dtype << " scale code " << scale_code
                                            << " code " << int{code});
            expect_value(half_value(word, half), 0,
                         portable::decode_to_bf16(dtype, code, scaling,
                                                  static_cast<uint8_t>(scale_code)));
          }
        }
      }
    }
  }
}

TEST(SkinnyDecode, Fp8TimesEveryE8m0AndWithoutBlockScales) {
  for (gg_dtype dtype : {GG_DTYPE_E4M3, GG_DTYPE_E5M2}) {
    check_fp8(dtype, GG_BLOCK_MX32, 256);
    check_fp8(dtype, GG_BLOCK_NONE, 1);
    check_fp8(dtype, GG_BLOCK_ROWWISE, 1);
  }
}

TEST(SkinnyDecode, OnlyNvfp4ShiftsItsAccumulator) {
  EXPECT_EQ(accumulator_shift(GG_DTYPE_E2M1, GG_BLOCK_NV16), 8);
  EXPECT_EQ(accumulator_shift(GG_DTYPE_E2M1, GG_BLOCK_MX32), 0);
  EXPECT_EQ(accumulator_shift(GG_DTYPE_E4M3, GG_BLOCK_MX32), 0);
  EXPECT_EQ(accumulator_shift(GG_DTYPE_BF16, GG_BLOCK_NONE), 0);
}

// bf16 values in order, interleaved, sit where the e2m1 decode puts the
// elements of the same depths: word j holds depths j and j + 4.
TEST(SkinnyDecode, InterleavedBf16MatchesTheE2m1Order) {
  uint32_t in[4];
  for (int i = 0; i < 4; ++i) in[i] = (2u * i) | (2u * i + 1) << 16;  // depth d holds d
  uint32_t out[4];
  interleave_eight(in, out);
  for (int j = 0; j < 4; ++j) {
    const DepthPair p = word_depths(true, j);
    EXPECT_EQ(out[j] & 0xFFFFu, static_cast<uint32_t>(p.low));
    EXPECT_EQ(out[j] >> 16, static_cast<uint32_t>(p.high));
    EXPECT_EQ(p.low, j);
    EXPECT_EQ(p.high, j + 4);
  }
}

// For each lane, chunk, mma and register, the depths of the A words (the
// weight row's) are those of the B words the fill unit of that slot
// stores; and each weight row's 512 depths are read once per block.
TEST(SkinnyLayout, EveryDepthMeetsItselfOnceABlock) {
  for (bool e2m1 : {false, true}) {
    SCOPED_TRACE(e2m1 ? "e2m1" : "fp8");
    // Which thread fills each (mma, tile, lane) slot, and the depths there.
    std::set<std::pair<int, int>> filled;  // (token, depth) of every unit
    int slot_depth[kBlockMmas][2][32][2][2];
    int slot_token[kBlockMmas][2][32];
    for (int thread = 0; thread < kThreads; ++thread) {
      const FillUnit unit = fill_unit(e2m1, thread);
      ASSERT_GE(unit.token, 0);
      ASSERT_LT(unit.token, kTileTokens);
      ASSERT_EQ(unit.lane / 4, unit.token % 8) << "the B operand's column is lane / 4";
      for (int d = 0; d < kFillElements; ++d) {
        EXPECT_TRUE(filled.insert({unit.token, unit.depth + d}).second);
      }
      for (int j = 0; j < 8; ++j) {
        for (int r = 0; r < 2; ++r) {
          const DepthPair p = unit_word_depths(e2m1, 2 * j + r);
          slot_depth[unit.mma0 + j][unit.token / 8][unit.lane][r][0] = unit.depth + p.low;
          slot_depth[unit.mma0 + j][unit.token / 8][unit.lane][r][1] = unit.depth + p.high;
        }
        slot_token[unit.mma0 + j][unit.token / 8][unit.lane] = unit.token;
      }
    }
    EXPECT_EQ(filled.size(), static_cast<size_t>(kTileTokens * kBlockDepth));
    std::set<int> row_depths[8];  // a weight row's (lanes 4 g .. 4 g + 3 hold it)
    for (int lane = 0; lane < 32; ++lane) {
      for (int c = 0; c < block_chunks(e2m1); ++c) {
        for (int j = 0; j < chunk_mmas(e2m1); ++j) {
          const int m = c * chunk_mmas(e2m1) + j;
          for (int r = 0; r < 2; ++r) {
            const DepthPair a = word_depths(e2m1, 2 * j + r);
            const int low = chunk_depth(e2m1, lane % 4, c) + a.low;
            const int high = chunk_depth(e2m1, lane % 4, c) + a.high;
            EXPECT_TRUE(row_depths[lane / 4].insert(low).second);
            EXPECT_TRUE(row_depths[lane / 4].insert(high).second);
            for (int t = 0; t < 2; ++t) {
              EXPECT_EQ(slot_depth[m][t][lane][r][0], low) << "mma " << m << " lane " << lane;
              EXPECT_EQ(slot_depth[m][t][lane][r][1], high) << "mma " << m << " lane " << lane;
              EXPECT_EQ(slot_token[m][t][lane], 8 * t + lane / 4);
            }
          }
        }
      }
    }
    for (const std::set<int>& depths : row_depths) {
      EXPECT_EQ(depths.size(), static_cast<size_t>(kBlockDepth));
      EXPECT_EQ(*depths.rbegin(), kBlockDepth - 1);
    }
    // The slots are the block's words, each once.
    std::set<int> slots;
    for (int m = 0; m < kBlockMmas; ++m) {
      for (int t = 0; t < 2; ++t) {
        for (int lane = 0; lane < 32; ++lane) {
          for (int r = 0; r < 2; ++r) EXPECT_TRUE(slots.insert(b_slot(m, t, lane, r)).second);
        }
      }
    }
    EXPECT_EQ(slots.size(), static_cast<size_t>(kBlockWords));
    EXPECT_EQ(*slots.rbegin(), kBlockWords - 1);
  }
}

// Every (group, block of columns, token tile) is one item, once; the token
// tiles of one block of a group follow one another.
TEST(SkinnyLayout, ItemsAreEveryGroupsTilesOnce) {
  const std::vector<std::vector<int64_t>> lists = {
      {37}, {0, 16, 1, 0, 33, 17, 0}, {0, 0, 0}, std::vector<int64_t>(256, 3)};
  for (const std::vector<int64_t>& sizes : lists) {
    for (int64_t n_blocks : {1, 3}) {
      std::vector<int64_t> prefix = {0};
      for (int64_t size : sizes) {
        prefix.push_back(prefix.back() + (size + kTileTokens - 1) / kTileTokens);
      }
      std::set<std::vector<int64_t>> seen;
      int64_t previous_group = -1, previous_block = -1, previous_tile = -1;
      for (int64_t item = 0; item < prefix.back() * n_blocks; ++item) {
        // The group table's search: the last group whose tiles start at or
        // before item / n_blocks.
        const int64_t key = item / n_blocks;
        const int64_t g =
            std::upper_bound(prefix.begin(), prefix.end() - 1, key) - prefix.begin() - 1;
        const int64_t tiles = prefix[g + 1] - prefix[g];
        ASSERT_GT(tiles, 0) << "item " << item;
        const ItemPlace place = item_place(item, n_blocks, prefix[g], tiles);
        ASSERT_GE(place.n_block, 0);
        ASSERT_LT(place.n_block, n_blocks);
        ASSERT_GE(place.token_tile, 0);
        ASSERT_LT(place.token_tile, tiles);
        EXPECT_TRUE(seen.insert({g, place.n_block, place.token_tile}).second) << "item " << item;
        if (g == previous_group && place.n_block == previous_block) {
          EXPECT_EQ(place.token_tile, previous_tile + 1);
        } else {
          EXPECT_EQ(place.token_tile, 0);
        }
        previous_group = g, previous_block = place.n_block, previous_tile = place.token_tile;
      }
      EXPECT_EQ(seen.size(), static_cast<size_t>(prefix.back() * n_blocks));
    }
  }
}

// After the trade of one value with lane ^ 4, each lane's pair holds the
// accumulators (mma_layout.h's positions) of two adjacent columns of one
// token, and every (token, column) of a warp's 16 x 32 outputs is stored
// once.
TEST(SkinnyLayout, EpiloguePairsAreAdjacentColumnsOfOneToken) {
  // An accumulator's value names its place: column * 100 + token.
  const auto value = [](int col, int token) { return static_cast<float>(col * 100 + token); };
  float acc[32][2][2][4];
  for (int lane = 0; lane < 32; ++lane) {
    for (int mi = 0; mi < 2; ++mi) {
      for (int t = 0; t < 2; ++t) {
        for (int e = 0; e < 4; ++e) {
          acc[lane][mi][t][e] = value(16 * mi + portable::accumulator_row(lane, e),
                                      8 * t + portable::accumulator_col(lane, e));
        }
      }
    }
  }
  std::set<std::pair<int, int>> stored;
  for (int mi = 0; mi < 2; ++mi) {
    for (int t = 0; t < 2; ++t) {
      for (int h = 0; h < 2; ++h) {
        float given[32];
        for (int lane = 0; lane < 32; ++lane) {
          given[lane] = gives_low(lane) ? acc[lane][mi][t][2 * h] : acc[lane][mi][t][2 * h + 1];
        }
        for (int lane = 0; lane < 32; ++lane) {
          const float low = acc[lane][mi][t][2 * h];
          const float high = acc[lane][mi][t][2 * h + 1];
          const float received = given[lane ^ 4];
          const StorePair at = store_pair(lane, mi, t, h);
          const bool odd = gives_low(lane);
          EXPECT_EQ(at.col % 2, 0);
          EXPECT_EQ(odd ? received : low, value(at.col, at.token)) << "lane " << lane;
          EXPECT_EQ(odd ? high : received, value(at.col + 1, at.token)) << "lane " << lane;
          EXPECT_TRUE(stored.insert({at.token, at.col}).second);
          EXPECT_TRUE(stored.insert({at.token, at.col + 1}).second);
        }
      }
    }
  }
  EXPECT_EQ(stored.size(), static_cast<size_t>(kTileTokens * kWarpRows));
}

GemmShape shape_of(int64_t m, int32_t groups, bool decoded) {
  GemmShape s{GG_OP_RAGGED_M, m, 4096, 2048, groups, GG_DTYPE_BF16, 132, 90};
  s.decoded = decoded;
  return s;
}

TEST(SkinnyPlan, QuantizedRaggedMWithGroupsOfAFewRows) {
  EXPECT_TRUE(plan_skinny(shape_of(1024, 128, true)));   // 8 rows a group
  EXPECT_TRUE(plan_skinny(shape_of(32 * 8, 8, true)));   // 32
  EXPECT_FALSE(plan_skinny(shape_of(33 * 8, 8, true)));  // 33
  EXPECT_FALSE(plan_skinny(shape_of(1024, 128, false)));  // bf16: the paths' own kernels
  GemmShape k = shape_of(1024, 128, true);
  k.op = GG_OP_RAGGED_K;
  EXPECT_FALSE(plan_skinny(k));
  GemmShape blocks = shape_of(1024, 128, true);
  blocks.block_scaled = true;  // fp8 1 x 128 blocks: a promotion every 128
  EXPECT_FALSE(plan_skinny(blocks));
  EXPECT_FALSE(plan_skinny(shape_of(4097, 4097, true)));
}

}  // namespace
}  // namespace gg::skinny

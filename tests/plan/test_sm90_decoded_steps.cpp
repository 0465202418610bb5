// The Hopper kernel's decode of quantized k-steps (sm90/decoded_steps.h), on
// the CPU: every element code in every position of a chunk, times every
// scale code of each block-scaled format (256 e4m3 or e5m2 x 256 e8m0 and
// x 256 ue4m3; 16 e2m1 x 256 e8m0 and x 256 ue4m3, the two halves of a
// chunk scaled apart; fp8 without block scales), gives the bits of the portable path's
// decode_to_bf16 (tests/plan/test_operand_decode.cpp ties it to the
// reference), a NaN wherever it gives one. A chunk's scales are those the
// reference's own indexing gives each of its elements, and its bf16 chunks
// land on the 128-byte swizzle the wgmma descriptors read. Along a ragged-K
// group's tokens, a step's chunks are read at any shift into their boxes,
// end where the group ends, and take the scales of the reference's token
// blocks; fp8 1 x 128 blocks split at their start in a window's first chunk.
#include "kernels/sm90/decoded_steps.h"

#include <gtest/gtest.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <set>
#include <vector>

#include "formats/codecs.h"
#include "kernels/portable/operand_decode.h"

namespace gg::sm90 {
namespace {

// Expects bf16 `got` to be `want`'s bits, or both NaN.
void expect_same_bf16(uint16_t got, uint16_t want) {
  const bool got_nan = isnan(fmt::bf16_to_float(got));
  const bool want_nan = isnan(fmt::bf16_to_float(want));
  if (got_nan || want_nan) {
    EXPECT_TRUE(got_nan && want_nan) << std::hex << got << " vs " << want;
  } else {
    EXPECT_EQ(got, want);
  }
}

uint16_t half_of(const uint32_t (&words)[16], int element) {
  return static_cast<uint16_t>(words[element / 2] >> (16 * (element % 2)));
}

void check_fp8(gg_dtype dtype, gg_block_scaling scaling, int scale_codes) {
  for (int scale_code = 0; scale_code < scale_codes; ++scale_code) {
    // 16 chunks hold the 256 codes, each chunk a different rotation so that
    // every code meets the special-code check beside ordinary ones.
    for (int chunk = 0; chunk < 16; ++chunk) {
      uint8_t codes[16];
      for (int e = 0; e < 16; ++e) codes[e] = static_cast<uint8_t>(chunk * 16 + (e + chunk) % 16);
      uint32_t words[4];
      for (int w = 0; w < 4; ++w) {
        words[w] = codes[4 * w] | codes[4 * w + 1] << 8 | codes[4 * w + 2] << 16 |
                   static_cast<uint32_t>(codes[4 * w + 3]) << 24;
      }
      uint32_t out[16] = {};
      decode_chunk(dtype, scaling, words, static_cast<uint8_t>(scale_code),
                   static_cast<uint8_t>(scale_code), out);
      for (int e = 0; e < 16; ++e) {
        SCOPED_TRACE(testing::Message() << "dtype " << dtype << " code " << int{codes[e]}
                                        << " scale code " << scale_code);
        expect_same_bf16(half_of(out, e),
                         portable::decode_to_bf16(dtype, codes[e], scaling,
                                                  static_cast<uint8_t>(scale_code)));
      }
    }
  }
}

TEST(Sm90DecodedSteps, Fp8TimesEveryE8m0IsThePortableDecode) {
  check_fp8(GG_DTYPE_E4M3, GG_BLOCK_MX32, 256);
  check_fp8(GG_DTYPE_E5M2, GG_BLOCK_MX32, 256);
}

TEST(Sm90DecodedSteps, Fp8WithoutBlockScalesIsThePortableDecode) {
  check_fp8(GG_DTYPE_E4M3, GG_BLOCK_NONE, 1);
  check_fp8(GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, 1);
}

// ue4m3 scales (NV16 blocks) of fp8 elements: the two-multiply route.
TEST(Sm90DecodedSteps, Fp8TimesEveryUe4m3IsThePortableDecode) {
  check_fp8(GG_DTYPE_E4M3, GG_BLOCK_NV16, 256);
  check_fp8(GG_DTYPE_E5M2, GG_BLOCK_NV16, 256);
}

TEST(Sm90DecodedSteps, E2m1TimesEveryScaleCodeInBothHalves) {
  for (gg_block_scaling scaling : {GG_BLOCK_MX32, GG_BLOCK_NV16}) {
    for (int scale_code = 0; scale_code < 256; ++scale_code) {
      // The second half's scale: another code, so a swapped half shows.
      const uint8_t second_code = static_cast<uint8_t>((scale_code * 7 + 3) % 256);
      // Element e holds code (e * 5) % 16: every code in each half.
      uint32_t words[4] = {};
      for (int e = 0; e < 32; ++e) words[e / 8] |= static_cast<uint32_t>(e * 5 % 16) << (4 * (e % 8));
      uint32_t out[16] = {};
      decode_chunk(GG_DTYPE_E2M1, scaling, words, static_cast<uint8_t>(scale_code), second_code,
                   out);
      for (int e = 0; e < 32; ++e) {
        SCOPED_TRACE(testing::Message() << "scaling " << scaling << " element " << e
                                        << " scale code " << scale_code);
        const uint8_t code = static_cast<uint8_t>(e * 5 % 16);
        expect_same_bf16(half_of(out, e),
                         portable::decode_to_bf16(GG_DTYPE_E2M1, code, scaling,
                                                  e < 16 ? static_cast<uint8_t>(scale_code)
                                                         : second_code));
      }
    }
  }
}

// Every element of a chunk reads, through chunk_scale_entries, the entry that
// BlockScaleIndex (the portable path's, tied to the reference's indexing)
// gives it, for MX and NV blocks of fp8 and e2m1 operands.
TEST(Sm90DecodedSteps, ChunkScalesAreEachElementsBlockScale) {
  const int64_t rows = 5;
  const int64_t k = 256;
  for (gg_dtype dtype : {GG_DTYPE_E4M3, GG_DTYPE_E2M1}) {
    for (gg_block_scaling scaling : {GG_BLOCK_MX32, GG_BLOCK_NV16}) {
      portable::QuantOperand q;
      q.dtype = dtype;
      q.scaling = scaling;
      const int shift = portable::decoded_block_shift(scaling);
      q.scale_row_length = k >> shift;
      const portable::BlockScaleIndex index{shift, q.scale_row_length, false, 0, 0};
      const int elements = raw_chunk_elements(dtype);
      for (int64_t row = 0; row < rows; ++row) {
        for (int64_t depth = 0; depth < k; depth += elements) {
          const ChunkScaleEntries entries = chunk_scale_entries(q, row, depth);
          for (int e = 0; e < elements; ++e) {
            EXPECT_EQ(e < 16 ? entries.first : entries.second, index.entry(true, row, depth + e))
                << "dtype " << dtype << " scaling " << scaling << " row " << row << " depth "
                << depth + e;
          }
        }
      }
    }
  }
}

// A k-step's 64 bf16 elements of row r fill its 128 bytes, chunk c (8
// elements) at c ^ (r % 8): each row's chunks are a permutation of its
// 8 slots, and a raw chunk's 2 (fp8) or 4 (e2m1) bf16 chunks are its
// elements in order.
TEST(Sm90DecodedSteps, Bf16ChunksFillEachRowsSwizzledSlots) {
  for (int row = 0; row < 16; ++row) {
    std::set<int> offsets;
    for (int chunk = 0; chunk < 8; ++chunk) {
      const int offset = swizzled_chunk_offset(row, chunk);
      EXPECT_EQ(offset / 128, row);
      EXPECT_EQ(offset % 16, 0);
      EXPECT_EQ((offset % 128) / 16, chunk ^ (row % 8));
      offsets.insert(offset);
    }
    EXPECT_EQ(offsets.size(), 8u);
  }
  EXPECT_EQ(raw_step_bytes(GG_DTYPE_E4M3) / 16 * raw_chunk_elements(GG_DTYPE_E4M3),
            kDecodedStepK);
  EXPECT_EQ(raw_step_bytes(GG_DTYPE_E2M1) / 16 * raw_chunk_elements(GG_DTYPE_E2M1),
            kDecodedStepK);
}

// The code of element `e` of a row of codes (e2m1: two a byte, low nibble first).
uint32_t code_at(const std::vector<uint8_t>& row, gg_dtype dtype, int e) {
  if (dtype != GG_DTYPE_E2M1) return row[static_cast<size_t>(e)];
  return (row[static_cast<size_t>(e / 2)] >> (4 * (e % 2))) & 0xFu;
}

// Every chunk of a token box, read at every shift with every count of valid
// elements, is the row's elements from chunk start + shift, zeros past the
// valid ones; the words read lie inside the box's row.
TEST(Sm90DecodedSteps, TokenChunksAreTheRowsElementsAtAnyShift) {
  for (gg_dtype dtype : {GG_DTYPE_E4M3, GG_DTYPE_E2M1}) {
    const int bits = dtype == GG_DTYPE_E2M1 ? 4 : 8;
    const int elements = raw_chunk_elements(dtype);
    const int box = token_box_bytes(dtype);
    // 4-byte aligned storage with a poisoned word after the box's row.
    std::vector<uint32_t> storage(static_cast<size_t>(box / 4 + 1), 0xFFFFFFFFu);
    std::vector<uint8_t> row(static_cast<size_t>(box));
    for (int i = 0; i < box; ++i) row[static_cast<size_t>(i)] = static_cast<uint8_t>(37 * i + 11);
    memcpy(storage.data(), row.data(), row.size());
    const uint8_t* base = reinterpret_cast<const uint8_t*>(storage.data());
    for (int chunk = 0; chunk < raw_step_bytes(dtype) / 16; ++chunk) {
      for (int shift = 0; shift < elements; ++shift) {
        // token_chunk_codes' five words lie inside the box's row.
        EXPECT_LE(chunk * 16 + shift * bits / 32 * 4 + 20, box);
        for (int valid = 1; valid <= elements; ++valid) {
          uint32_t got[4];
          token_chunk_codes(base, chunk * 16, shift, dtype, valid, got);
          for (int e = 0; e < elements; ++e) {
            const uint32_t code = (got[e * bits / 32] >> (e * bits % 32)) & ((1u << bits) - 1u);
            const uint32_t want = e < valid ? code_at(row, dtype, chunk * elements + shift + e) : 0;
            ASSERT_EQ(code, want) << "dtype " << dtype << " chunk " << chunk << " shift "
                                  << shift << " valid " << valid << " element " << e;
          }
        }
      }
    }
  }
}

// A group's boxes start at a 16-byte chunk of codes at or before its first
// token, close enough that the box's row holds the step's 64 tokens.
TEST(Sm90DecodedSteps, TokenBoxesStartAlignedAndHoldTheStep) {
  for (gg_dtype dtype : {GG_DTYPE_E4M3, GG_DTYPE_E5M2, GG_DTYPE_E2M1}) {
    const int bits = dtype == GG_DTYPE_E2M1 ? 4 : 8;
    for (int64_t start = 0; start < 300; ++start) {
      const int64_t origin = token_box_origin(dtype, start);
      EXPECT_LE(origin, start);
      EXPECT_EQ(origin * bits % 128, 0) << "a box starts 16-byte aligned";
      const int64_t shift = start - origin;
      EXPECT_LT(shift, raw_chunk_elements(dtype));
      EXPECT_LE(shift + kDecodedStepK, token_box_bytes(dtype) * 8 / bits);
    }
  }
}

// A chunk's byte mask keeps exactly its bytes in [first, end), whatever the
// bounds (before the chunk, inside it, past it, or crossed): what the
// consumers' zeroing of tokens outside a group (zero_outside) keeps of each
// 16-byte chunk, one word at a time.
TEST(Sm90DecodedSteps, ChunkByteMasksKeepTheBytesInRange) {
  for (int first = -20; first <= 36; ++first) {
    for (int end = -20; end <= 36; ++end) {
      for (int word = 0; word < 4; ++word) {
        uint32_t want = 0;
        for (int b = 0; b < 4; ++b) {
          const int byte = 4 * word + b;
          if (byte >= first && byte < end) want |= 0xFFu << (8 * b);
        }
        ASSERT_EQ(chunk_bytes_mask(word, first, end), want)
            << "first " << first << " end " << end << " word " << word;
      }
    }
  }
}

// fp8 with 1 x 128 blocks along the tokens: a window's first 16 lhs codes
// of a row, split at every s a group's start gives (0-15), are the block
// before's codes [0, s) and zeros, and zeros and this block's codes [s, 16):
// each code in exactly one of the two, its own byte, the other byte 0; a
// block's 128 tokens from the group's first then take the window's
// positions [s, 128) and the next window's [0, s), every one of them once.
TEST(Sm90DecodedSteps, Fp8WindowChunksSplitAtTheBlockStart) {
  uint8_t codes[16];
  for (int i = 0; i < 16; ++i) codes[i] = static_cast<uint8_t>(0x81 + 13 * i);
  uint32_t chunk[4];
  memcpy(chunk, codes, sizeof codes);
  for (int s = 0; s < 16; ++s) {
    uint32_t before[4];
    uint32_t from[4];
    split_window_chunk(chunk, s, before, from);
    uint8_t before_bytes[16];
    uint8_t from_bytes[16];
    memcpy(before_bytes, before, sizeof before_bytes);
    memcpy(from_bytes, from, sizeof from_bytes);
    for (int k = 0; k < 16; ++k) {
      EXPECT_EQ(before_bytes[k], k < s ? codes[k] : 0) << "s " << s << " code " << k;
      EXPECT_EQ(from_bytes[k], k < s ? 0 : codes[k]) << "s " << s << " code " << k;
    }
    // Token i of block b (0-127) lies in window b + (s + i) / 128 at
    // position (s + i) % 128: the block's first 128 - s tokens in its own
    // window from s, the last s in the next window before s.
    std::set<int> positions;
    for (int i = 0; i < 128; ++i) {
      const int window = (s + i) / 128;
      const int position = (s + i) % 128;
      EXPECT_EQ(window == 0, position >= s) << "s " << s << " token " << i;
      positions.insert(window * 128 + position);
    }
    EXPECT_EQ(positions.size(), 128u);
  }
}

// The window loop of the fp8 1 x 128 weight gradient (the kernel's, step
// for step: zeros outside the group in both operands, the lhs's first s
// tokens of each window after the first split off and contracted into the
// block before's sums, those promoted times that block's scales before the
// window's own products start the next block's sums, and the last sums
// promoted if they are a block's) gives each group's sum over its blocks of
// their scales times their products, for every start offset s and every
// size around the windows' and blocks' edges, in exact small integers. Its
// windows are the k-steps the kernel's tile map gives a group from its
// first token rounded down to 16.
TEST(Sm90DecodedSteps, Fp8TokenWindowsSumEachBlockOnceTimesItsScales) {
  for (int s = 0; s < 16; ++s) {
    for (int rows : {0, 1, 2, 15, 16, 17, 111, 112, 113, 127, 128, 129, 240, 255, 256, 257, 400}) {
      SCOPED_TRACE(testing::Message() << "s " << s << " rows " << rows);
      const Fp8TokenWindows windows{s, rows};
      const int64_t start = 1024 + s;  // a start with this offset into its 16
      const int64_t k0 = start & ~int64_t{15};
      EXPECT_EQ(windows.windows(), rows == 0 ? 0 : (start + rows - k0 + 127) / 128);
      // Token i's lhs and rhs codes; a token outside the group holds junk
      // the zeros must keep out; block b's scale product, NaN past the
      // group's blocks (their scales are not the group's to read).
      const auto lhs = [&](int i) { return i < 0 || i >= rows ? 1000.0 : double(i % 7 - 3); };
      const auto rhs = [&](int i) { return i < 0 || i >= rows ? -999.0 : double(i % 5 - 2); };
      const auto scale = [&](int b) {
        return b < windows.blocks() ? double(1 << (b % 4)) : double(NAN);
      };
      double want = 0;
      for (int i = 0; i < rows; ++i) want += lhs(i) * rhs(i) * scale(i / 128);
      double acc = 0;
      double partial = 0;
      for (int w = 0; w < windows.windows(); ++w) {
        double a[128];
        double b[128];
        double split[128] = {};
        for (int p = 0; p < 128; ++p) {
          const int i = 128 * w + p - s;
          const bool inside = p >= windows.k_begin(w) && p < windows.k_end(w);
          a[p] = inside ? lhs(i) : 0;
          b[p] = inside ? rhs(i) : 0;
        }
        if (windows.splits(w)) {
          for (int p = 0; p < s; ++p) {
            split[p] = a[p];
            a[p] = 0;
          }
          for (int p = 0; p < 32; ++p) partial += split[p] * b[p];
        }
        if (w > 0) acc += partial * scale(w - 1);
        partial = 0;
        for (int p = 0; p < 128; ++p) partial += a[p] * b[p];
      }
      if (windows.last_is_block()) acc += partial * scale(windows.windows() - 1);
      EXPECT_EQ(acc, want);
      EXPECT_EQ(windows.blocks(), (rows + 127) / 128);
    }
  }
}

// Along tokens, every element of a group's chunk (depths from the group's
// start, scale rows from its first block column) reads the entry that
// BlockScaleIndex's token blocks give it (ragged-K columnwise copies: each
// group's blocks from its first token), whatever the group's start.
TEST(Sm90DecodedSteps, TokenChunkScalesAreEachTokensBlockScale) {
  for (gg_dtype dtype : {GG_DTYPE_E4M3, GG_DTYPE_E2M1}) {
    for (gg_block_scaling scaling : {GG_BLOCK_MX32, GG_BLOCK_NV16}) {
      portable::QuantOperand q;
      q.dtype = dtype;
      q.scaling = scaling;
      const int block_shift = portable::decoded_block_shift(scaling);
      q.scale_row_length = 40;
      const int elements = raw_chunk_elements(dtype);
      for (int64_t start : {0, 1, 15, 17, 33, 100}) {
        for (int64_t size : {1, 15, 16, 17, 31, 32, 33, 64, 100}) {
          const int64_t first_block = 3;
          const portable::BlockScaleIndex index{block_shift, q.scale_row_length, true, start,
                                                first_block};
          for (int64_t row = 0; row < 3; ++row) {
            for (int64_t depth = 0; depth < size; depth += elements) {
              const ChunkScaleEntries entries = chunk_scale_entries(q, 0, depth);
              const int64_t base = row * q.scale_row_length + first_block;
              for (int e = 0; e < elements && depth + e < size; ++e) {
                EXPECT_EQ(base + (e < 16 ? entries.first : entries.second),
                          index.entry(true, row, start + depth + e))
                    << "dtype " << dtype << " scaling " << scaling << " start " << start
                    << " size " << size << " token " << start + depth + e;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace gg::sm90

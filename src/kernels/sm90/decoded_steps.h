// How the Hopper kernel decodes a quantized operand's k-step into the bf16
// tile its wgmmas read (GG_HD, so tests/plan checks every element code and
// scale code, the chunk order and the swizzle on the CPU against
// portable/operand_decode.h's decode_to_bf16, the reference's own decode).
//
// A decoded k-step is 64 bf16 elements of each row, 128 bytes, as a 16-bit
// operand's. TMA brings the row's codes of those 64 elements (64 fp8 bytes
// or 32 bytes of e2m1 pairs) into a raw area of the stage, unswizzled; the
// consumers then take it in 16-byte chunks of codes (16 fp8 or 32 e2m1),
// each chunk's elements times its block scales (MX32: one a chunk; NV16:
// one per 16 elements), and store the bf16 values as 2 or 4 16-byte chunks
// of the row, 128-byte swizzled.
//
// An fp8 element's bits move into a bf16's fields by shifts and masks,
// which gives its value times a fixed power of two (2^-120 for e4m3,
// 2^-112 for e5m2; an fp8 subnormal lands on a bf16 subnormal); one bf16
// multiply by that power times the block scale (or two, by each, where
// their product is no bf16 normal) gives the element times its scale
// rounded once, which is decode_to_bf16's value: the same bits. An e2m1
// element's exact bf16 value comes from byte_perm tables, then one
// multiply by the scale. About three instructions an element, two
// elements a multiply. fp8 codes whose value is no number (e4m3 NaN, e5m2
// inf and NaN) would come out finite this way: a chunk holding one takes
// the codecs' decode.
#pragma once

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#endif

#include "common/hd.h"
#include "formats/codecs.h"
#include "kernels/portable/operand_decode.h"

namespace gg::sm90 {

// Decoded elements of a k-step.
constexpr int kDecodedStepK = 64;
// Raw bytes of one row's codes in a k-step: the stage's raw area holds this
// many a row (e2m1 uses half).
constexpr int kRawStepBytes = 64;

// Bytes of one row's codes in a k-step of `dtype`.
GG_HD int raw_step_bytes(gg_dtype dtype) { return dtype == GG_DTYPE_E2M1 ? 32 : 64; }

// Elements of one 16-byte chunk of codes: 16 fp8 or 32 e2m1.
GG_HD int raw_chunk_elements(gg_dtype dtype) { return dtype == GG_DTYPE_E2M1 ? 32 : 16; }

// Offset in a 128-byte-swizzled K-major tile of 16-byte chunk `chunk` (8
// bf16 elements, 0-7) of row `row`.
GG_HD int swizzled_chunk_offset(int row, int chunk) {
  return row * 128 + ((chunk ^ (row & 7)) * 16);
}

// Two bf16 values (a word, the first in the low half) times two others,
// each product rounded once to bf16 (mul.bf16x2). Exact wherever the
// product has at most 8 significant bits and lies in bf16's range, as
// every product here does unless it overflows; on the host the fp32
// product of two bf16 values is exact in those cases, so one rounding
// gives the same bits.
GG_HD uint32_t bf16x2_mul(uint32_t a, uint32_t b) {
#ifdef __CUDA_ARCH__
  __nv_bfloat162 x;
  __nv_bfloat162 y;
  memcpy(&x, &a, 4);
  memcpy(&y, &b, 4);
  const __nv_bfloat162 product = __hmul2(x, y);
  uint32_t bits;
  memcpy(&bits, &product, 4);
  return bits;
#else
  uint32_t bits = 0;
  for (int half = 0; half < 2; ++half) {
    const float product = fmt::bf16_to_float(static_cast<uint16_t>(a >> (16 * half))) *
                          fmt::bf16_to_float(static_cast<uint16_t>(b >> (16 * half)));
    bits |= static_cast<uint32_t>(fmt::float_to_bf16(product)) << (16 * half);
  }
  return bits;
#endif
}

// Bytes 2j and 2j + 1 of a word (pair j of its four fp8 codes) moved to the
// top bytes of the word's halves: (b0 << 8) | (b1 << 24), one byte_perm.
GG_HD uint32_t spread_pair(uint32_t word, int pair) {
#ifdef __CUDA_ARCH__
  return __byte_perm(word, 0, pair == 0 ? 0x1404u : 0x3424u);
#else
  const uint32_t two = word >> (16 * pair);
  return ((two & 0xFFu) << 8) | ((two & 0xFF00u) << 16);
#endif
}

// A pair of fp8 codes (spread_pair) as two bf16 values times 2^-120 (e4m3)
// or 2^-112 (e5m2): the sign stays, exponent and mantissa move right into
// bf16's fields. An fp8 subnormal lands on a bf16 subnormal (the smallest,
// 2^-9 x 2^-120, is 2^-129; bf16 reaches 2^-133), so every finite code is
// exact. NaN and inf codes are not: callers check for them.
GG_HD uint32_t fp8_pair_shifted(bool e5m2, uint32_t spread) {
  const uint32_t fields = e5m2 ? (spread >> 3) & 0x0FE00FE0u : (spread >> 4) & 0x07F007F0u;
  return fields | (spread & 0x80008000u);
}

// Whether any of the four fp8 codes of `word` is no number: e4m3 S.1111.111,
// e5m2 S.11111.xx (the 7 or 5 bits all ones: adding one carries into bit 7).
GG_HD bool has_special_fp8(bool e5m2, uint32_t word) {
  return e5m2 ? (((word & 0x7C7C7C7Cu) + 0x04040404u) & 0x80808080u) != 0
              : (((word & 0x7F7F7F7Fu) + 0x01010101u) & 0x80808080u) != 0;
}

// A bf16 value in both halves of a word.
GG_HD uint32_t bf16_both(uint16_t bits) { return bits | static_cast<uint32_t>(bits) << 16; }

// The bf16 bits of a block-scale code's value (exact: e8m0 is a power of
// two, 2^-127 a bf16 subnormal; ue4m3 has 4 significant bits), 1 without
// block scales.
GG_HD uint16_t scale_bf16(gg_block_scaling scaling, uint8_t code) {
  if (scaling == GG_BLOCK_MX32) {
    if (code == 0xFFu) return 0x7FC0u;  // NaN
    return static_cast<uint16_t>(code == 0 ? 0x0040u : code << 7);
  }
  if (scaling == GG_BLOCK_NV16) {
    // ue4m3 (the sign bit ignored): its bits in an fp32 give its value
    // times 2^-120 (a subnormal's too), whose product with 2^120 is exact;
    // 4 significant bits, so the fp32's top half is the bf16.
    const uint32_t magnitude = code & 0x7Fu;
    if (magnitude == 0x7Fu) return 0x7FC0u;  // NaN
    return static_cast<uint16_t>(fmt::float_bits(fmt::bits_float(magnitude << 20) * 0x1p120f) >>
                                 16);
  }
  return 0x3F80u;
}

// The factors that turn a chunk's shifted fp8 pairs into element x scale:
// one bf16 multiply by 2^(120 or 112) x the scale where that is a bf16
// normal (MX scales up to 2^7 or 2^15, the usual), else two, by the power
// of two (exact: the element itself) and then by the scale.
struct Fp8Factors {
  uint32_t first;
  uint32_t second;
  bool two;
};

GG_HD Fp8Factors fp8_factors(bool e5m2, gg_block_scaling scaling, uint8_t code) {
  const int shift = e5m2 ? 112 : 120;
  if (scaling == GG_BLOCK_MX32 && code != 0xFFu && code + shift <= 254) {
    return Fp8Factors{bf16_both(static_cast<uint16_t>((code + shift) << 7)), 0, false};
  }
  const uint32_t power = bf16_both(static_cast<uint16_t>((127 + shift) << 7));
  if (scaling != GG_BLOCK_MX32 && scaling != GG_BLOCK_NV16) return Fp8Factors{power, 0, false};
  return Fp8Factors{power, bf16_both(scale_bf16(scaling, code)), true};
}

// The 16 fp8 codes of a chunk (code i in byte i % 4 of word i / 4) times
// their block scale (`code`, its scaling's), as 8 words of bf16 pairs
// (elements 2j and 2j + 1 in word j): the bits of decode_to_bf16. A chunk
// holding a NaN or inf code takes that function itself.
template <bool kE5m2>
GG_HD void decode_fp8_chunk(const uint32_t (&codes)[4], gg_block_scaling scaling, uint8_t code,
                            uint32_t (&out)[16]) {
  constexpr bool e5m2 = kE5m2;
  bool special = false;
  for (int w = 0; w < 4; ++w) special = special || has_special_fp8(e5m2, codes[w]);
  if (special) {
    const gg_dtype dtype = e5m2 ? GG_DTYPE_E5M2 : GG_DTYPE_E4M3;
    for (int e = 0; e < 16; e += 2) {
      const uint32_t two = codes[e / 4] >> (8 * (e % 4));
      out[e / 2] = portable::decode_to_bf16(dtype, two & 0xFFu, scaling, code) |
                   static_cast<uint32_t>(
                       portable::decode_to_bf16(dtype, (two >> 8) & 0xFFu, scaling, code))
                       << 16;
    }
    return;
  }
  const Fp8Factors factors = fp8_factors(e5m2, scaling, code);
  for (int w = 0; w < 4; ++w) {
    for (int pair = 0; pair < 2; ++pair) {
      out[2 * w + pair] =
          bf16x2_mul(fp8_pair_shifted(e5m2, spread_pair(codes[w], pair)), factors.first);
    }
  }
  if (factors.two) {
    for (int j = 0; j < 8; ++j) out[j] = bf16x2_mul(out[j], factors.second);
  }
}

// Byte i of the 8-byte table {t0, t1} for each selector nibble i of 4.
GG_HD uint32_t table_bytes(const uint32_t (&table)[2], uint32_t selectors) {
#ifdef __CUDA_ARCH__
  return __byte_perm(table[0], table[1], selectors);
#else
  uint32_t out = 0;
  for (int i = 0; i < 4; ++i) {
    const uint32_t index = (selectors >> (4 * i)) & 0x7u;
    out |= ((table[index / 4] >> (8 * (index % 4))) & 0xFFu) << (8 * i);
  }
  return out;
#endif
}

// Two bytes of each of two words interleaved: (low of a, low of b) for
// pair 0, bytes 0 and 1; (2, 3) for pair 1.
GG_HD uint32_t interleave_bytes(uint32_t a, uint32_t b, int pair) {
  const uint32_t a2 = a >> (16 * pair);
  const uint32_t b2 = b >> (16 * pair);
  return (a2 & 0xFFu) | (b2 & 0xFFu) << 8 | (a2 & 0xFF00u) << 8 | (b2 & 0xFF00u) << 16;
}

// The 32 e2m1 codes of a chunk (element 2i in the low nibble of byte i)
// times their block scales, `first` for elements 0-15 and `second` for
// 16-31 (bf16 bits, scale_bf16), as 16 words of bf16 pairs: each element's
// exact bf16 value from the tables, its sign, then one multiply by the
// scale (at most 2 + 4 significant bits: exact).
GG_HD void decode_e2m1_chunk(const uint32_t (&codes)[4], uint16_t first, uint16_t second,
                             uint32_t (&out)[16]) {
  // The bf16 bits of magnitudes 0-7 (0, 0.5, 1, 1.5, 2, 3, 4, 6), low and
  // high bytes, four a word: byte_perm tables.
  const uint32_t low_bytes[2] = {0xC0800000u, 0xC0804000u};
  const uint32_t high_bytes[2] = {0x3F3F3F00u, 0x40404040u};
  for (int w = 0; w < 4; ++w) {
    const uint32_t scale = bf16_both(w < 2 ? first : second);
    for (int half = 0; half < 2; ++half) {
      // Elements 4 half .. 4 half + 3 of the word: four nibbles.
      const uint32_t nibbles = (codes[w] >> (16 * half)) & 0xFFFFu;
      const uint32_t low = table_bytes(low_bytes, nibbles & 0x7777u);
      const uint32_t high = table_bytes(high_bytes, nibbles & 0x7777u);
      for (int pair = 0; pair < 2; ++pair) {
        // Signs: nibble bits 3 and 7 of the pair's byte to bits 15 and 31.
        const uint32_t byte = nibbles >> (8 * pair);
        const uint32_t signs = ((byte & 0x8u) << 12) | ((byte & 0x80u) << 24);
        out[4 * w + 2 * half + pair] =
            bf16x2_mul(interleave_bytes(low, high, pair) | signs, scale);
      }
    }
  }
}

// One chunk of codes of `dtype` times its block scales, given by their
// codes (`second`: e2m1's elements 16-31), as 8 (fp8) or 16 (e2m1) words
// of bf16 pairs.
GG_HD void decode_chunk(gg_dtype dtype, gg_block_scaling scaling, const uint32_t (&codes)[4],
                        uint8_t first, uint8_t second, uint32_t (&out)[16]) {
  if (dtype == GG_DTYPE_E2M1) {
    decode_e2m1_chunk(codes, scale_bf16(scaling, first), scale_bf16(scaling, second), out);
  } else if (dtype == GG_DTYPE_E5M2) {
    decode_fp8_chunk<true>(codes, scaling, first, out);
  } else {
    decode_fp8_chunk<false>(codes, scaling, first, out);
  }
}

// Which entries of the group's block-scale matrix scale the chunk of outer
// index `outer` whose first element is `depth` (along K, from the
// operand's start), for an operand whose rows run along K and that has
// block scales (MX32, NV16): `first` for its elements 0-15, `second` for
// 16-31 (e2m1's 32 elements, in NV16 blocks, span two; otherwise the same).
struct ChunkScaleEntries {
  int64_t first;
  int64_t second;
};

GG_HD ChunkScaleEntries chunk_scale_entries(const portable::QuantOperand& q, int64_t outer,
                                            int64_t depth) {
  const int shift = portable::decoded_block_shift(q.scaling);
  const portable::BlockScaleIndex index{shift, q.scale_row_length, false, 0, 0};
  const int64_t first = index.entry(true, outer, depth);
  const bool two_blocks = raw_chunk_elements(q.dtype) > (1 << shift);
  return ChunkScaleEntries{first, two_blocks ? index.entry(true, outer, depth + (1 << shift))
                                             : first};
}

// ---- Along a ragged-K group's tokens (the weight gradient) ------------------
// A k-step of a decoded ragged-K product holds 64 of one group's tokens,
// from its first: k position i of step s is the group's token 64 s + i in
// both operands (a contraction may sum its terms in any order), so that the
// blocks of scales, which restart at the group's start, begin on chunk
// boundaries as they do along K, and tokens of other groups are never in
// a step. TMA boxes start 16-byte aligned in global memory: an operand's
// boxes start at token_box_origin, the group's first token rounded down
// to a 16-byte chunk of codes, and are 16 bytes wider than a step's codes,
// and each chunk is read `shift` elements further into the row
// (token_chunk_codes), shift = start - origin.

// Bytes of a row of a token step's box: a step's codes and 16 more.
GG_HD int token_box_bytes(gg_dtype dtype) { return raw_step_bytes(dtype) + 16; }

// The bits of word `word` (0-3) of a 16-byte chunk that hold its bytes
// [first, end), either bound anywhere (clamped to the chunk): the mask that
// keeps those bytes and zeroes the others.
GG_HD uint32_t chunk_bytes_mask(int word, int first, int end) {
  const auto below = [](int bit) {  // the word's bits under `bit`
    return bit >= 32 ? 0xFFFFFFFFu : bit <= 0 ? 0u : (1u << bit) - 1u;
  };
  return below(8 * end - 32 * word) & ~below(8 * first - 32 * word);
}

// The first token of a group's boxes: its first token, rounded down to a
// 16-byte chunk of codes (16 fp8 or 32 e2m1 elements).
GG_HD int64_t token_box_origin(gg_dtype dtype, int64_t start) {
  return start & ~int64_t{raw_chunk_elements(dtype) - 1};
}

// The low 32 bits of (hi:lo) >> shift, shift in [0, 32).
GG_HD uint32_t funnel_right(uint32_t lo, uint32_t hi, int shift) {
#ifdef __CUDA_ARCH__
  return __funnelshift_r(lo, hi, static_cast<uint32_t>(shift));
#else
  return static_cast<uint32_t>(((uint64_t{hi} << 32 | lo) >> shift) & 0xFFFFFFFFu);
#endif
}

// The 16 bytes of codes of the chunk whose first element lies `shift`
// elements past byte `offset` of `row` (a 4-byte aligned address plus a
// multiple of 16; e2m1 elements two a byte, the low nibble first), as the
// 4 words decode_chunk takes, its elements from `valid` on zeroed (code 0
// is +0 in every format): five aligned word loads and four funnel shifts.
GG_HD void token_chunk_codes(const uint8_t* row, int offset, int shift, gg_dtype dtype,
                             int valid, uint32_t (&out)[4]) {
  const int bits = dtype == GG_DTYPE_E2M1 ? 4 : 8;
  const int shift_bits = shift * bits;
  const uint32_t* words = reinterpret_cast<const uint32_t*>(row + offset + shift_bits / 32 * 4);
  uint32_t loaded[5];
  for (int i = 0; i < 5; ++i) loaded[i] = words[i];
  const int valid_bits = valid * bits;
  for (int i = 0; i < 4; ++i) {
    const uint32_t word = funnel_right(loaded[i], loaded[i + 1], shift_bits % 32);
    const int kept = valid_bits - 32 * i;  // bits of this word inside the chunk's valid elements
    out[i] = kept >= 32 ? word : kept <= 0 ? 0u : word & ((1u << kept) - 1u);
  }
}

// fp8 with 1 x 128 blocks along the tokens (the fp8 weight gradient,
// plan.h's Sm90Decode::kFp8Tokens) is not decoded: its k-steps are windows
// of 128 tokens on 16-token boundaries, and a block (128 tokens from the
// group's first) starts `s` tokens into one. The lhs's first 16 codes of a
// window's row split at s: `before`, the codes of the block before (those
// from s on zeroed), and `from`, this block's (those before s zeroed); the
// two together are the chunk.
// The windows of one group of `rows` tokens whose first lies `s` (0-15)
// into its first window (its start % 16), window w holding the group's
// tokens 128 w - s + p at positions p: which positions hold group tokens
// (the others are zeroed in both operands), whether a window's first s
// positions close the block before (split off the lhs), and whether the
// sums left after the last window are a block's. The kernel's window loop
// follows it; a CPU test runs the same loop against the blocks' sums.
struct Fp8TokenWindows {
  int s;
  int rows;
  GG_HD int windows() const { return rows == 0 ? 0 : (rows + s + 127) / 128; }
  GG_HD int blocks() const { return (rows + 127) / 128; }
  GG_HD int k_begin(int w) const { return w == 0 ? s : 0; }
  GG_HD int k_end(int w) const {
    const int end = rows + s - 128 * w;
    return end < 128 ? end : 128;
  }
  GG_HD bool splits(int w) const { return s > 0 && w > 0; }
  // The last window may hold only the end of the block before it.
  GG_HD bool last_is_block() const { return windows() > 0 && windows() <= blocks(); }
};

GG_HD void split_window_chunk(const uint32_t (&chunk)[4], int s, uint32_t (&before)[4],
                              uint32_t (&from)[4]) {
  for (int i = 0; i < 4; ++i) {
    const uint32_t mask = chunk_bytes_mask(i, 0, s);
    before[i] = chunk[i] & mask;
    from[i] = chunk[i] & ~mask;
  }
}

}  // namespace gg::sm90

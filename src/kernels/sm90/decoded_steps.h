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
// An element's value comes from its bits placed in an fp32 word, which
// holds the element's value times a fixed power of two (2^-120 for e4m3,
// 2^-112 for e5m2, 2^-126 for e2m1; an fp8 subnormal lands on an fp32
// subnormal of the same ratio). One multiply by the inverse power gives the
// value exactly, a second by the block scale gives the fp32 product that
// decode_to_bf16 forms, rounded to bf16 as it is: the same bits. Three
// integer operations and two multiplies an element, no table. fp8 codes
// whose value is no number (e4m3 NaN, e5m2 inf and NaN) would come out as
// finite values this way: a chunk holding one takes the codecs' decode.
#pragma once

#include <stdint.h>

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

// The fp32 word whose value is an fp8 or e2m1 code's value times
// 2^-kValueShift (see above): bits only, no rounding.
GG_HD float e4m3_bits_value(uint32_t code) {
  // The code in the top byte, shifted right arithmetically by 4: sign in
  // bit 31 (and its copies in 30-27, masked off), exponent and mantissa in
  // bits 26-20.
  const int32_t top = static_cast<int32_t>(code << 24);
  return fmt::bits_float(static_cast<uint32_t>(top >> 4) & 0x87F00000u);
}
GG_HD float e5m2_bits_value(uint32_t code) {
  const int32_t top = static_cast<int32_t>(code << 24);
  return fmt::bits_float(static_cast<uint32_t>(top >> 3) & 0x8FE00000u);
}
GG_HD float e2m1_bits_value(uint32_t nibble) {
  return fmt::bits_float(((nibble & 0x8u) << 28) | ((nibble & 0x7u) << 22));
}

// Whether any of the four fp8 codes of `word` is no number: e4m3 S.1111.111,
// e5m2 S.11111.xx (the 7 or 5 bits all ones: adding one carries into bit 7).
GG_HD bool has_special_fp8(bool e5m2, uint32_t word) {
  return e5m2 ? (((word & 0x7C7C7C7Cu) + 0x04040404u) & 0x80808080u) != 0
              : (((word & 0x7F7F7F7Fu) + 0x01010101u) & 0x80808080u) != 0;
}

// Two bf16 values as one word, the first in the low half.
GG_HD uint32_t bf16_pair(float element0, float element1, float scale) {
  return portable::scaled_to_bf16(element0, scale) |
         static_cast<uint32_t>(portable::scaled_to_bf16(element1, scale)) << 16;
}

// The 16 fp8 codes of a chunk (code i in byte i % 4 of word i / 4) times
// their block scale, as 8 words of bf16 pairs (elements 2j and 2j + 1 in word j).
GG_HD void decode_fp8_chunk(bool e5m2, const uint32_t (&codes)[4], float scale,
                            uint32_t (&out)[16]) {
  const float unshift = e5m2 ? 0x1p112f : 0x1p120f;
  bool special = false;
  for (int w = 0; w < 4; ++w) special = special || has_special_fp8(e5m2, codes[w]);
  if (special) {
    for (int w = 0; w < 4; ++w) {
      for (int pair = 0; pair < 2; ++pair) {
        const uint32_t two = codes[w] >> (16 * pair);
        const gg_dtype dtype = e5m2 ? GG_DTYPE_E5M2 : GG_DTYPE_E4M3;
        out[2 * w + pair] = bf16_pair(portable::element_value(dtype, two & 0xFFu),
                                      portable::element_value(dtype, (two >> 8) & 0xFFu), scale);
      }
    }
    return;
  }
  for (int w = 0; w < 4; ++w) {
    for (int pair = 0; pair < 2; ++pair) {
      const uint32_t two = codes[w] >> (16 * pair);
      const float lo = e5m2 ? e5m2_bits_value(two & 0xFFu) : e4m3_bits_value(two & 0xFFu);
      const float hi =
          e5m2 ? e5m2_bits_value((two >> 8) & 0xFFu) : e4m3_bits_value((two >> 8) & 0xFFu);
      out[2 * w + pair] = bf16_pair(lo * unshift, hi * unshift, scale);
    }
  }
}

// The 32 e2m1 codes of a chunk (element 2i in the low nibble of byte i)
// times their block scales: `first` for elements 0-15, `second` for 16-31
// (one MX32 block, or two NV16 blocks), as 16 words of bf16 pairs.
GG_HD void decode_e2m1_chunk(const uint32_t (&codes)[4], float first, float second,
                             uint32_t (&out)[16]) {
  for (int w = 0; w < 4; ++w) {
    for (int byte = 0; byte < 4; ++byte) {
      const uint32_t two = codes[w] >> (8 * byte);
      out[4 * w + byte] = bf16_pair(e2m1_bits_value(two & 0xFu) * 0x1p126f,
                                    e2m1_bits_value((two >> 4) & 0xFu) * 0x1p126f,
                                    w < 2 ? first : second);
    }
  }
}

// One chunk of codes of `dtype` times its block scales (`second`: e2m1's
// elements 16-31), as 8 (fp8) or 16 (e2m1) words of bf16 pairs.
GG_HD void decode_chunk(gg_dtype dtype, const uint32_t (&codes)[4], float first, float second,
                        uint32_t (&out)[16]) {
  if (dtype == GG_DTYPE_E2M1) {
    decode_e2m1_chunk(codes, first, second, out);
  } else {
    decode_fp8_chunk(dtype == GG_DTYPE_E5M2, codes, first, out);
  }
}

// The block scales of the chunk of outer index `outer` whose first element
// is `depth` (along K, from the operand's start), for an operand whose rows
// run along K: [first, second) as decode_chunk takes them. 1 without block
// scales (fp8 with tensor, group or rowwise scales, applied in the
// epilogue). `scales` is the group's scale matrix.
struct ChunkScales {
  float first;
  float second;
};

GG_HD ChunkScales chunk_scales(const portable::QuantOperand& q, const uint8_t* scales,
                               int64_t outer, int64_t depth) {
  const int shift = portable::decoded_block_shift(q.scaling);
  if (shift == 0) return ChunkScales{1.0f, 1.0f};
  const portable::BlockScaleIndex index{shift, q.scale_row_length, false, 0, 0};
  const float first = portable::block_scale_value(q.scaling, scales[index.entry(true, outer, depth)]);
  // A second block inside the chunk: e2m1's 32 elements in NV16 blocks.
  const bool two_blocks = raw_chunk_elements(q.dtype) > (1 << shift);
  const float second =
      two_blocks ? portable::block_scale_value(
                       q.scaling, scales[index.entry(true, outer, depth + (1 << shift))])
                 : first;
  return ChunkScales{first, second};
}

}  // namespace gg::sm90

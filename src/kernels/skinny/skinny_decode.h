// How the skinny kernel (skinny_kernel.cuh) turns quantized codes into the
// bf16 words of its mma.sync fragments, one pair of elements at a time, at
// the point of use. GG_HD, so tests/plan checks every element code against
// every scale code on the CPU, against the portable path's decode_to_bf16
// (the reference's own decode).
//
// e2m1 takes two instructions a pair and one multiply: a word of 8 codes
// gives 4 words of bf16 pairs, pair j holding elements j and j + 4 (the
// kernel orders its depths so: skinny_layout.h), because then one shift
// and mask move both elements' sign, and one shift and mask their exponent
// and mantissa, into bf16's fields. That is the element's value times
// 2^-126 (the code 0.5 lands on the bf16 subnormal 2^-127). One bf16
// multiply by 2^126 x the block scale then gives element x scale, exact
// (at most 2 + 4 significant bits) wherever that factor is a bf16 normal:
// MX scales up to 2; larger ones take a second multiply, by the scale
// after 2^126. NV16 scales (ue4m3, 2^-9 to 448) reach 2^134 that way, so
// their factor is 2^118 x the scale, always a normal: the pair is element
// x scale x 2^-8, still exact, and the accumulator is multiplied by 2^8
// (accumulator_shift) in the epilogue, as the fp32 tensor scale is.
//
// fp8 takes sm90/decoded_steps.h's decode a pair at a time: its exponent
// and mantissa shifted into bf16's fields, one multiply (two for MX scales
// whose factor is no bf16 normal); in a chunk holding a NaN or inf code the
// halves of those codes are then set to what decode_to_bf16 gives them (a
// few integer operations, where calling it would inline its float decode at
// every pair, a tenfold larger kernel).
#pragma once

#include <stdint.h>

#include "common/hd.h"
#include "groupgemm/groupgemm.h"
#include "kernels/portable/operand_decode.h"
#include "kernels/sm90/decoded_steps.h"

namespace gg::skinny {

// The factors of one block's pairs: one multiply by `first`, then, where
// `two`, one by `second`.
struct PairFactors {
  uint32_t first;
  uint32_t second;
  bool two;
};

// log2 of what the accumulator of an operand's decoded products is
// multiplied by in the epilogue: 8 for nvfp4 (see above), else 0.
GG_HD int accumulator_shift(gg_dtype dtype, gg_block_scaling scaling) {
  return dtype == GG_DTYPE_E2M1 && scaling == GG_BLOCK_NV16 ? 8 : 0;
}

// The factors of an e2m1 block whose scale code is `code` (MX32 or NV16).
GG_HD PairFactors e2m1_factors(gg_block_scaling scaling, uint8_t code) {
  if (scaling == GG_BLOCK_NV16) {
    const uint16_t scale = sm90::scale_bf16(GG_BLOCK_NV16, code);
    const uint16_t exponent = scale & 0x7F80u;
    // 0 stays 0 and NaN NaN; any other ue4m3 value is a bf16 normal of
    // exponent 2^-9 to 2^8, which 2^118 keeps a normal.
    const bool normal = exponent != 0 && exponent != 0x7F80u;
    return PairFactors{sm90::bf16_both(normal ? static_cast<uint16_t>(scale + (118u << 7)) : scale),
                       0, false};
  }
  if (code == 0xFFu) return PairFactors{sm90::bf16_both(0x7FC0u), 0, false};  // NaN
  // 2^126 x 2^(code - 127) = 2^(code - 1): a normal for codes up to 128.
  if (code <= 128) {
    return PairFactors{sm90::bf16_both(static_cast<uint16_t>((code + 126u) << 7)), 0, false};
  }
  return PairFactors{sm90::bf16_both(253u << 7), sm90::bf16_both(static_cast<uint16_t>(code << 7)),
                     true};
}

// Elements j and j + 4 (j 0-3) of a word of 8 e2m1 codes (element i in
// bits 4i .. 4i + 3), as a bf16 pair of their values times 2^-126.
GG_HD uint32_t e2m1_raw_pair(uint32_t codes, int j) {
  const uint32_t signs = (codes << (12 - 4 * j)) & 0x80008000u;
  const int shift = 6 - 4 * j;
  const uint32_t fields = (shift >= 0 ? codes << shift : codes >> -shift) & 0x01C001C0u;
  return signs | fields;
}

// Elements j and j + 4 of a word of 8 e2m1 codes times their block scale.
GG_HD uint32_t e2m1_pair(uint32_t codes, int j, const PairFactors& f) {
  const uint32_t pair = sm90::bf16x2_mul(e2m1_raw_pair(codes, j), f.first);
  return f.two ? sm90::bf16x2_mul(pair, f.second) : pair;
}

// The factors of an fp8 chunk's pairs (scale code `code` of `scaling`;
// no block scales: the power of two alone).
GG_HD PairFactors fp8_factors(bool e5m2, gg_block_scaling scaling, uint8_t code) {
  const sm90::Fp8Factors f = sm90::fp8_factors(e5m2, scaling, code);
  return PairFactors{f.first, f.second, f.two};
}

// Whether a factor (either half) is NaN: the scale code was NaN.
GG_HD bool is_nan_bf16(uint32_t factor) {
  return (factor & 0x7F80u) == 0x7F80u && (factor & 0x7Fu) != 0;
}

// A decoded fp8 pair (`bits`) with the halves whose code (in `spread`,
// spread_pair's) is no number set as decode_to_bf16 gives them: NaN for a
// NaN code, and e5m2's infinity, with its sign, times the block scale: an
// infinity, or NaN where the scale is NaN (every half is NaN then already).
GG_HD uint32_t with_special_codes(bool e5m2, uint32_t spread, uint32_t bits,
                                  const PairFactors& f) {
  const bool nan_scale = is_nan_bf16(f.first) || (f.two && is_nan_bf16(f.second));
  for (int half = 0; half < 2; ++half) {
    const uint32_t code = (spread >> (16 * half + 8)) & 0xFFu;
    const uint32_t magnitude = code & 0x7Fu;
    const bool special = e5m2 ? magnitude >= 0x7Cu : magnitude == 0x7Fu;
    if (!special || nan_scale) continue;
    const bool infinity = e5m2 && magnitude == 0x7Cu;
    const uint32_t value = infinity ? (code & 0x80u) << 8 | 0x7F80u : 0x7FC0u;
    bits = (bits & ~(0xFFFFu << (16 * half))) | value << (16 * half);
  }
  return bits;
}

// Elements 2 pair and 2 pair + 1 (pair 0-1) of a word of 4 fp8 codes times
// their block scale; `special`: the chunk holds a NaN or inf code, whose
// halves the shifts would make finite (with_special_codes sets them).
GG_HD uint32_t fp8_pair(bool e5m2, uint32_t codes, int pair, const PairFactors& f,
                        bool special) {
  const uint32_t spread = sm90::spread_pair(codes, pair);
  uint32_t bits = sm90::bf16x2_mul(sm90::fp8_pair_shifted(e5m2, spread), f.first);
  if (f.two) bits = sm90::bf16x2_mul(bits, f.second);
  return special ? with_special_codes(e5m2, spread, bits, f) : bits;
}

// Eight bf16 values in order (e0, e1) .. (e6, e7), four words, as the e2m1
// order takes them: (e0, e4), (e1, e5), (e2, e6), (e3, e7).
GG_HD void interleave_eight(const uint32_t (&in)[4], uint32_t (&out)[4]) {
  for (int j = 0; j < 4; ++j) {
    const uint32_t a = in[j / 2];
    const uint32_t b = in[2 + j / 2];
#ifdef __CUDA_ARCH__
    out[j] = __byte_perm(a, b, j % 2 == 0 ? 0x5410u : 0x7632u);
#else
    out[j] = j % 2 == 0 ? (a & 0xFFFFu) | (b << 16) : (a >> 16) | (b & 0xFFFF0000u);
#endif
  }
}

}  // namespace gg::skinny

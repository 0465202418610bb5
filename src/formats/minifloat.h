// The one rounding rule behind every narrow float format of the library.
//
// bf16, fp16, fp8 e4m3 / e5m2 and fp4 e2m1 differ only in their mantissa
// width, exponent bias, largest finite code and what their top codes mean
// (IEEE infinities and NaNs, one NaN only, or nothing special). A MiniFloat
// names those facts; encode_minifloat and decode_minifloat do the work for
// every format, so there is a single round-to-nearest-even to get right.
//
// Everything is integer arithmetic on the fp32 bit pattern: no float
// operation can round twice, be contracted into an FMA, or be flushed to zero
// by a compiler flag, so g++ and nvcc (host or device) produce the same bits.
// Encoding also takes an exact power-of-two `shift`: it rounds |x| * 2^shift
// without first forming that product in fp32, which is how MX block scales
// divide by 2^X with a single rounding even when x is an fp32 subnormal.
#pragma once

#include <stdint.h>
#include <string.h>

#include "common/hd.h"

namespace gg::fmt {

GG_HD uint32_t float_bits(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  return bits;
}

GG_HD float bits_float(uint32_t bits) {
  float x;
  memcpy(&x, &bits, sizeof(x));
  return x;
}

constexpr uint32_t kF32SignBit = 0x80000000u;
constexpr uint32_t kF32Inf = 0x7F800000u;
constexpr uint32_t kF32QuietNan = 0x7FC00000u;
constexpr uint32_t kF32FractionMask = 0x007FFFFFu;
constexpr int kF32MantissaBits = 23;
constexpr int kF32Bias = 127;
// Exponent of the lowest fraction bit of an fp32 subnormal: 2^-149.
constexpr int kF32SubnormalLsbExponent = 1 - kF32Bias - kF32MantissaBits;

// What the codes above the largest finite one mean.
enum class Specials {
  kIeee,     // all-ones exponent: infinity (zero mantissa) or NaN
  kNanOnly,  // one NaN per sign (all ones); no infinity (OCP e4m3)
  kNone      // every code is finite (OCP e2m1)
};

struct MiniFloat {
  int mantissa_bits;
  int exponent_bias;
  uint32_t max_code;  // magnitude code of the largest finite value
  uint32_t sign_bit;
  Specials specials;
};

// Number of significant bits of v (0 for 0). Plain halving steps rather
// than __builtin_clz / __clz, so host and device compile the same code.
GG_HD int bit_width(uint32_t v) {
  int width = 0;
  if (v >> 16) {
    width += 16;
    v >>= 16;
  }
  if (v >> 8) {
    width += 8;
    v >>= 8;
  }
  if (v >> 4) {
    width += 4;
    v >>= 4;
  }
  if (v >> 2) {
    width += 2;
    v >>= 2;
  }
  if (v >> 1) {
    width += 1;
    v >>= 1;
  }
  return width + static_cast<int>(v);
}

// sig / 2^drop rounded to nearest, ties to even. sig < 2^24.
GG_HD uint32_t shift_right_rne(uint32_t sig, int drop) {
  if (drop <= 0) return sig << -drop;  // exact; callers keep -drop small
  if (drop > 24) return 0;             // sig < 2^24 <= half a unit: rounds to 0
  const uint32_t kept = sig >> drop;
  const uint32_t rest = sig & ((1u << drop) - 1u);
  const uint32_t half = 1u << (drop - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

// Magnitude code of |x| * 2^shift (abs_bits: the fp32 bits of a finite |x|)
// rounded to nearest, ties to even, in `f` with its exponent range extended
// upward: the result may exceed f.max_code, which is how overflow shows. The
// code of a normal value is ((biased exponent - 1) << mantissa_bits) plus
// the significand with its leading one, so a carry out of the mantissa moves
// into the exponent and a rounded-up subnormal becomes the smallest normal.
// |shift| <= 127 (what MX scales need) keeps every intermediate far inside
// 32 bits.
GG_HD uint32_t round_magnitude(uint32_t abs_bits, int shift, const MiniFloat& f) {
  if (abs_bits == 0) return 0;
  const int biased32 = static_cast<int>(abs_bits >> kF32MantissaBits);
  uint32_t sig = abs_bits & kF32FractionMask;
  int lsb_exponent = kF32SubnormalLsbExponent + shift;  // exponent of sig's bit 0
  int top_exponent;                                     // floor(log2(|x| * 2^shift))
  if (biased32 == 0) {
    top_exponent = lsb_exponent + bit_width(sig) - 1;
  } else {
    sig |= 1u << kF32MantissaBits;
    lsb_exponent += biased32 - 1;
    top_exponent = lsb_exponent + kF32MantissaBits;
  }
  const int min_normal_exponent = 1 - f.exponent_bias;
  const int quantum_exponent =
      (top_exponent > min_normal_exponent ? top_exponent : min_normal_exponent) - f.mantissa_bits;
  const uint32_t significand = shift_right_rne(sig, quantum_exponent - lsb_exponent);
  const int biased = top_exponent + f.exponent_bias;
  const uint32_t base = biased > 1 ? static_cast<uint32_t>(biased - 1) << f.mantissa_bits : 0u;
  return base + significand;
}

// Code of x * 2^shift in `f`, round to nearest even.
//   NaN: kIeee -> quiet NaN with x's sign; kNanOnly -> the NaN with x's sign;
//        kNone -> +max (what cvt.rn.satfinite.e2m1x2.f32 returns).
//   Overflow (finite beyond max after rounding, or +-inf): +-max when
//        `saturate` or the format has no specials, else the code after max
//        (kIeee: infinity; kNanOnly: NaN).
GG_HD uint32_t encode_minifloat(float x, int shift, const MiniFloat& f, bool saturate) {
  const uint32_t bits = float_bits(x);
  const uint32_t sign = (bits & kF32SignBit) ? f.sign_bit : 0u;
  const uint32_t abs_bits = bits & ~kF32SignBit;
  if (abs_bits > kF32Inf) {
    switch (f.specials) {
      case Specials::kIeee:
        return sign | (f.max_code + 1u + (1u << (f.mantissa_bits - 1)));
      case Specials::kNanOnly:
        return sign | (f.max_code + 1u);
      case Specials::kNone:
        return f.max_code;
    }
  }
  const uint32_t overflow =
      (saturate || f.specials == Specials::kNone) ? f.max_code : f.max_code + 1u;
  if (abs_bits == kF32Inf) return sign | overflow;
  const uint32_t code = round_magnitude(abs_bits, shift, f);
  return sign | (code > f.max_code ? overflow : code);
}

// Value of `code` in `f`, built directly as fp32 bits. That needs the
// format's smallest subnormal to be an fp32 normal: true of every format
// here but bf16, which is the top half of fp32 and decodes by a shift. NaNs
// come back quiet, with their sign and the mantissa as payload.
GG_HD float decode_minifloat(uint32_t code, const MiniFloat& f) {
  const uint32_t sign = (code & f.sign_bit) ? kF32SignBit : 0u;
  const uint32_t magnitude = code & (f.sign_bit - 1u);
  const uint32_t mantissa_mask = (1u << f.mantissa_bits) - 1u;
  const uint32_t mantissa = magnitude & mantissa_mask;
  if (magnitude > f.max_code) {
    if (f.specials == Specials::kIeee && mantissa == 0) return bits_float(sign | kF32Inf);
    return bits_float(sign | kF32QuietNan | (mantissa << (kF32MantissaBits - f.mantissa_bits)));
  }
  const int biased = static_cast<int>(magnitude >> f.mantissa_bits);
  uint32_t sig = mantissa;
  int lsb_exponent = 1 - f.exponent_bias - f.mantissa_bits;
  if (biased != 0) {
    sig |= 1u << f.mantissa_bits;
    lsb_exponent += biased - 1;
  }
  if (sig == 0) return bits_float(sign);
  const int width = bit_width(sig);
  const uint32_t exponent32 = static_cast<uint32_t>(lsb_exponent + width - 1 + kF32Bias);
  const uint32_t fraction = (sig << (kF32MantissaBits + 1 - width)) & kF32FractionMask;
  return bits_float(sign | (exponent32 << kF32MantissaBits) | fraction);
}

}  // namespace gg::fmt

// Fast element encoders of the grouped quantizer: the same bits as the
// formats/block_quant.h rules, in a few instructions instead of the generic
// encode_minifloat walk. Each encoder states the reference rule it replaces
// and why it is bit-identical; tests/formats/element_encoders_test.cpp
// (CPU) and tests/formats/device_agreement_test.cu (GPU) compare them with
// the fmt:: functions over every bf16 input, fp32 edge values and every
// rounding boundary.
//
// fp8 (e4m3, e5m2). The reference codes y = x / scale (fp8 current and block
// scaling) or y = x * 2^(127 - e8m0) (mxfp8) with one round to nearest even,
// saturating to +-max for finite overflow and for +-inf, a NaN x giving the
// format's NaN with x's sign. PTX cvt.rn.satfinite.{e4m3,e5m2}x2.f32 (sm_89+)
// is that same single rounding with the same saturation; only NaN differs
// (the hardware returns a canonical NaN), so NaN lanes are patched here.
// Without the instruction (sm_80 code) the reference encoder runs.
//
// mxfp8 multiplies by the power of two instead of shifting exponents: the
// product is exact unless it leaves fp32's normal range. Above it, the fp32
// overflow is inf, which saturates like the reference's out-of-range code;
// below 2^-126 the rounded product and the reference both code to +-0 (the
// smallest fp8 subnormal is 2^-16), keeping x's sign.
//
// Division by a scale shared by a block. x / s rounded once costs a dozen
// instructions as IEEE division; ScaleDivider takes r = RN(1/s) once per
// block and forms q0 = RN(x r), then two Markstein corrections
// q' = RN(q + RN(x - q s) r): the residual x - q s is exact (an fma) while
// it is a normal float, and with r within half an ulp of 1/s the second
// correction of a faithful quotient is the correctly rounded x / s. The
// residual is normal whenever |x / s| >= 2^-20 and s lies in [2^-80, 2^100]
// (then |x| >= 2^-100); below 2^-20 the quotient may be off in its last
// bits, but every such value codes to a signed zero in e4m3, e5m2 and e2m1
// (whose smallest non-zero magnitudes are 2^-9, 2^-16 and 0.5), and the
// quotient keeps x's sign (each correction formed as q - RN(q s - x) r, so
// that -0 / s comes out -0 too, with no instruction to copy the sign). So
// for finite x and such s the codes equal the divided ones; other scales,
// blocks holding inf or NaN and quotients near overflow take the division
// (tests/formats: every bf16 under 64 scales on host and device, and 20
// million random pairs on the host).
//
// x of a bf16 or fp16 element (8 or 11 significant bits) needs only the
// first correction: q1 is already RN(x / s). In fp32's normal range q0, the
// residual and q1 all scale with the exponents of x and s, so the pairs of
// significands (2^23 of s, 2^7 or 2^10 of x) are every case, and
// tests/formats divides each of them on host and device (none needs the
// second correction, where q0 alone misses about a quarter of random
// pairs). fp32 elements keep both corrections.
//
// e2m1 (nvfp4 elements) has no instruction before sm_100; its code comes
// from the fp32 bits in about ten instructions. Clamping |y| to 6 first
// makes saturation (+-inf included) plain rounding. Below 2 the grid is the
// multiples of 0.5: 2^22 + a, whose ulp is 0.5, rounds a to it by the one
// addition, ties to even, and the low bits of the sum count the halves.
// From 1 on, e2m1 is a float with one mantissa bit, bias 1: the fp32 bits,
// rebased by 126 exponent steps, rounded to nearest even at bit 22 and
// shifted down are the code (a carry out of the mantissa bumps the exponent,
// 6 is 7). NaN is patched to +6; a quotient that skips the patch (the short
// path: finite elements) keeps its own sign, which is x's. Both are checked
// against fmt::float_to_e2m1 over every fp32 pattern.
//
// bf16 and fp16 elements under a block's step take no division at all:
// the e2m1 code of RN(x / s) is monotone in |x|, so it is the number of its
// seven rounding boundaries that |x| reaches, and each boundary is a least
// 16-bit magnitude, found once per block. RN(q) reaches a boundary B that
// rounds up (0.75, 1.75, 3.5: ties go to the even code above) iff
// q >= B - h, and passes one that rounds down (0.25, 1.25, 2.5, 5) iff
// q > B + h, h half an fp32 ulp at B; so |x| reaches it iff
// |x| >= (B - h) s, or > (B + h) s. That product is exact inside one fma
// rounded toward +inf (or -inf), the step's h s being exact for a step of
// at least 2^-80, and the least bf16 or fp16 at or above it (above it) is
// the threshold (fp16 by the cvt.rp / cvt.rm conversions). A pair of
// elements then finds its two codes at once by a binary search over the
// seven thresholds in 16-bit halves. On sm_90 one packed comparison of the
// magnitudes (set.ge.u32.bf16x2 or .f16x2, the absolute value folded into
// it) gives each step's select mask; elsewhere a subtraction from the
// magnitudes with a guard bit in each half sets bit 15 where a half
// reaches its threshold, and a byte permute widens that bit into the mask
// (about 13 instructions a pair on sm_90, 16 elsewhere, against about 30
// for the quotient and its rounding). Checked like the others: every finite bf16 and fp16 under
// 1600 steps on the host, and on the device.
//
// The nvfp4 block scale is a ue4m3 code: the reference's generic minifloat
// walk to encode it and back is the e4m3 conversion instructions on sm_89+
// (cvt.rn.satfinite.e4m3x2.f32, cvt.rn.f16x2.e4m3x2), with the reference's
// NaN and negative rules patched in.
#pragma once

#include <math.h>
#include <stdint.h>

#include "common/hd.h"
#include "formats/block_quant.h"
#include "formats/codecs.h"
#include "groupgemm/groupgemm.h"

namespace gg::quantize {

// Whether kIn is a 16-bit float (bf16 or fp16): at most 11 significant
// bits, which the one-correction division and the e2m1 thresholds rely on.
template <gg_dtype kIn>
constexpr bool kHalfInput = kIn == GG_DTYPE_BF16 || kIn == GG_DTYPE_FP16;

// The fp8 NaN code with the sign of x (kIeee e5m2: 0x7E; e4m3: 0x7F).
template <gg_dtype kFp8>
GG_HD uint32_t fp8_nan_code(uint32_t sign_bit) {
  return (sign_bit ? 0x80u : 0u) | (kFp8 == GG_DTYPE_E4M3 ? 0x7Fu : 0x7Eu);
}

// Codes of y0 (low byte) and y1, round to nearest even, saturating; NaN
// inputs are the caller's to patch.
template <gg_dtype kFp8>
GG_HD uint32_t fp8x2_satfinite(float y0, float y1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  uint16_t r;
  if constexpr (kFp8 == GG_DTYPE_E4M3) {
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;" : "=h"(r) : "f"(y0), "f"(y1));
  } else {
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %2, %1;" : "=h"(r) : "f"(y0), "f"(y1));
  }
  return r;
#else
  const fmt::MiniFloat f = fmt::minifloat_format(kFp8);
  return fmt::encode_minifloat(y0, 0, f, true) | fmt::encode_minifloat(y1, 0, f, true) << 8;
#endif
}

// fmt::fp8_quantize_element of x0 and x1 under fp32 scales s0 and s1.
template <gg_dtype kFp8>
GG_HD uint32_t fp8x2_divided(float x0, float s0, float x1, float s1) {
  uint32_t codes = fp8x2_satfinite<kFp8>(x0 / s0, x1 / s1);
  if (x0 != x0) codes = (codes & 0xFF00u) | fp8_nan_code<kFp8>(fmt::float_bits(x0) >> 31);
  if (x1 != x1) codes = (codes & 0x00FFu) | fp8_nan_code<kFp8>(fmt::float_bits(x1) >> 31) << 8;
  return codes;
}

// x / s through the reciprocal (see the top).
struct ScaleDivider {
  float scale;
  float reciprocal;
  bool fast;  // s in [2^-80, 2^100]

  ScaleDivider() = default;
  GG_HD explicit ScaleDivider(float s)
      : scale(s), reciprocal(1.0f / s), fast(s >= 0x1p-80f && s <= 0x1p100f) {}

  // Whether divide() gives x / s for every |x| <= amax: s in the fast
  // range, and amax finite with amax / s far from overflow.
  GG_HD bool covers(float amax) const { return fast && amax * reciprocal < 0x1p100f; }

  // x / s for |x| within what covers() accepted, with x's sign (see the
  // top). kNarrow: x is a bf16 or fp16 value, for which the first
  // correction is enough. A correction q - RN(q s - x) r has the value of
  // q + RN(x - q s) r, but turns -0 into -0 (its residual is +0), where
  // the other form gives +0.
  template <bool kNarrow = false>
  GG_HD float divide(float x) const {
#if defined(__CUDA_ARCH__)
    const float q0 = __fmul_rn(x, reciprocal);  // not to be fused into the next fma
#else
    const float q0 = x * reciprocal;
#endif
    const float q1 = fmaf(-fmaf(q0, scale, -x), reciprocal, q0);
    if constexpr (kNarrow) return q1;
    return fmaf(-fmaf(q1, scale, -x), reciprocal, q1);
  }
};

// fp8x2_divided for x0 and x1 that the divider covers (kNarrow: both bf16
// or fp16 values).
template <gg_dtype kFp8, bool kNarrow = false>
GG_HD uint32_t fp8x2_divided_finite(float x0, float x1, const ScaleDivider& d) {
  return fp8x2_satfinite<kFp8>(d.divide<kNarrow>(x0), d.divide<kNarrow>(x1));
}

// The fp32 multiplier 2^(127 - scale) of an e8m0 scale, or 0 for the NaN
// scale 0xFF. 2^-127 (scale 254) is an fp32 subnormal.
GG_HD float mx_multiplier(uint8_t scale) {
  if (scale == fmt::kE8m0Nan) return 0.0f;
  if (scale == 254) return fmt::bits_float(1u << (fmt::kF32MantissaBits - 1));
  return fmt::bits_float(static_cast<uint32_t>(254 - scale) << fmt::kF32MantissaBits);
}

// fmt::mx_quantize_element of x0 and x1 for an fp8 element type, under the
// multipliers m0 and m1 of mx_multiplier (0: the NaN scale, every element
// the positive NaN code, as the reference codes its quiet NaN).
template <gg_dtype kFp8>
GG_HD uint32_t mx_fp8x2(float x0, float m0, float x1, float m1) {
  uint32_t codes = fp8x2_satfinite<kFp8>(x0 * m0, x1 * m1);
  if (x0 != x0) codes = (codes & 0xFF00u) | fp8_nan_code<kFp8>(fmt::float_bits(x0) >> 31);
  if (x1 != x1) codes = (codes & 0x00FFu) | fp8_nan_code<kFp8>(fmt::float_bits(x1) >> 31) << 8;
  if (m0 == 0.0f) codes = (codes & 0xFF00u) | fp8_nan_code<kFp8>(0);
  if (m1 == 0.0f) codes = (codes & 0x00FFu) | fp8_nan_code<kFp8>(0) << 8;
  return codes;
}

// mx_fp8x2 for finite x0 and x1 under one multiplier other than 0.
template <gg_dtype kFp8>
GG_HD uint32_t mx_fp8x2_finite(float x0, float x1, float m) {
  return fp8x2_satfinite<kFp8>(x0 * m, x1 * m);
}

// The e2m1 magnitude code of a = min(|y|, 6) (see the top) in the low
// three bits; the bits above are not cleared.
GG_HD uint32_t e2m1_magnitude_bits(float a) {
  constexpr uint32_t kRebias = 252u << 22;  // 126 exponent steps (bias 127 to 1), two codes each
  const uint32_t halves = fmt::float_bits(a + 0x1p22f);
  const uint32_t bits = fmt::float_bits(a);
  const uint32_t rounded = (bits - kRebias + 0x1FFFFFu + ((bits >> 22) & 1u)) >> 22;
  return a < 2.0f ? halves : rounded;
}

// The e2m1 code of magnitude bits (e2m1_magnitude_bits) and the sign of
// the fp32 bits `sign_bits`: (magnitude & 7) | (sign_bits >> 28 & 8), one
// LOP3 on the device (the shifted sign has no bit above 3).
GG_HD uint32_t e2m1_signed(uint32_t magnitude, uint32_t sign_bits) {
  const uint32_t sign = sign_bits >> 28;
#if defined(__CUDA_ARCH__)
  uint32_t code;  // (magnitude & 7) | (sign & ~7)
  asm("lop3.b32 %0, %1, %2, 7, 0xE4;" : "=r"(code) : "r"(magnitude), "r"(sign));
  return code;
#else
  return (magnitude & 0x7u) | (sign & 0x8u);
#endif
}

// fmt::float_to_e2m1 of a y that is not NaN.
GG_HD uint32_t e2m1_code_number(float y) {
  return e2m1_signed(e2m1_magnitude_bits(fminf(fabsf(y), 6.0f)), fmt::float_bits(y));
}

// fmt::float_to_e2m1.
GG_HD uint32_t e2m1_code(float y) { return y != y ? 0x7u : e2m1_code_number(y); }

// fmt::mx_quantize_element of x for e2m1 elements under the multiplier m of
// mx_multiplier: x * m is exact wherever it can code to more than a signed
// zero (the argument of the mxfp8 product above), and the NaN scale (m = 0)
// codes every element as e2m1's NaN conversion, +6.
GG_HD uint32_t mx_e2m1_code(float x, float m) { return m == 0.0f ? 0x7u : e2m1_code(x * m); }

// mx_e2m1_code for a finite x under a multiplier other than 0.
GG_HD uint32_t mx_e2m1_code_finite(float x, float m) { return e2m1_code_number(x * m); }

// fmt::nvfp4_quantize_element given step = ue4m3_to_float(block) * tensor
// scale, the product the reference forms (0: the element codes to 0).
GG_HD uint32_t nvfp4_code(float x, float step) { return step == 0.0f ? 0u : e2m1_code(x / step); }

// nvfp4_code for x that the step's divider covers: the quotient is exact,
// or under 2^-20 with x's sign, where the code is a signed 0 either way.
GG_HD uint32_t nvfp4_code_finite(float x, const ScaleDivider& step) {
  return e2m1_code_number(step.divide(x));
}

// fmt::float_to_ue4m3: NaN -> 0x7F, negative (-0 included) -> 0, else e4m3
// rounded to nearest even, saturating at 448.
GG_HD uint32_t ue4m3_code(float v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  const uint32_t bits = fmt::float_bits(v);
  const uint32_t code = fp8x2_satfinite<GG_DTYPE_E4M3>(v, 0.0f) & 0xFFu;
  if ((bits & ~fmt::kF32SignBit) > fmt::kF32Inf) return 0x7Fu;
  return (bits & fmt::kF32SignBit) ? 0u : code;
#else
  return fmt::float_to_ue4m3(v);
#endif
}

// fmt::ue4m3_to_float: every code but the NaN 0x7F is an exact fp16, and
// the NaN is the reference's quiet NaN with the code's mantissa.
GG_HD float ue4m3_value(uint32_t code) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  const uint16_t e4m3 = static_cast<uint16_t>(code & 0x7Fu);
  uint32_t halves;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(halves) : "h"(e4m3));
  float value;
  asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(static_cast<uint16_t>(halves & 0xFFFFu)));
  return e4m3 == 0x7Fu ? fmt::bits_float(fmt::kF32QuietNan | (0x7u << 20)) : value;
#else
  return fmt::ue4m3_to_float(static_cast<uint8_t>(code));
#endif
}

// ---- nvfp4 for 16-bit pairs by thresholds (see the top) ----

// The seven boundaries of e2m1 rounding: code j + 1 (and above) from
// boundary j on, reached where it rounds up, else passed; half an fp32 ulp
// there.
GG_HD constexpr float e2m1_boundary(int j) {
  constexpr float kBoundaries[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  return kBoundaries[j];
}
GG_HD constexpr bool e2m1_rounds_up(int j) { return j % 2 == 1; }
GG_HD constexpr float e2m1_half_ulp(int j) {
  constexpr float kHalfUlps[7] = {0x1p-26f, 0x1p-25f, 0x1p-24f, 0x1p-24f,
                                  0x1p-23f, 0x1p-23f, 0x1p-22f};
  return kHalfUlps[j];
}

// Per 16-bit half, the bits (bf16 or fp16) of the least magnitude whose
// code under the half's step is at least j + 1.
struct E2m1Thresholds {
  uint32_t at_least[7];
};

// The least 16-bit code (kHalf: bf16 or fp16 bits) whose magnitude
// reaches e2m1 boundary j under `step` (in [2^-80, 2^100]): at or above
// (B_j - h_j) step where the boundary rounds up, above (B_j + h_j) step
// where it does not. The bound is an fma rounded up (down), then rounded
// up (down) to the 16-bit format; "above" is the code after the one at or
// below. Codes saturate at inf, which no finite element reaches.
template <gg_dtype kHalf>
GG_HD uint32_t e2m1_threshold(float step, int j) {
  static_assert(kHalfInput<kHalf>, "a 16-bit float input");
  const bool up = e2m1_rounds_up(j);
#if defined(__CUDA_ARCH__)
  const float offset = __fmul_rn(e2m1_half_ulp(j), step);  // exact: a power of two times a normal
  const float bound = up ? __fmaf_ru(e2m1_boundary(j), step, -offset)
                         : __fmaf_rd(e2m1_boundary(j), step, offset);
  if constexpr (kHalf == GG_DTYPE_BF16) {
    const uint32_t bits = fmt::float_bits(bound);
    return up ? (bits + 0xFFFFu) >> 16 : (bits >> 16) + 1u;
  } else {
    uint16_t code;
    if (up) {
      asm("cvt.rp.f16.f32 %0, %1;" : "=h"(code) : "f"(bound));
    } else {
      asm("cvt.rm.f16.f32 %0, %1;" : "=h"(code) : "f"(bound));
    }
    return up ? code : code + 1u;
  }
#else
  // (B -+ h) has at most 25 significant bits and step 24: exact in double.
  const double offset = (up ? -1.0 : 1.0) * static_cast<double>(e2m1_half_ulp(j));
  const double exact = (static_cast<double>(e2m1_boundary(j)) + offset) * static_cast<double>(step);
  float bound = static_cast<float>(exact);
  if (up && static_cast<double>(bound) < exact) bound = nextafterf(bound, INFINITY);
  if (!up && static_cast<double>(bound) > exact) bound = nextafterf(bound, 0.0f);
  uint32_t code = 0;
  if constexpr (kHalf == GG_DTYPE_BF16) {
    const uint32_t bits = fmt::float_bits(bound);
    code = up ? (bits + 0xFFFFu) >> 16 : bits >> 16;
  } else {
    code = fmt::float_to_fp16(bound);
    const float value = fmt::fp16_to_float(static_cast<uint16_t>(code));
    if (up && value < bound) ++code;
    if (!up && value > bound) --code;
  }
  return up ? code : code + 1u;
#endif
}

// The thresholds of the low half under step_low and the high half under
// step_high, both in [2^-80, 2^100] (a ScaleDivider's fast range).
template <gg_dtype kHalf>
GG_HD E2m1Thresholds e2m1_thresholds(float step_low, float step_high) {
  E2m1Thresholds t;
  for (int j = 0; j < 7; ++j) {  // unrolled by the device compiler (seven constant steps)
    t.at_least[j] = e2m1_threshold<kHalf>(step_low, j) | e2m1_threshold<kHalf>(step_high, j) << 16;
  }
  return t;
}

// Per 16-bit half, 0xFFFF where bit 15 of the half is set: one byte
// permute replicating the sign bits of bytes 1 and 3 on the device.
GG_HD uint32_t half_sign_masks(uint32_t v) {
#if defined(__CUDA_ARCH__)
  uint32_t masks;
  asm("prmt.b32 %0, %1, 0, 0xBB99;" : "=r"(masks) : "r"(v));
  return masks;
#else
  return ((v & 0x8000u) ? 0x0000FFFFu : 0u) | ((v & 0x80000000u) ? 0xFFFF0000u : 0u);
#endif
}

// Per 16-bit half, 0xFFFF where the magnitude of the half of `pair` (a
// finite bf16 or fp16) is at least the threshold in that half (a finite
// magnitude, inf, or the NaN pattern just past inf that e2m1_threshold
// gives a bound of inf, which nothing reaches). On sm_90 one packed
// comparison, the absolute value an operand modifier of it; else a guarded
// subtraction of the halves (magnitudes up to 0x7F7F, thresholds up to
// 0x7F81: no borrow crosses).
template <gg_dtype kHalf>
GG_HD uint32_t halves_at_least(uint32_t pair, uint32_t thresholds) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t masks;
  if constexpr (kHalf == GG_DTYPE_BF16) {
    asm("{\n\t.reg .b32 m;\n\tabs.bf16x2 m, %1;\n\tset.ge.u32.bf16x2 %0, m, %2;\n\t}"
        : "=r"(masks)
        : "r"(pair), "r"(thresholds));
  } else {
    asm("{\n\t.reg .b32 m;\n\tabs.f16x2 m, %1;\n\tset.ge.u32.f16x2 %0, m, %2;\n\t}"
        : "=r"(masks)
        : "r"(pair), "r"(thresholds));
  }
  return masks;
#else
  return half_sign_masks((pair | 0x80008000u) - thresholds);
#endif
}

// The e2m1 codes of a pair of finite bf16 or fp16 elements under their
// halves' thresholds: the low element's at bits 0-3, the high one's at
// bits 16-19. A binary search: code bit 2 from the threshold of code 4,
// bit 1 from that of code 6 or 2, bit 0 from that of 7, 5, 3 or 1.
template <gg_dtype kHalf>
GG_HD uint32_t e2m1_pair_codes(uint32_t pair, const E2m1Thresholds& t) {
  const auto select = [](uint32_t mask, uint32_t a, uint32_t b) {
    return (a & mask) | (b & ~mask);
  };
  const uint32_t bit2 = halves_at_least<kHalf>(pair, t.at_least[3]);
  const uint32_t bit1 = halves_at_least<kHalf>(pair, select(bit2, t.at_least[5], t.at_least[1]));
  const uint32_t odd_threshold = select(bit2, select(bit1, t.at_least[6], t.at_least[4]),
                                        select(bit1, t.at_least[2], t.at_least[0]));
  const uint32_t bit0 = halves_at_least<kHalf>(pair, odd_threshold);
  return (bit2 & 0x00040004u) | (bit1 & 0x00020002u) | (bit0 & 0x00010001u) |
         (half_sign_masks(pair) & 0x00080008u);
}

}  // namespace gg::quantize

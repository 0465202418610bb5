// Scalar codecs of every element and scale format, for host and device.
//
// Each format is a MiniFloat (minifloat.h) plus its spec's special-value
// rules; all conversions to a narrow format round to nearest, ties to even.
//   bf16   8-bit exponent (bias 127), 7-bit mantissa, IEEE inf/NaN.
//   fp16   IEEE binary16: bias 15, 10-bit mantissa, max 65504.
//   e4m3   OCP OFP8 v1.0: bias 7, no infinity, S.1111.111 is NaN, max 448,
//          min subnormal 2^-9.
//   e5m2   OCP OFP8 v1.0: bias 15, IEEE inf (0x7C) and NaN (0x7D-0x7F),
//          max 57344.
//   e2m1   OCP MX v1.0 fp4: bias 1, values 0, 0.5, 1, 1.5, 2, 3, 4, 6; no
//          inf/NaN. Two per byte, element i in the low nibble when i is even.
//   e8m0   OCP MX v1.0 scale: 2^(e-127), e = 0 gives 2^-127; 0xFF is NaN.
//   ue4m3  e4m3 without its sign bit: the nvfp4 block scale.
//
// Special values on conversion to a narrow format:
//   NaN:      bf16/fp16/e5m2 -> quiet NaN with the input's sign (0x7FC0,
//             0x7E00, 0x7E); e4m3 -> 0x7F with the input's sign; e2m1 ->
//             +6 (0x7), as NVIDIA's cvt.rn.satfinite.e2m1x2.f32 does (CUDA
//             13 cuda_fp4.hpp: "NaN converts to positive FP4_MAXNORM"),
//             the OCP MX spec leaving it to the implementation; ue4m3 -> 0x7F.
//   Overflow: bf16/fp16 -> +-inf. fp8 with saturate -> +-max, for finite
//             overflow and for +-inf alike (OFP8 v1.0 section 5.2, Table 3;
//             NVIDIA's __NV_SATFINITE does the same); fp8 without saturate:
//             e4m3 -> NaN, e5m2 -> +-inf. e2m1 and ue4m3 always saturate.
//   A value rounding to zero keeps its sign (-0) except in ue4m3, where
//   every negative input becomes 0.
// Decoding a NaN code gives an fp32 NaN of the code's sign: quiet, except
// that bf16 decodes by a plain shift (it is the top half of fp32).
#pragma once

#include <float.h>
#include <stdint.h>

#include "common/hd.h"
#include "formats/minifloat.h"
#include "groupgemm/groupgemm.h"

namespace gg::fmt {

GG_HD MiniFloat minifloat_format(gg_dtype dtype) {
  switch (dtype) {
    case GG_DTYPE_BF16:
      return MiniFloat{7, 127, 0x7F7Fu, 0x8000u, Specials::kIeee};
    case GG_DTYPE_FP16:
      return MiniFloat{10, 15, 0x7BFFu, 0x8000u, Specials::kIeee};
    case GG_DTYPE_E4M3:
      return MiniFloat{3, 7, 0x7Eu, 0x80u, Specials::kNanOnly};
    case GG_DTYPE_E5M2:
      return MiniFloat{2, 15, 0x7Bu, 0x80u, Specials::kIeee};
    case GG_DTYPE_E2M1:
      return MiniFloat{1, 1, 0x7u, 0x8u, Specials::kNone};
    case GG_DTYPE_FP32:
      break;
  }
  // fp32 itself; nothing rounds to it here (an fp32 store keeps the bits).
  return MiniFloat{23, 127, 0x7F7FFFFFu, kF32SignBit, Specials::kIeee};
}

// ---- 16-bit ----
GG_HD float bf16_to_float(uint16_t code) { return bits_float(static_cast<uint32_t>(code) << 16); }
GG_HD uint16_t float_to_bf16(float x) {
  return static_cast<uint16_t>(encode_minifloat(x, 0, minifloat_format(GG_DTYPE_BF16), false));
}

GG_HD float fp16_to_float(uint16_t code) {
  return decode_minifloat(code, minifloat_format(GG_DTYPE_FP16));
}
GG_HD uint16_t float_to_fp16(float x) {
  return static_cast<uint16_t>(encode_minifloat(x, 0, minifloat_format(GG_DTYPE_FP16), false));
}

// ---- 8-bit ----
GG_HD float e4m3_to_float(uint8_t code) {
  return decode_minifloat(code, minifloat_format(GG_DTYPE_E4M3));
}
GG_HD uint8_t float_to_e4m3(float x, bool saturate) {
  return static_cast<uint8_t>(encode_minifloat(x, 0, minifloat_format(GG_DTYPE_E4M3), saturate));
}

GG_HD float e5m2_to_float(uint8_t code) {
  return decode_minifloat(code, minifloat_format(GG_DTYPE_E5M2));
}
GG_HD uint8_t float_to_e5m2(float x, bool saturate) {
  return static_cast<uint8_t>(encode_minifloat(x, 0, minifloat_format(GG_DTYPE_E5M2), saturate));
}

// The sign bit is not part of ue4m3: it is ignored when decoding.
GG_HD float ue4m3_to_float(uint8_t code) {
  return e4m3_to_float(static_cast<uint8_t>(code & 0x7Fu));
}
GG_HD uint8_t float_to_ue4m3(float x) {
  const uint32_t bits = float_bits(x);
  if ((bits & ~kF32SignBit) > kF32Inf) return 0x7Fu;
  if (bits & kF32SignBit) return 0;
  return float_to_e4m3(x, true);
}

constexpr uint8_t kE8m0Nan = 0xFFu;
constexpr int kE8m0MinExponent = -127;
constexpr int kE8m0MaxExponent = 127;

GG_HD float e8m0_to_float(uint8_t code) {
  if (code == kE8m0Nan) return bits_float(kF32QuietNan);
  if (code == 0) return bits_float(1u << (kF32MantissaBits - 1));  // 2^-127, an fp32 subnormal
  return bits_float(static_cast<uint32_t>(code) << kF32MantissaBits);
}
GG_HD uint8_t e8m0_from_exponent(int unbiased) {
  const int clamped = unbiased < kE8m0MinExponent   ? kE8m0MinExponent
                      : unbiased > kE8m0MaxExponent ? kE8m0MaxExponent
                                                    : unbiased;
  return static_cast<uint8_t>(clamped + kF32Bias);
}

// ---- 4-bit ----
GG_HD float e2m1_to_float(uint8_t nibble) {
  return decode_minifloat(nibble & 0xFu, minifloat_format(GG_DTYPE_E2M1));
}
GG_HD uint8_t float_to_e2m1(float x) {
  return static_cast<uint8_t>(encode_minifloat(x, 0, minifloat_format(GG_DTYPE_E2M1), true));
}

// Element i of a packed e2m1 array. e2m1_set rewrites the whole byte, so two
// threads must not set the two halves of one byte concurrently.
GG_HD uint8_t e2m1_get(const uint8_t* packed, int64_t i) {
  const uint8_t byte = packed[i >> 1];
  return static_cast<uint8_t>((i & 1) ? byte >> 4 : byte & 0xFu);
}
GG_HD void e2m1_set(uint8_t* packed, int64_t i, uint8_t nibble) {
  uint8_t& byte = packed[i >> 1];
  const unsigned low = nibble & 0xFu;
  byte = static_cast<uint8_t>((i & 1) ? (byte & 0x0Fu) | (low << 4) : (byte & 0xF0u) | low);
}

// ---- any element type ----
GG_HD int dtype_bits(gg_dtype dtype) {
  switch (dtype) {
    case GG_DTYPE_BF16:
    case GG_DTYPE_FP16:
      return 16;
    case GG_DTYPE_FP32:
      return 32;
    case GG_DTYPE_E4M3:
    case GG_DTYPE_E5M2:
      return 8;
    case GG_DTYPE_E2M1:
      return 4;
  }
  return 0;
}

// Largest finite value.
GG_HD float dtype_max(gg_dtype dtype) {
  if (dtype == GG_DTYPE_FP32) return FLT_MAX;
  const MiniFloat f = minifloat_format(dtype);
  if (dtype == GG_DTYPE_BF16) return bf16_to_float(static_cast<uint16_t>(f.max_code));
  return decode_minifloat(f.max_code, f);
}

// Element `index` of a dense array of `dtype` starting at `base`.
GG_HD float decode(gg_dtype dtype, const void* base, int64_t index) {
  switch (dtype) {
    case GG_DTYPE_BF16:
      return bf16_to_float(static_cast<const uint16_t*>(base)[index]);
    case GG_DTYPE_FP16:
      return fp16_to_float(static_cast<const uint16_t*>(base)[index]);
    case GG_DTYPE_FP32:
      return static_cast<const float*>(base)[index];
    case GG_DTYPE_E4M3:
      return e4m3_to_float(static_cast<const uint8_t*>(base)[index]);
    case GG_DTYPE_E5M2:
      return e5m2_to_float(static_cast<const uint8_t*>(base)[index]);
    case GG_DTYPE_E2M1:
      return e2m1_to_float(e2m1_get(static_cast<const uint8_t*>(base), index));
  }
  return bits_float(kF32QuietNan);
}

// Stores `value` as element `index`. `saturate` selects the fp8 overflow
// rule; bf16/fp16 overflow to infinity, e2m1 always saturates and fp32 is
// stored as it is.
GG_HD void encode(gg_dtype dtype, void* base, int64_t index, float value, bool saturate) {
  switch (dtype) {
    case GG_DTYPE_BF16:
      static_cast<uint16_t*>(base)[index] = float_to_bf16(value);
      return;
    case GG_DTYPE_FP16:
      static_cast<uint16_t*>(base)[index] = float_to_fp16(value);
      return;
    case GG_DTYPE_FP32:
      static_cast<float*>(base)[index] = value;
      return;
    case GG_DTYPE_E4M3:
      static_cast<uint8_t*>(base)[index] = float_to_e4m3(value, saturate);
      return;
    case GG_DTYPE_E5M2:
      static_cast<uint8_t*>(base)[index] = float_to_e5m2(value, saturate);
      return;
    case GG_DTYPE_E2M1:
      e2m1_set(static_cast<uint8_t*>(base), index, float_to_e2m1(value));
      return;
  }
}

}  // namespace gg::fmt

// Inputs and scales on which the quantizer's fast element encoders
// (kernels/quantize/element_encoders.h) must give the fmt:: bits: every bf16
// pattern, fp32 edge values (+-0, subnormals, +-inf, NaNs, FLT_MAX) and every
// rounding boundary of e4m3, e5m2 and e2m1 with its two fp32 neighbours,
// each boundary also moved by the powers of two that MX scales apply.
#pragma once

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <vector>

#include "common/hd.h"
#include "formats/block_quant.h"
#include "formats/codecs.h"
#include "kernels/quantize/element_encoders.h"

namespace gg_test {

inline float float_of_bits(uint32_t bits) {
  float x;
  memcpy(&x, &bits, sizeof(x));
  return x;
}

// Value of a narrow code.
inline float narrow_value(gg_dtype dtype, uint32_t code) {
  const uint8_t byte = static_cast<uint8_t>(code);
  if (dtype == GG_DTYPE_E4M3) return gg::fmt::e4m3_to_float(byte);
  if (dtype == GG_DTYPE_E5M2) return gg::fmt::e5m2_to_float(byte);
  return gg::fmt::e2m1_to_float(byte);
}

inline std::vector<float> encoder_inputs() {
  namespace f = gg::fmt;
  std::vector<float> inputs;
  for (uint32_t b = 0; b < (1u << 16); ++b) inputs.push_back(float_of_bits(b << 16));
  const float specials[] = {0.0f,     -0.0f,         INFINITY,     -INFINITY, NAN, -NAN,
                            FLT_MAX,  -FLT_MAX,      FLT_MIN,      -FLT_MIN,  0x1p-149f,
                            -0x1p-149f, 0x1.fffffcp-127f, 0x1p-127f, 0x1.8p-140f};
  for (float s : specials) inputs.push_back(s);
  inputs.push_back(float_of_bits(0x7F800001u));  // signalling NaN, payload 1
  inputs.push_back(float_of_bits(0xFFC12345u));  // negative quiet NaN with payload
  // Midpoints between neighbouring codes of each narrow format, and their
  // fp32 neighbours, at several power-of-two offsets.
  const struct {
    gg_dtype dtype;
    uint32_t max_code;
  } formats[] = {{GG_DTYPE_E4M3, 0x7E}, {GG_DTYPE_E5M2, 0x7B}, {GG_DTYPE_E2M1, 0x7}};
  const int offsets[] = {0, -1, 1, -20, 20, -100, 100, -126, 126};
  for (const auto& fmt : formats) {
    const auto value = [&](uint32_t code) { return narrow_value(fmt.dtype, code); };
    for (uint32_t c = 0; c <= fmt.max_code; ++c) {
      const float lo = value(c);
      // Past the largest code: the first value that rounds past it.
      const float hi = c == fmt.max_code ? 2.0f * lo - value(c - 1) : value(c + 1);
      const float mid = 0.5f * (lo + hi);
      for (int e : offsets) {
        for (float v : {lo, mid, hi}) {
          const float x = ldexpf(v, e);
          for (float y : {x, nextafterf(x, 0.0f), nextafterf(x, INFINITY)}) {
            inputs.push_back(y);
            inputs.push_back(-y);
          }
        }
      }
    }
  }
  return inputs;
}

// 64 fp8 scales: fp8_scale_from_amax of amaxes across the range, 0, inf and
// NaN included (those give scale 1).
inline std::vector<float> fp8_scales(gg_dtype fp8) {
  std::vector<float> scales;
  const float amaxes[] = {0.0f, INFINITY, NAN, 1.0f, 448.0f, 57344.0f, 1e-30f, 3e38f};
  for (float a : amaxes) scales.push_back(gg::fmt::fp8_scale_from_amax(a, fp8));
  for (int i = 0; scales.size() < 64; ++i) {
    const float amax = ldexpf(1.0f + 0.0371f * static_cast<float>(i), (i * 37) % 200 - 100);
    scales.push_back(gg::fmt::fp8_scale_from_amax(amax, fp8));
  }
  return scales;
}

// 64 e8m0 scales: every fourth code, the extremes and the NaN scale.
inline std::vector<uint8_t> mx_scales() {
  std::vector<uint8_t> scales;
  for (int j = 0; j < 60; ++j) scales.push_back(static_cast<uint8_t>(j * 4 + j % 4));
  for (int s : {0, 1, 254, 255}) scales.push_back(static_cast<uint8_t>(s));
  return scales;
}

// 64 nvfp4 steps (ue4m3 block scale value times a tensor scale), 0 included.
inline std::vector<float> nvfp4_steps() {
  namespace f = gg::fmt;
  std::vector<float> steps;
  const float tensor_scales[] = {1.0f, f::nvfp4_tensor_scale(1.0f), f::nvfp4_tensor_scale(3e4f),
                                 f::nvfp4_tensor_scale(1e-30f)};
  for (int j = 0; steps.size() < 64; ++j) {
    const uint8_t block = static_cast<uint8_t>((j * 29) % 128);
    steps.push_back(f::ue4m3_to_float(block) * tensor_scales[j % 4]);
  }
  return steps;
}

// 1600 nvfp4 steps for the e2m1 thresholds of 16-bit pairs, over their
// whole range: every ue4m3 block scale times four tensor scales (powers of
// two among them, where quotients land on the rounding boundaries exactly),
// and random steps from 2^-80 to 2^100, a third with short mantissas.
inline std::vector<float> e2m1_threshold_steps() {
  namespace f = gg::fmt;
  std::vector<float> steps;
  const float tensor_scales[] = {1.0f, 0x1p-20f, f::nvfp4_tensor_scale(1.0f),
                                 f::nvfp4_tensor_scale(3e4f)};
  for (float tensor : tensor_scales) {
    for (int code = 1; code < 0x7F; ++code) {
      steps.push_back(f::ue4m3_to_float(static_cast<uint8_t>(code)) * tensor);
    }
  }
  uint64_t state = 20261125;  // a fixed LCG: the same steps on every run
  while (steps.size() < 1600) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t r = state >> 11;
    uint32_t mantissa = static_cast<uint32_t>(r >> 8) & 0x7FFFFFu;
    if (steps.size() % 3 == 0) mantissa &= 0x700000u;
    steps.push_back(float_of_bits((47 + static_cast<uint32_t>(r % 180)) << 23 | mantissa));
  }
  return steps;
}

// Every finite magnitude of a 16-bit float input, and its value.
constexpr uint32_t kFiniteBf16Magnitudes = 0x7F80;
constexpr uint32_t kFiniteFp16Magnitudes = 0x7C00;
template <gg_dtype kHalf>
GG_HD float half_value(uint32_t bits) {
  if constexpr (kHalf == GG_DTYPE_BF16) return gg::fmt::bits_float(bits << 16);
  else return gg::fmt::fp16_to_float(static_cast<uint16_t>(bits));
}

// The e2m1 codes of the 16-bit pair (low | high << 16) under (low_step,
// high_step) by thresholds, and the reference's in the same places.
template <gg_dtype kHalf>
GG_HD uint32_t e2m1_pair_codes_of(uint32_t low, uint32_t high, float low_step, float high_step) {
  return gg::quantize::e2m1_pair_codes<kHalf>(low | high << 16,
                                       gg::quantize::e2m1_thresholds<kHalf>(low_step, high_step));
}
template <gg_dtype kHalf>
GG_HD uint32_t e2m1_reference_pair(uint32_t low, uint32_t high, float low_step, float high_step) {
  return static_cast<uint32_t>(gg::fmt::float_to_e2m1(half_value<kHalf>(low) / low_step)) |
         static_cast<uint32_t>(gg::fmt::float_to_e2m1(half_value<kHalf>(high) / high_step)) << 16;
}

// The scale tables, indexed by a scale slot j < kEncoderScales.
constexpr int kEncoderScales = 64;
struct EncoderScales {
  float e4m3[kEncoderScales];
  float e5m2[kEncoderScales];
  uint8_t mx[kEncoderScales];
  float nvfp4_step[kEncoderScales];
};

inline EncoderScales encoder_scales() {
  EncoderScales s{};
  const std::vector<float> e4m3 = fp8_scales(GG_DTYPE_E4M3);
  const std::vector<float> e5m2 = fp8_scales(GG_DTYPE_E5M2);
  const std::vector<uint8_t> mx = mx_scales();
  const std::vector<float> steps = nvfp4_steps();
  for (int j = 0; j < kEncoderScales; ++j) {
    s.e4m3[j] = e4m3[static_cast<size_t>(j)];
    s.e5m2[j] = e5m2[static_cast<size_t>(j)];
    s.mx[j] = mx[static_cast<size_t>(j)];
    s.nvfp4_step[j] = steps[static_cast<size_t>(j)];
  }
  return s;
}

// The fmt:: rules the fast encoders stand for, one element each.
GG_HD uint32_t ref_fp8(float x, float scale, gg_dtype d) {
  return gg::fmt::fp8_quantize_element(x, scale, d);
}
GG_HD uint32_t ref_mx(float x, uint8_t scale, gg_dtype d) {
  return gg::fmt::mx_quantize_element(x, scale, d);
}
// The reference's nvfp4 step is ue4m3_to_float(block) * tensor_scale; the
// table holds such products, and a step of 0 codes every element to 0.
GG_HD uint32_t ref_nv(float x, float step) {
  return step == 0.0f ? 0u : gg::fmt::float_to_e2m1(x / step);
}

// One element by the quantizer's encoders as its tile writers pick them
// (the element standing for its block's amax): the reciprocal or product
// path where it applies, the exact path otherwise.
GG_HD bool finite(float x) { return (gg::fmt::float_bits(x) & ~gg::fmt::kF32SignBit) < 0x7F800000u; }

template <gg_dtype kFp8, bool kNarrow = false>
GG_HD uint32_t fast_fp8(float x, float scale) {
  namespace q = gg::quantize;
  const q::ScaleDivider divider(scale);
  return (divider.covers(fabsf(x)) ? q::fp8x2_divided_finite<kFp8, kNarrow>(x, x, divider)
                                   : q::fp8x2_divided<kFp8>(x, scale, x, scale)) &
         0xFFu;
}

// fast_fp8 as the tile writers code bf16 input: one correction where x is a
// bf16 value.
template <gg_dtype kFp8>
GG_HD uint32_t fast_fp8_of_bf16(float x, float scale) {
  return (gg::fmt::float_bits(x) & 0xFFFFu) == 0 ? fast_fp8<kFp8, true>(x, scale)
                                                 : fast_fp8<kFp8>(x, scale);
}

// The pairs of significands behind the one-correction division of 16-bit
// elements: scale 1 + m 2^-23, and x every value of kSignificand (8: bf16,
// 11: fp16) significant bits in [1, 2). Calls f(x, scale, quotient) with
// the quotient ScaleDivider::divide<true> gives, which must be x / scale.
// In fp32's normal range the quotient, the residual and the correction
// scale with the exponents of x and s, so the pairs of all m are every case
// there. The host test and the device test each run it for every m.
template <int kSignificand, class F>
GG_HD void for_each_narrow_quotient(uint32_t m, F&& f) {
  const float scale = gg::fmt::bits_float(127u << 23 | m);
  const gg::quantize::ScaleDivider divider(scale);
  for (uint32_t x_bits = 0; x_bits < (1u << (kSignificand - 1)); ++x_bits) {
    const float x = gg::fmt::bits_float(127u << 23 | x_bits << (24 - kSignificand));
    f(x, scale, divider.divide<true>(x));
  }
}

template <gg_dtype kFp8>
GG_HD uint32_t fast_mx(float x, float multiplier) {
  namespace q = gg::quantize;
  return (finite(x) && multiplier != 0.0f ? q::mx_fp8x2_finite<kFp8>(x, x, multiplier)
                                          : q::mx_fp8x2<kFp8>(x, multiplier, x, multiplier)) &
         0xFFu;
}

GG_HD uint32_t fast_mx4(float x, float multiplier) {
  namespace q = gg::quantize;
  return finite(x) && multiplier != 0.0f ? q::mx_e2m1_code_finite(x, multiplier)
                                         : q::mx_e2m1_code(x, multiplier);
}

GG_HD uint32_t fast_nv(float x, float step) {
  namespace q = gg::quantize;
  const q::ScaleDivider divider(step);
  return divider.covers(fabsf(x)) ? q::nvfp4_code_finite(x, divider) : q::nvfp4_code(x, step);
}

// Two nvfp4 codes (x0's in bits 0-3) as the tile writers take them: a pair
// of finite bf16 elements under steps in the divider's fast range by their
// thresholds, other elements one by one.
GG_HD uint32_t fast_nv_pair(float x0, float step0, float x1, float step1) {
  namespace q = gg::quantize;
  const uint32_t b0 = gg::fmt::float_bits(x0), b1 = gg::fmt::float_bits(x1);
  const bool bf16 = ((b0 | b1) & 0xFFFFu) == 0;
  if (bf16 && finite(x0) && finite(x1) && q::ScaleDivider(step0).fast &&
      q::ScaleDivider(step1).fast) {
    const uint32_t codes = e2m1_pair_codes_of<GG_DTYPE_BF16>(b0 >> 16, b1 >> 16, step0, step1);
    return (codes & 0xFu) | ((codes >> 16) & 0xFu) << 4;
  }
  return fast_nv(x0, step0) | fast_nv(x1, step1) << 4;
}

// Four result words for the pair (x0 under slot j0, x1 under slot j1):
// fp8 e4m3 and e5m2 current/block scaling, mxfp8 e4m3 and e5m2, nvfp4 (with
// e2m1 unscaled and mxfp4), and fp8 again with one correction for bf16
// values (fast_fp8_of_bf16).
// `fast` picks the element_encoders.h path, else the fmt:: rules.
constexpr int kEncoderResults = 4;
GG_HD void encode_pair(const EncoderScales& s, float x0, int j0, float x1, int j1, bool fast,
                       uint32_t* out) {
  namespace f = gg::fmt;
  namespace q = gg::quantize;
  if (fast) {
    out[0] = fast_fp8<GG_DTYPE_E4M3>(x0, s.e4m3[j0]) | fast_fp8<GG_DTYPE_E4M3>(x1, s.e4m3[j1]) << 8 |
             fast_fp8<GG_DTYPE_E5M2>(x0, s.e5m2[j0]) << 16 |
             fast_fp8<GG_DTYPE_E5M2>(x1, s.e5m2[j1]) << 24;
    const float m0 = q::mx_multiplier(s.mx[j0]);
    const float m1 = q::mx_multiplier(s.mx[j1]);
    out[1] = fast_mx<GG_DTYPE_E4M3>(x0, m0) | fast_mx<GG_DTYPE_E4M3>(x1, m1) << 8 |
             fast_mx<GG_DTYPE_E5M2>(x0, m0) << 16 | fast_mx<GG_DTYPE_E5M2>(x1, m1) << 24;
    out[2] = fast_nv_pair(x0, s.nvfp4_step[j0], x1, s.nvfp4_step[j1]) |
             q::e2m1_code(x0) << 8 | q::e2m1_code(x1) << 12 | fast_mx4(x0, m0) << 16 |
             fast_mx4(x1, m1) << 20;
    out[3] = fast_fp8_of_bf16<GG_DTYPE_E4M3>(x0, s.e4m3[j0]) |
             fast_fp8_of_bf16<GG_DTYPE_E4M3>(x1, s.e4m3[j1]) << 8 |
             fast_fp8_of_bf16<GG_DTYPE_E5M2>(x0, s.e5m2[j0]) << 16 |
             fast_fp8_of_bf16<GG_DTYPE_E5M2>(x1, s.e5m2[j1]) << 24;
    return;
  }
  out[0] = ref_fp8(x0, s.e4m3[j0], GG_DTYPE_E4M3) | ref_fp8(x1, s.e4m3[j1], GG_DTYPE_E4M3) << 8 |
           ref_fp8(x0, s.e5m2[j0], GG_DTYPE_E5M2) << 16 | ref_fp8(x1, s.e5m2[j1], GG_DTYPE_E5M2) << 24;
  out[1] = ref_mx(x0, s.mx[j0], GG_DTYPE_E4M3) | ref_mx(x1, s.mx[j1], GG_DTYPE_E4M3) << 8 |
           ref_mx(x0, s.mx[j0], GG_DTYPE_E5M2) << 16 | ref_mx(x1, s.mx[j1], GG_DTYPE_E5M2) << 24;
  out[2] = ref_nv(x0, s.nvfp4_step[j0]) | ref_nv(x1, s.nvfp4_step[j1]) << 4 |
           static_cast<uint32_t>(f::float_to_e2m1(x0)) << 8 |
           static_cast<uint32_t>(f::float_to_e2m1(x1)) << 12 |
           ref_mx(x0, s.mx[j0], GG_DTYPE_E2M1) << 16 | ref_mx(x1, s.mx[j1], GG_DTYPE_E2M1) << 20;
  out[3] = out[0];
}

// The pairs to check: every input under every scale slot (its partner the
// input 7i+3 places on, under the next slot), then for every fp8 scale the
// e4m3 and e5m2 rounding midpoints times that scale and their neighbours.
struct EncoderCase {
  float x0;
  float x1;
  int j0;
  int j1;
};

inline std::vector<EncoderCase> encoder_cases() {
  const std::vector<float> inputs = encoder_inputs();
  const EncoderScales scales = encoder_scales();
  std::vector<EncoderCase> cases;
  const size_t n = inputs.size();
  for (size_t i = 0; i < n; ++i) {
    for (int j = 0; j < kEncoderScales; ++j) {
      cases.push_back({inputs[i], inputs[(i * 7 + 3) % n], j, (j + 1) % kEncoderScales});
    }
  }
  for (int j = 0; j < kEncoderScales; ++j) {
    for (gg_dtype d : {GG_DTYPE_E4M3, GG_DTYPE_E5M2}) {
      const float scale = d == GG_DTYPE_E4M3 ? scales.e4m3[j] : scales.e5m2[j];
      const uint32_t max_code = d == GG_DTYPE_E4M3 ? 0x7Eu : 0x7Bu;
      for (uint32_t c = 0; c < max_code; ++c) {
        const float mid = 0.5f * (narrow_value(d, c) + narrow_value(d, c + 1));
        const float x = mid * scale;
        for (float y : {x, nextafterf(x, 0.0f), nextafterf(x, INFINITY)}) {
          cases.push_back({y, -y, j, j});
        }
      }
    }
  }
  return cases;
}

}  // namespace gg_test

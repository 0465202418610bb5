// Quantization rules: how a scale is chosen from an absolute maximum and how
// an element is rounded under it. One function per decision; the CPU
// reference quantizer and the GPU quantize kernels both call these, so the
// bits they produce are the same. Every fp32 operation below is a single
// correctly rounded IEEE division or multiplication that no compiler may
// contract (kernels must not be built with --use_fast_math, -prec-div=false
// or -ftz=true, which would change them).
//
// amax      amax_accumulate(a, x) = max(a, |x|), comparing fp32 bit patterns
//           of non-negative floats as unsigned integers: a NaN wins over
//           every number, and the same integer order lets a GPU merge
//           partial maxima with atomicMax on uint32.
// fp8       (per tensor, per group, per row, 1x128 and 128x128 blocks)
//           scale = amax / fp8_max (fp32 division), the decode-side
//           multiplier; 1.0f instead when that quotient is not a positive
//           finite float (amax 0, amax so small the quotient underflows to 0,
//           inf, NaN): a zero block stays exactly zero under scale 1.
//           element = fp8(x / scale), round to nearest even, saturating.
//           A row's scale (GG_BLOCK_ROWWISE) is this quotient itself, not
//           rounded to a power of two, as torchao's rowwise recipe keeps it.
// mxfp8     (OCP MX v1.0, section 6.3) X = floor(log2(block_amax)) - emax_elem
//           (emax 8 for e4m3, 15 for e5m2, 2 for e2m1), clamped to e8m0's
//           [-127, 127]; amax 0 or subnormal gives the smallest scale 2^-127;
//           an inf or NaN amax gives the NaN scale 0xFF, and every element
//           under it is the element format's NaN (as in the spec's reference
//           code). element = elem(x / 2^X), one rounding to nearest even,
//           saturating: the division is exponent arithmetic, exact even for
//           subnormal x. The amax element may exceed the element max after
//           this floor rule (e.g. 480 under X = 0 for e4m3) and saturates,
//           as the spec says; TransformerEngine rounds X up instead.
//           mxfp4 is the same rule with e2m1 elements (emax 2, so X =
//           floor(log2(amax)) - 2); e2m1 has no NaN, so under the NaN scale
//           an element codes as e2m1's NaN conversion (+6) and decodes, times
//           the scale, to NaN all the same.
// nvfp4     tensor_scale = tensor_amax / (6 * 448) (fp32 division by 2688),
//           1.0f when not a positive finite float, like fp8.
//           block_scale = ue4m3((block_amax / 6) / tensor_scale), two fp32
//           divisions in that order; saturates at 448.
//           element = e2m1(x / (ue4m3_value(block_scale) * tensor_scale)):
//           an fp32 product, then an fp32 division; 0 when that product is 0
//           (a zero block, or an underflowing product).
//           Decoded value = e2m1 * ue4m3 * tensor_scale.
//           TransformerEngine (core_nvfp4.cuh) keeps the reciprocal instead:
//           S_enc = 2688 / amax, block = e4m3(block_amax * (S_enc * (1/6))),
//           element = e2m1(x * (1 / (block * (1 / S_enc)))). Same recipe,
//           but each reciprocal and product rounds once more, so a value
//           within an ulp of a rounding boundary can land on the other side.
//           Plain divisions make this rule exactly specifiable and equal on
//           host and device; it matches TE in amax 0 -> scale 1.
#pragma once

#include <float.h>
#include <stdint.h>

#include "common/hd.h"
#include "formats/codecs.h"
#include "formats/minifloat.h"
#include "groupgemm/groupgemm.h"

namespace gg::fmt {

// Elements per block along the blocking dimension: 0 without block scaling,
// and for GG_BLOCK_ROWWISE, whose one block spans the whole dimension
// whatever its length.
GG_HD int block_size(gg_block_scaling scaling) {
  switch (scaling) {
    case GG_BLOCK_NONE:
    case GG_BLOCK_ROWWISE:
      return 0;
    case GG_BLOCK_MX32:
      return 32;
    case GG_BLOCK_NV16:
      return 16;
    case GG_BLOCK_1X128:
      return 128;
    case GG_BLOCK_128X128:
      return 128;
  }
  return 0;
}

GG_HD float amax_accumulate(float amax, float x) {
  const uint32_t a = float_bits(amax) & ~kF32SignBit;
  const uint32_t b = float_bits(x) & ~kF32SignBit;
  return bits_float(a > b ? a : b);
}

// `scale` unless it is not a positive finite float (NaN fails both tests).
GG_HD float usable_scale_or_one(float scale) {
  return (scale > 0.0f && scale <= FLT_MAX) ? scale : 1.0f;
}

// ---- fp8 current scaling ----
GG_HD float fp8_scale_from_amax(float amax, gg_dtype fp8) {
  return usable_scale_or_one(amax / dtype_max(fp8));
}

GG_HD uint8_t fp8_quantize_element(float x, float scale, gg_dtype fp8) {
  // A NaN input keeps its sign: GPU arithmetic returns the canonical NaN
  // (sign dropped) from x / scale, so a NaN skips the division.
  const float scaled = x != x ? x : x / scale;
  return static_cast<uint8_t>(encode_minifloat(scaled, 0, minifloat_format(fp8), true));
}

// ---- mxfp8 (and mxfp4 elements) ----
// floor(log2(max finite value)) of an MX element format.
GG_HD int mx_element_emax(gg_dtype element) {
  const MiniFloat f = minifloat_format(element);
  return static_cast<int>(f.max_code >> f.mantissa_bits) - f.exponent_bias;
}

// With amax = 2^(E-127) * 1.f, floor(log2(amax)) - emax + 127 is E - emax:
// the scale code comes straight from amax's exponent field.
GG_HD uint8_t mx_block_scale(float block_amax, gg_dtype element) {
  const int biased = static_cast<int>((float_bits(block_amax) & ~kF32SignBit) >> kF32MantissaBits);
  if (biased == 0xFF) return kE8m0Nan;
  const int code = biased - mx_element_emax(element);
  return static_cast<uint8_t>(code < 0 ? 0 : code);
}

GG_HD float mx_scale_value(uint8_t scale) { return e8m0_to_float(scale); }

GG_HD uint8_t mx_quantize_element(float x, uint8_t scale, gg_dtype element) {
  // Under the NaN scale every element is the element format's NaN.
  const float value = scale == kE8m0Nan ? bits_float(kF32QuietNan) : x;
  return static_cast<uint8_t>(
      encode_minifloat(value, kF32Bias - scale, minifloat_format(element), true));
}

// ---- nvfp4 ----
constexpr float kNvfp4TensorRange = 6.0f * 448.0f;  // e2m1 max * e4m3 max
constexpr float kE2m1Max = 6.0f;

GG_HD float nvfp4_tensor_scale(float tensor_amax) {
  return usable_scale_or_one(tensor_amax / kNvfp4TensorRange);
}

// (block_amax / 6) / tensor_scale, the value the block scale rounds.
GG_HD float nvfp4_block_scale_quotient(float block_amax, float tensor_scale) {
  const float per_element = block_amax / kE2m1Max;
  return per_element / tensor_scale;
}

GG_HD uint8_t nvfp4_block_scale(float block_amax, float tensor_scale) {
  return float_to_ue4m3(nvfp4_block_scale_quotient(block_amax, tensor_scale));
}

GG_HD uint8_t nvfp4_quantize_element(float x, uint8_t block_scale, float tensor_scale) {
  const float step = ue4m3_to_float(block_scale) * tensor_scale;
  if (step == 0.0f) return 0;
  return float_to_e2m1(x / step);
}

}  // namespace gg::fmt

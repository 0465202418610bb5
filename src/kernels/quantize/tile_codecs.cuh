// The per-format codecs of the grouped-quantize tile writers
// (quantize_kernel.cuh): for each output format, which elements share a
// scale, how a block's amax becomes its stored scale and the per-element
// parameter, and how two elements are coded under a parameter. The tile
// writers are templates on these, so their inner loops are straight code
// with no switch on the format. Every decision is the formats/block_quant.h
// function the CPU reference calls; every element is coded by an
// element_encoders.h encoder, bit-identical to the reference's.
//
//   codec            kBlock       stored scale         parameter
//   (kScaleBytes: the bytes of a stored block scale)
//   Fp8Whole<D>      kWholeTile   — (the fp32 scale)   fp32 scale of group/tensor,
//                                                      or of the row (row scales)
//   Fp8Block<D,128>  128          fp32 per 1x128       that scale
//   Fp8Block<D,sq>   kSquareTile  fp32 per 128x128     that scale (tile amax)
//   Mxfp8<D>         32           e8m0 byte            2^(127 - e8m0), 0 for NaN
//   Mxfp4            32           e8m0 byte            2^(127 - e8m0), 0 for NaN
//   Nvfp4            16           ue4m3 byte           ue4m3 value * fp32 scale
//
// A parameter is turned into a Coder once per block (the reciprocal of a
// scale, say); short_path(coder, amax) says whether every element of a run
// whose amax that is may take the short encoders, encode2_short<kIn>(coder,
// x0, x1) for elements of input type kIn, and encode2(coder, x0, x1) codes
// two elements by the exact ones.
// The writers branch once per run, not per element.
#pragma once

#include <float.h>
#include <stdint.h>

#include "formats/block_quant.h"
#include "formats/codecs.h"
#include "kernels/quantize/element_encoders.h"
#include "kernels/quantize/quantize_params.h"

namespace gg::quantize {

// kBlock values that are not a block length.
constexpr int kWholeTile = 0;    // one parameter for the whole tile, no block scales
constexpr int kSquareTile = -1;  // one 128x128 block per tile, from the tile's amax

struct BlockDecision {
  uint32_t stored;  // the scale entry: a byte, or fp32 bits
  float param;      // what the element encoder takes
};

// Codes of the fp8 formats scaled by division (current and block scaling).
template <gg_dtype kFp8>
struct DividedFp8 {
  static constexpr int kBits = 8;
  using Coder = ScaleDivider;
  __device__ static Coder coder(float scale) { return ScaleDivider(scale); }
  __device__ static bool short_path(const Coder& c, float amax) { return c.covers(amax); }
  template <gg_dtype kIn>
  __device__ static uint32_t encode2_short(const Coder& c, float x0, float x1) {
    return fp8x2_divided_finite<kFp8, kHalfInput<kIn>>(x0, x1, c);
  }
  __device__ static uint32_t encode2(const Coder& c, float x0, float x1) {
    return fp8x2_divided<kFp8>(x0, c.scale, x1, c.scale);
  }
};

template <gg_dtype kFp8>
struct Fp8Whole : DividedFp8<kFp8> {
  static constexpr int kBlock = kWholeTile;
  float outer;
  __device__ float whole_param() const { return outer; }
};

template <gg_dtype kFp8, int kBlockLength>
struct Fp8Block : DividedFp8<kFp8> {
  static constexpr int kBlock = kBlockLength;
  static constexpr int kScaleBytes = 4;
  __device__ BlockDecision decide(float amax) const {
    const float scale = fmt::fp8_scale_from_amax(amax, kFp8);
    return {fmt::float_bits(scale), scale};
  }
  __device__ static void store(const OutputParams& out, int64_t index, uint32_t stored) {
    reinterpret_cast<uint32_t*>(out.block_scales)[index] = stored;
  }
};

// The MX block decision, shared by every element type: an e8m0 scale per 32
// elements from the block amax's exponent (the element's emax apart), and
// its power-of-two multiplier.
template <gg_dtype kElement>
struct MxBlocks {
  static constexpr int kBlock = 32;
  static constexpr int kScaleBytes = 1;
  using Coder = float;  // the multiplier
  __device__ BlockDecision decide(float amax) const {
    const uint8_t scale = fmt::mx_block_scale(amax, kElement);
    return {scale, mx_multiplier(scale)};
  }
  __device__ static void store(const OutputParams& out, int64_t index, uint32_t stored) {
    out.block_scales[index] = static_cast<uint8_t>(stored);
  }
  __device__ static Coder coder(float multiplier) { return multiplier; }
  // A finite amax has a scale other than the NaN one (m != 0).
  __device__ static bool short_path(float, float amax) { return amax <= FLT_MAX; }
};

template <gg_dtype kFp8>
struct Mxfp8 : MxBlocks<kFp8> {
  static constexpr int kBits = 8;
  template <gg_dtype kIn>
  __device__ static uint32_t encode2_short(float m, float x0, float x1) {
    return mx_fp8x2_finite<kFp8>(x0, x1, m);
  }
  __device__ static uint32_t encode2(float m, float x0, float x1) {
    return mx_fp8x2<kFp8>(x0, m, x1, m);
  }
};

struct Mxfp4 : MxBlocks<GG_DTYPE_E2M1> {
  static constexpr int kBits = 4;
  template <gg_dtype kIn>
  __device__ static uint32_t encode2_short(float m, float x0, float x1) {
    return mx_e2m1_code_finite(x0, m) | mx_e2m1_code_finite(x1, m) << 4;
  }
  __device__ static uint32_t encode2(float m, float x0, float x1) {
    return mx_e2m1_code(x0, m) | mx_e2m1_code(x1, m) << 4;
  }
};

struct Nvfp4 {
  static constexpr int kBlock = 16;
  static constexpr int kScaleBytes = 1;
  static constexpr int kBits = 4;
  using Coder = ScaleDivider;
  float outer;  // the tensor or group scale
  __device__ BlockDecision decide(float amax) const {
    const uint32_t scale = ue4m3_code(fmt::nvfp4_block_scale_quotient(amax, outer));
    return {scale, ue4m3_value(scale) * outer};
  }
  __device__ static void store(const OutputParams& out, int64_t index, uint32_t stored) {
    out.block_scales[index] = static_cast<uint8_t>(stored);
  }
  __device__ static Coder coder(float step) { return ScaleDivider(step); }
  // A zero step is outside the divider's fast range.
  __device__ static bool short_path(const Coder& c, float amax) { return c.covers(amax); }
  // 16-bit elements take thresholds instead (kPairThresholds).
  template <gg_dtype kIn>
  __device__ static uint32_t encode2_short(const Coder& c, float x0, float x1) {
    return nvfp4_code_finite(x0, c) + (nvfp4_code_finite(x1, c) << 4);
  }
  __device__ static uint32_t encode2(const Coder& c, float x0, float x1) {
    return nvfp4_code(x0, c.scale) | nvfp4_code(x1, c.scale) << 4;
  }
};

// Calls f(codec) with the codec of `out` (fp8 e4m3 / e5m2 with a tensor or
// group scale, 1x128, 128x128 or row scales; mxfp8 e4m3 / e5m2; mxfp4;
// nvfp4). `outer` is the output's fp32 group or tensor scale.
template <class F>
__device__ void with_codec(const OutputParams& out, float outer, F&& f) {
  const bool e4m3 = out.dtype == GG_DTYPE_E4M3;
  switch (out.scaling) {
    case GG_BLOCK_NONE:
      if (e4m3) f(Fp8Whole<GG_DTYPE_E4M3>{{}, outer}); else f(Fp8Whole<GG_DTYPE_E5M2>{{}, outer});
      return;
    case GG_BLOCK_1X128:
      if (e4m3) f(Fp8Block<GG_DTYPE_E4M3, 128>{}); else f(Fp8Block<GG_DTYPE_E5M2, 128>{});
      return;
    case GG_BLOCK_128X128:
      if (e4m3) {
        f(Fp8Block<GG_DTYPE_E4M3, kSquareTile>{});
      } else {
        f(Fp8Block<GG_DTYPE_E5M2, kSquareTile>{});
      }
      return;
    case GG_BLOCK_MX32:
      if (out.dtype == GG_DTYPE_E2M1) {
        f(Mxfp4{});
      } else if (e4m3) {
        f(Mxfp8<GG_DTYPE_E4M3>{});
      } else {
        f(Mxfp8<GG_DTYPE_E5M2>{});
      }
      return;
    case GG_BLOCK_NV16:
      f(Nvfp4{outer});
      return;
    case GG_BLOCK_ROWWISE:  // each row's own scale (the writers' kRowParams, kColumnParams)
      if (e4m3) f(Fp8Whole<GG_DTYPE_E4M3>{{}, outer}); else f(Fp8Whole<GG_DTYPE_E5M2>{{}, outer});
      return;
  }
}

}  // namespace gg::quantize

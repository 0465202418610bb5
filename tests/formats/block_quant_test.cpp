// The quantization rules of block_quant.h against a long double model of the
// formulas written at the top of that file. fp32 results are modelled as
// the exact long double quotient or product rounded once to float (64
// significand bits are more than twice fp32's 24 plus 2, so that double
// rounding equals the single IEEE rounding); element codes come from the
// table search of format_model.h.
#include "formats/block_quant.h"

#include <float.h>
#include <gtest/gtest.h>
#include <math.h>

#include <random>
#include <vector>

#include "formats/format_model.h"
#include "formats/fp32_bits.h"

namespace gg_test {
namespace {

float fp32_quotient(float a, float b) {
  return static_cast<float>(static_cast<long double>(a) / static_cast<long double>(b));
}

float fp32_product(float a, float b) {
  return static_cast<float>(static_cast<long double>(a) * static_cast<long double>(b));
}

float scale_or_one(float q) { return q > 0.0f && isfinite(q) ? q : 1.0f; }

// Random values with a binary exponent in [lowest, highest] (capped at fp32's
// largest), both signs; exponents below fp32's range give subnormals or 0.
float random_value(std::mt19937& random, int lowest_exponent, int highest_exponent) {
  const int highest = highest_exponent < 127 ? highest_exponent : 127;
  std::uniform_int_distribution<int> exponent(lowest_exponent < highest ? lowest_exponent : highest,
                                              highest);
  const float fraction = static_cast<float>(random() & 0x7FFFFFu) * 0x1p-23f;
  const float x = ldexpf(1.0f + fraction, exponent(random));
  return (random() & 1u) ? -x : x;
}

TEST(BlockQuant, BlockSizes) {
  EXPECT_EQ(gg::fmt::block_size(GG_BLOCK_NONE), 0);
  EXPECT_EQ(gg::fmt::block_size(GG_BLOCK_MX32), 32);
  EXPECT_EQ(gg::fmt::block_size(GG_BLOCK_NV16), 16);
  EXPECT_EQ(gg::fmt::block_size(GG_BLOCK_1X128), 128);
  EXPECT_EQ(gg::fmt::block_size(GG_BLOCK_128X128), 128);
  EXPECT_EQ(gg::fmt::block_size(GG_BLOCK_ROWWISE), 0);  // the whole dimension
}

TEST(BlockQuant, AmaxIsTheLargestMagnitudeAndNanWins) {
  using gg::fmt::amax_accumulate;
  EXPECT_EQ(amax_accumulate(0.0f, -3.0f), 3.0f);
  EXPECT_EQ(amax_accumulate(3.0f, 2.0f), 3.0f);
  EXPECT_EQ(amax_accumulate(3.0f, -INFINITY), INFINITY);
  EXPECT_EQ(bits_of(amax_accumulate(0.0f, -0.0f)), 0u);
  EXPECT_EQ(amax_accumulate(0.0f, float_of(0x80000001u)), float_of(0x00000001u));
  EXPECT_TRUE(isnan(amax_accumulate(NAN, 5.0f)));
  EXPECT_TRUE(isnan(amax_accumulate(5.0f, -NAN)));
  EXPECT_TRUE(isnan(amax_accumulate(INFINITY, NAN)));
  // Any order of the same values gives the same bits.
  std::mt19937 random(21);
  std::vector<float> values(200);
  for (float& v : values) v = random_value(random, -140, 120);
  float forward = 0.0f;
  float backward = 0.0f;
  long double expected = 0.0L;
  for (size_t i = 0; i < values.size(); ++i) {
    forward = amax_accumulate(forward, values[i]);
    backward = amax_accumulate(backward, values[values.size() - 1 - i]);
    expected = fmaxl(expected, fabsl(values[i]));
  }
  EXPECT_EQ(bits_of(forward), bits_of(backward));
  EXPECT_EQ(static_cast<long double>(forward), expected);
}

// ---- fp8 current scaling ----

TEST(BlockQuant, Fp8ScaleIsAmaxOverMax) {
  std::mt19937 random(1);
  std::vector<float> amaxes = {448.0f,    1.0f, 3.7f,  1e-30f,   FLT_MAX, 0x1p-149f,    0x1p-140f,
                               0x1p-126f, 0.0f, -0.0f, INFINITY, NAN,     57344.0f * 3, 1e38f};
  for (int i = 0; i < 10000; ++i) amaxes.push_back(fabsf(random_value(random, -149, 127)));
  for (gg_dtype fp8 : {GG_DTYPE_E4M3, GG_DTYPE_E5M2}) {
    const float max = fp8 == GG_DTYPE_E4M3 ? 448.0f : 57344.0f;
    for (float amax : amaxes) {
      const float expected = scale_or_one(fp32_quotient(amax, max));
      EXPECT_EQ(bits_of(gg::fmt::fp8_scale_from_amax(amax, fp8)), bits_of(expected)) << amax;
    }
  }
  EXPECT_EQ(gg::fmt::fp8_scale_from_amax(0.0f, GG_DTYPE_E4M3), 1.0f);
  EXPECT_EQ(gg::fmt::fp8_scale_from_amax(0x1p-149f, GG_DTYPE_E4M3), 1.0f);  // quotient underflows
  EXPECT_EQ(gg::fmt::fp8_scale_from_amax(INFINITY, GG_DTYPE_E5M2), 1.0f);
  EXPECT_EQ(gg::fmt::fp8_scale_from_amax(NAN, GG_DTYPE_E5M2), 1.0f);
  EXPECT_EQ(gg::fmt::fp8_scale_from_amax(896.0f, GG_DTYPE_E4M3), 2.0f);
}

// Whole blocks: the scale from the block's amax, each element x / scale
// rounded and saturated; the amax element lands on the format's max.
TEST(BlockQuant, Fp8BlocksMatchTheModel) {
  std::mt19937 random(2);
  for (gg_dtype fp8 : {GG_DTYPE_E4M3, GG_DTYPE_E5M2}) {
    const FormatModel& format = fp8 == GG_DTYPE_E4M3 ? kE4m3 : kE5m2;
    const Rounder rounder(format);
    for (int block = 0; block < 2000; ++block) {
      const int center = static_cast<int>(random() % 250) - 125;
      std::vector<float> values(128);
      float amax = 0.0f;
      for (float& v : values) {
        v = random_value(random, center - 12, center);
        amax = gg::fmt::amax_accumulate(amax, v);
      }
      const float scale = gg::fmt::fp8_scale_from_amax(amax, fp8);
      for (float v : values) {
        const uint32_t expected = rounder.round(fp32_quotient(v, scale), true);
        ASSERT_EQ(gg::fmt::fp8_quantize_element(v, scale, fp8), expected)
            << format.name << " x=" << v << " scale=" << scale;
        // With a normal scale, amax / scale is max within an fp32 rounding.
        if (fabsf(v) == amax && scale >= FLT_MIN) {
          EXPECT_EQ(expected & (format.sign_bit() - 1), format.max_code());
        }
      }
    }
  }
}

TEST(BlockQuant, Fp8ElementsSaturate) {
  EXPECT_EQ(gg::fmt::fp8_quantize_element(1000.0f, 1.0f, GG_DTYPE_E4M3), 0x7E);
  EXPECT_EQ(gg::fmt::fp8_quantize_element(-1e6f, 1.0f, GG_DTYPE_E5M2), 0xFB);
  EXPECT_EQ(gg::fmt::fp8_quantize_element(INFINITY, 2.0f, GG_DTYPE_E4M3), 0x7E);
  EXPECT_EQ(gg::fmt::fp8_quantize_element(NAN, 2.0f, GG_DTYPE_E4M3), 0x7F);
}

// ---- mxfp8 ----

// floor(log2(a)) for finite a > 0, from frexpl: a = f * 2^e with f in [0.5, 1).
int floor_log2(long double a) {
  int e = 0;
  frexpl(a, &e);
  return e - 1;
}

uint32_t expected_mx_scale(float amax, int emax) {
  if (isnan(amax) || isinf(amax)) return 0xFF;
  if (amax == 0.0f) return 0;
  int x = floor_log2(fabsl(amax)) - emax;
  x = x < -127 ? -127 : (x > 127 ? 127 : x);
  return static_cast<uint32_t>(x + 127);
}

TEST(BlockQuant, MxScaleAtAndAroundPowersOfTwo) {
  for (auto [element, emax] :
       {std::pair{GG_DTYPE_E4M3, 8}, std::pair{GG_DTYPE_E5M2, 15}, std::pair{GG_DTYPE_E2M1, 2}}) {
    for (int k = -149; k <= 127; ++k) {
      const float power = ldexpf(1.0f, k);
      for (float amax :
           {power, nextafterf(power, 0.0f), nextafterf(power, INFINITY), power * 1.5f}) {
        if (amax == 0.0f || isinf(amax)) continue;
        EXPECT_EQ(gg::fmt::mx_block_scale(amax, element), expected_mx_scale(amax, emax))
            << "amax " << amax << " emax " << emax;
      }
    }
    EXPECT_EQ(gg::fmt::mx_block_scale(0.0f, element), 0);  // the smallest scale, 2^-127
    EXPECT_EQ(gg::fmt::mx_block_scale(float_of(1u), element), 0);
    EXPECT_EQ(gg::fmt::mx_block_scale(FLT_MAX, element), expected_mx_scale(FLT_MAX, emax));
    EXPECT_EQ(gg::fmt::mx_block_scale(INFINITY, element), 0xFF);
    EXPECT_EQ(gg::fmt::mx_block_scale(NAN, element), 0xFF);
  }
  EXPECT_EQ(gg::fmt::mx_block_scale(448.0f, GG_DTYPE_E4M3), 127);  // X = 0
  EXPECT_EQ(gg::fmt::mx_block_scale(511.0f, GG_DTYPE_E4M3), 127);
  EXPECT_EQ(gg::fmt::mx_block_scale(512.0f, GG_DTYPE_E4M3), 128);
  EXPECT_EQ(gg::fmt::mx_block_scale(1.0f, GG_DTYPE_E5M2), 112);  // X = -15
}

TEST(BlockQuant, MxScaleValueIsE8m0) {
  EXPECT_EQ(gg::fmt::mx_scale_value(127), 1.0f);
  EXPECT_EQ(gg::fmt::mx_scale_value(130), 8.0f);
  EXPECT_EQ(bits_of(gg::fmt::mx_scale_value(0)), 0x00400000u);
  EXPECT_EQ(gg::fmt::mx_scale_value(254), 0x1p127f);
  EXPECT_TRUE(isnan(gg::fmt::mx_scale_value(0xFF)));
}

// Element codes are the exact x * 2^-X rounded once: no fp32 rounding in
// between, whatever the scale and however small x.
TEST(BlockQuant, MxElementsAreOneRoundingOfTheExactQuotient) {
  std::mt19937 random(4);
  for (gg_dtype element : {GG_DTYPE_E4M3, GG_DTYPE_E5M2, GG_DTYPE_E2M1}) {
    const FormatModel& format =
        element == GG_DTYPE_E4M3 ? kE4m3 : (element == GG_DTYPE_E5M2 ? kE5m2 : kE2m1);
    const Rounder rounder(format);
    for (uint32_t scale = 0; scale < 255; ++scale) {
      for (int i = 0; i < 400; ++i) {
        const float x = i < 8
                            ? float_of(static_cast<uint32_t>(random()) & 0x807FFFFFu)  // subnormal
                            : random_value(random, static_cast<int>(scale) - 160,
                                           static_cast<int>(scale) - 110);
        const long double exact = ldexpl(x, 127 - static_cast<int>(scale));
        ASSERT_EQ(gg::fmt::mx_quantize_element(x, static_cast<uint8_t>(scale), element),
                  rounder.round(exact, true))
            << format.name << " x=" << x << " scale=" << scale;
      }
    }
  }
}

TEST(BlockQuant, MxBlocksMatchTheModel) {
  std::mt19937 random(6);
  for (gg_dtype element : {GG_DTYPE_E4M3, GG_DTYPE_E5M2, GG_DTYPE_E2M1}) {
    const FormatModel& format =
        element == GG_DTYPE_E4M3 ? kE4m3 : (element == GG_DTYPE_E5M2 ? kE5m2 : kE2m1);
    const int emax = element == GG_DTYPE_E4M3 ? 8 : (element == GG_DTYPE_E5M2 ? 15 : 2);
    const Rounder rounder(format);
    for (int block = 0; block < 4000; ++block) {
      const int center = static_cast<int>(random() % 290) - 150;
      float values[32];
      float amax = 0.0f;
      for (float& v : values) {
        v = random_value(random, center - 20, center);
        amax = gg::fmt::amax_accumulate(amax, v);
      }
      const uint8_t scale = gg::fmt::mx_block_scale(amax, element);
      ASSERT_EQ(scale, expected_mx_scale(amax, emax));
      for (float v : values) {
        const long double exact = ldexpl(v, 127 - scale);
        ASSERT_EQ(gg::fmt::mx_quantize_element(v, scale, element), rounder.round(exact, true))
            << format.name << " x=" << v << " scale=" << int{scale};
      }
    }
  }
}

TEST(BlockQuant, MxAmaxAboveTheElementMaxSaturates) {
  // floor(log2(480)) = 8 = emax: X = 0, and 480 > 448 saturates.
  const uint8_t scale = gg::fmt::mx_block_scale(480.0f, GG_DTYPE_E4M3);
  EXPECT_EQ(scale, 127);
  EXPECT_EQ(gg::fmt::mx_quantize_element(480.0f, scale, GG_DTYPE_E4M3), 0x7E);
  EXPECT_EQ(gg::fmt::mx_quantize_element(-500.0f, scale, GG_DTYPE_E4M3), 0xFE);
  // e5m2: 2^15 * 1.99 under X = 0 saturates to 57344.
  const uint8_t scale52 = gg::fmt::mx_block_scale(65000.0f, GG_DTYPE_E5M2);
  EXPECT_EQ(scale52, 127);
  EXPECT_EQ(gg::fmt::mx_quantize_element(65000.0f, scale52, GG_DTYPE_E5M2), 0x7B);
}

TEST(BlockQuant, MxNanScaleMakesNanElements) {
  EXPECT_EQ(gg::fmt::mx_quantize_element(1.0f, 0xFF, GG_DTYPE_E4M3), 0x7F);
  EXPECT_EQ(gg::fmt::mx_quantize_element(-1.0f, 0xFF, GG_DTYPE_E5M2), 0x7E);
  EXPECT_EQ(gg::fmt::mx_quantize_element(NAN, 127, GG_DTYPE_E4M3), 0x7F);
  EXPECT_EQ(gg::fmt::mx_quantize_element(INFINITY, 127, GG_DTYPE_E4M3), 0x7E);
}

// ---- mxfp4 ----

// Every e2m1 code under every e8m0 scale code. Decoded as the reference
// decodes it (element times scale in double) it is the model's value; where
// that value is an fp32 it quantizes back to its own code under its scale,
// the midpoint to the next code goes to the even code, and a value past
// the largest saturates. Under the NaN scale the block is NaN.
TEST(BlockQuant, Mxfp4EveryCodeUnderEveryScale) {
  const Rounder rounder(kE2m1);
  for (uint32_t scale = 0; scale < 256; ++scale) {
    const uint8_t scale_code = static_cast<uint8_t>(scale);
    const long double unit = e8m0_value(scale);
    for (uint32_t code = 0; code < 16; ++code) {
      const double decoded =
          static_cast<double>(gg::fmt::e2m1_to_float(static_cast<uint8_t>(code))) *
          static_cast<double>(gg::fmt::mx_scale_value(scale_code));
      const long double want = kMxfp4.value(code, scale);
      if (scale == 0xFFu) {
        ASSERT_TRUE(isnan(decoded) && isnan(want)) << "code " << code;
        // e2m1 has no NaN code: the element is e2m1's NaN conversion, +6.
        ASSERT_EQ(gg::fmt::mx_quantize_element(1.0f, scale_code, GG_DTYPE_E2M1), 0x7u);
        continue;
      }
      ASSERT_EQ(static_cast<long double>(decoded), want) << "code " << code << " scale " << scale;
      ASSERT_EQ(signbit(decoded), signbit(want)) << "code " << code << " scale " << scale;
      const long double sign = (code & 0x8u) ? -1.0L : 1.0L;
      const uint32_t magnitude = code & 0x7u;
      // The midpoint to the next code, or past 6 (which saturates).
      const long double next =
          magnitude < 7 ? (kE2m1.value(magnitude) + kE2m1.value(magnitude + 1)) / 2 : 7.0L;
      const long double probes[] = {want, sign * next * unit};
      for (long double probe : probes) {
        if (fabsl(probe) > FLT_MAX) continue;  // 4 and 6 times 2^127 are no fp32
        const float x = static_cast<float>(probe);
        ASSERT_EQ(static_cast<long double>(x), probe);  // exact: at most 3 bits
        ASSERT_EQ(gg::fmt::mx_quantize_element(x, scale_code, GG_DTYPE_E2M1),
                  rounder.round(probe / unit, true))
            << "x " << x << " scale " << scale;
      }
      if (fabsl(want) <= FLT_MAX) {
        ASSERT_EQ(gg::fmt::mx_quantize_element(static_cast<float>(want), scale_code, GG_DTYPE_E2M1),
                  code)
            << "code " << code << " scale " << scale;
      }
    }
  }
}

// The mxfp4 shared exponent is mxfp8's rule with e2m1's emax of 2: a block
// whose amax is 6 * 2^k gets X = k, and its amax element codes as 6.
TEST(BlockQuant, Mxfp4ScaleUsesTheE2m1Emax) {
  for (int k = -120; k <= 120; ++k) {
    const float amax = ldexpf(6.0f, k);
    const uint8_t scale = gg::fmt::mx_block_scale(amax, GG_DTYPE_E2M1);
    ASSERT_EQ(scale, 127 + k);
    ASSERT_EQ(gg::fmt::mx_quantize_element(amax, scale, GG_DTYPE_E2M1), 0x7u);
    ASSERT_EQ(gg::fmt::mx_quantize_element(-amax, scale, GG_DTYPE_E2M1), 0xFu);
  }
  // 7.9: floor(log2) is 2 = emax, so X = 0, and the element saturates at 6.
  const uint8_t scale = gg::fmt::mx_block_scale(7.9f, GG_DTYPE_E2M1);
  EXPECT_EQ(scale, 127);
  EXPECT_EQ(gg::fmt::mx_quantize_element(7.9f, scale, GG_DTYPE_E2M1), 0x7u);
}

// ---- nvfp4 ----

TEST(BlockQuant, Nvfp4TensorScale) {
  std::mt19937 random(8);
  std::vector<float> amaxes = {2688.0f,  1.0f, 6.0f,    0.0f,      -0.0f,
                               INFINITY, NAN,  FLT_MAX, 0x1p-149f, 0x1p-130f};
  for (int i = 0; i < 10000; ++i) amaxes.push_back(fabsf(random_value(random, -149, 127)));
  for (float amax : amaxes) {
    EXPECT_EQ(bits_of(gg::fmt::nvfp4_tensor_scale(amax)),
              bits_of(scale_or_one(fp32_quotient(amax, 2688.0f))))
        << amax;
  }
  EXPECT_EQ(gg::fmt::nvfp4_tensor_scale(2688.0f), 1.0f);
  EXPECT_EQ(gg::fmt::nvfp4_tensor_scale(0.0f), 1.0f);
  EXPECT_EQ(gg::fmt::nvfp4_tensor_scale(INFINITY), 1.0f);
  EXPECT_EQ(gg::fmt::nvfp4_tensor_scale(0x1p-149f), 1.0f);  // the quotient underflows to 0
}

uint32_t expected_nvfp4_block_scale(const Rounder& e4m3, float block_amax, float tensor_scale) {
  const float ratio = fp32_quotient(fp32_quotient(block_amax, 6.0f), tensor_scale);
  if (isnan(ratio)) return 0x7F;
  if (ratio <= 0.0f) return 0;
  return e4m3.round(ratio, true);
}

uint32_t expected_nvfp4_element(const Rounder& e2m1, float x, uint32_t block_scale,
                                float tensor_scale) {
  const float step = fp32_product(static_cast<float>(kE4m3.value(block_scale)), tensor_scale);
  if (step == 0.0f) return 0;
  const float q = fp32_quotient(x, step);
  if (isnan(q)) return 0x7;
  return e2m1.round(q, true);
}

TEST(BlockQuant, Nvfp4BlockScales) {
  const Rounder e4m3(kE4m3);
  std::mt19937 random(9);
  for (int i = 0; i < 200000; ++i) {
    const float tensor_scale = gg::fmt::nvfp4_tensor_scale(fabsf(random_value(random, -140, 127)));
    const float block_amax = fabsf(random_value(random, -149, 127));
    EXPECT_EQ(gg::fmt::nvfp4_block_scale(block_amax, tensor_scale),
              expected_nvfp4_block_scale(e4m3, block_amax, tensor_scale))
        << block_amax << " / " << tensor_scale;
  }
  EXPECT_EQ(gg::fmt::nvfp4_block_scale(0.0f, 1.0f), 0);
  EXPECT_EQ(gg::fmt::nvfp4_block_scale(2688.0f, 1.0f), 0x7E);  // 448
  EXPECT_EQ(gg::fmt::nvfp4_block_scale(1e30f, 1.0f), 0x7E);    // saturates
  EXPECT_EQ(gg::fmt::nvfp4_block_scale(6.0f, 1.0f), 0x38);     // 1.0
  EXPECT_EQ(gg::fmt::nvfp4_block_scale(NAN, 1.0f), 0x7F);
}

TEST(BlockQuant, Nvfp4Elements) {
  const Rounder e2m1(kE2m1);
  std::mt19937 random(10);
  for (int i = 0; i < 200000; ++i) {
    const float tensor_scale = gg::fmt::nvfp4_tensor_scale(fabsf(random_value(random, -140, 127)));
    const uint32_t block_scale = static_cast<uint32_t>(random() % 0x7F);
    const float x = random_value(random, -149, 127);
    ASSERT_EQ(gg::fmt::nvfp4_quantize_element(x, static_cast<uint8_t>(block_scale), tensor_scale),
              expected_nvfp4_element(e2m1, x, block_scale, tensor_scale))
        << x << " block " << block_scale << " tensor " << tensor_scale;
  }
  EXPECT_EQ(gg::fmt::nvfp4_quantize_element(5.0f, 0, 1.0f), 0);  // zero block scale
  EXPECT_EQ(gg::fmt::nvfp4_quantize_element(-3.0f, 0x38, 1.0f), 0xD);
  EXPECT_EQ(gg::fmt::nvfp4_quantize_element(100.0f, 0x38, 1.0f), 0x7);
  EXPECT_EQ(gg::fmt::nvfp4_quantize_element(NAN, 0x38, 1.0f), 0x7);
}

// A whole tensor: tensor scale from its amax, block scales from each block's
// amax, elements under both; every value against the model, and the decoded
// block maxima stay within the e4m3 step of the true ones.
TEST(BlockQuant, Nvfp4TensorsMatchTheModel) {
  const Rounder e4m3(kE4m3);
  const Rounder e2m1(kE2m1);
  std::mt19937 random(12);
  for (int tensor = 0; tensor < 300; ++tensor) {
    const int center = static_cast<int>(random() % 200) - 100;
    std::vector<float> values(16 * 64);
    float tensor_amax = 0.0f;
    for (size_t i = 0; i < values.size(); ++i) {
      const int block_center = center - static_cast<int>((i / 16) % 13);
      values[i] = (i / 16) % 17 == 5 ? 0.0f : random_value(random, block_center - 6, block_center);
      tensor_amax = gg::fmt::amax_accumulate(tensor_amax, values[i]);
    }
    const float tensor_scale = gg::fmt::nvfp4_tensor_scale(tensor_amax);
    for (size_t block = 0; block < values.size() / 16; ++block) {
      float block_amax = 0.0f;
      for (int i = 0; i < 16; ++i)
        block_amax = gg::fmt::amax_accumulate(block_amax, values[block * 16 + i]);
      const uint8_t scale = gg::fmt::nvfp4_block_scale(block_amax, tensor_scale);
      ASSERT_EQ(scale, expected_nvfp4_block_scale(e4m3, block_amax, tensor_scale));
      for (int i = 0; i < 16; ++i) {
        const float x = values[block * 16 + i];
        const uint8_t code = gg::fmt::nvfp4_quantize_element(x, scale, tensor_scale);
        ASSERT_EQ(code, expected_nvfp4_element(e2m1, x, scale, tensor_scale)) << x;
        if (block_amax == 0.0f) {
          EXPECT_EQ(code, 0);
        }
        if (fabsf(x) == block_amax && scale >= 0x08) {
          // A normal block scale is within 1/16 of block_amax / 6 (relative),
          // so the amax element lands on 6 and decodes within that of itself.
          const long double decoded = kE2m1.value(code) * kE4m3.value(scale) * tensor_scale;
          EXPECT_NEAR(static_cast<double>(fabsl(decoded) / block_amax), 1.0, 0.07) << x;
        }
      }
    }
  }
}

}  // namespace
}  // namespace gg_test

// Every code point of every format decodes to the value its spec's formula
// gives (format_model.h), bit for bit: -0 stays -0, NaN codes give NaNs of
// the code's sign, infinities give infinities.
#include <gtest/gtest.h>
#include <math.h>

#include "formats/codecs.h"
#include "formats/format_model.h"
#include "formats/fp32_bits.h"

namespace gg_test {
namespace {

using DecodeFn = float (*)(uint32_t);

// Checks decode(code) against the model for all 2^bits codes of `format`.
void expect_all_codes_decode(const FormatModel& format, DecodeFn decode) {
  const uint32_t count = format.sign_bit() << 1;
  for (uint32_t code = 0; code < count; ++code) {
    const float got = decode(code);
    const bool negative = (code & format.sign_bit()) != 0;
    if (format.is_nan(code)) {
      EXPECT_TRUE(isnan(got)) << format.name << " code " << code;
      EXPECT_EQ(signbit(got) != 0, negative) << format.name << " code " << code;
      continue;
    }
    if (format.is_inf(code)) {
      EXPECT_EQ(got, negative ? -INFINITY : INFINITY) << format.name << " code " << code;
      continue;
    }
    const long double expected = format.value(code);
    const float expected_float = static_cast<float>(expected);
    ASSERT_EQ(static_cast<long double>(expected_float), expected) << "not an fp32 value";
    // Comparing bits also tells -0 from +0.
    EXPECT_EQ(bits_of(got), bits_of(negative && expected == 0 ? -0.0f : expected_float))
        << format.name << " code " << code << " expected " << static_cast<double>(expected);
  }
}

TEST(Decode, Bf16EveryCode) {
  expect_all_codes_decode(
      kBf16, [](uint32_t c) { return gg::fmt::bf16_to_float(static_cast<uint16_t>(c)); });
}

TEST(Decode, Fp16EveryCode) {
  expect_all_codes_decode(
      kFp16, [](uint32_t c) { return gg::fmt::fp16_to_float(static_cast<uint16_t>(c)); });
}

TEST(Decode, E4m3EveryCode) {
  expect_all_codes_decode(
      kE4m3, [](uint32_t c) { return gg::fmt::e4m3_to_float(static_cast<uint8_t>(c)); });
}

TEST(Decode, E5m2EveryCode) {
  expect_all_codes_decode(
      kE5m2, [](uint32_t c) { return gg::fmt::e5m2_to_float(static_cast<uint8_t>(c)); });
}

TEST(Decode, E2m1EveryCode) {
  expect_all_codes_decode(
      kE2m1, [](uint32_t c) { return gg::fmt::e2m1_to_float(static_cast<uint8_t>(c)); });
}

TEST(Decode, E2m1IgnoresTheHighNibble) {
  for (uint32_t code = 0; code < 256; ++code) {
    EXPECT_EQ(bits_of(gg::fmt::e2m1_to_float(static_cast<uint8_t>(code))),
              bits_of(gg::fmt::e2m1_to_float(static_cast<uint8_t>(code & 0xF))));
  }
}

TEST(Decode, E2m1ValuesAreTheSpecList) {
  const float positives[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint32_t code = 0; code < 8; ++code) {
    EXPECT_EQ(gg::fmt::e2m1_to_float(static_cast<uint8_t>(code)), positives[code]);
    EXPECT_EQ(bits_of(gg::fmt::e2m1_to_float(static_cast<uint8_t>(code | 8))),
              bits_of(-positives[code]));
  }
}

// ue4m3 is e4m3 without a sign: bit 7 is ignored.
TEST(Decode, Ue4m3EveryCode) {
  for (uint32_t code = 0; code < 256; ++code) {
    const float got = gg::fmt::ue4m3_to_float(static_cast<uint8_t>(code));
    const uint32_t magnitude = code & 0x7F;
    if (kE4m3.is_nan(magnitude)) {
      EXPECT_TRUE(isnan(got)) << code;
      continue;
    }
    EXPECT_EQ(bits_of(got), bits_of(static_cast<float>(kE4m3.value(magnitude)))) << code;
  }
}

TEST(Decode, E8m0EveryCode) {
  for (uint32_t code = 0; code < 255; ++code) {
    const long double expected = ldexpl(1.0L, static_cast<int>(code) - 127);
    const float got = gg::fmt::e8m0_to_float(static_cast<uint8_t>(code));
    EXPECT_EQ(static_cast<long double>(got), expected) << code;
  }
  EXPECT_TRUE(isnan(gg::fmt::e8m0_to_float(0xFF)));
  // 2^-127 is below fp32's normal range: it must come out as the subnormal.
  EXPECT_EQ(bits_of(gg::fmt::e8m0_to_float(0)), 0x00400000u);
}

TEST(Decode, MaxValuesAreTheSpecs) {
  EXPECT_EQ(gg::fmt::e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(gg::fmt::e4m3_to_float(0x01), 0x1p-9f);
  EXPECT_EQ(gg::fmt::e5m2_to_float(0x7B), 57344.0f);
  EXPECT_EQ(gg::fmt::e5m2_to_float(0x01), 0x1p-16f);
  EXPECT_EQ(gg::fmt::fp16_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(gg::fmt::fp16_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(gg::fmt::bf16_to_float(0x7F7F), 0x1.FEp127f);
  EXPECT_EQ(gg::fmt::bf16_to_float(0x0001), 0x1p-133f);
}

}  // namespace
}  // namespace gg_test

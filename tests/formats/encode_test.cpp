// Conversions from fp32 to every narrow format, against the table search of
// format_model.h: round trips of every code, every midpoint between adjacent
// values and its two fp32 neighbours, sweeps of random and strided fp32
// inputs, and the special values written out from the specs.
#include <float.h>
#include <gtest/gtest.h>
#include <math.h>

#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "formats/codecs.h"
#include "formats/format_model.h"
#include "formats/fp32_bits.h"

namespace gg_test {
namespace {

struct Codec {
  const FormatModel* format;
  uint32_t (*encode)(float x, bool saturate);
  float (*decode)(uint32_t code);
  bool has_saturate_mode;  // otherwise encode ignores `saturate`
};

const Codec kCodecs[] = {
    {&kBf16, [](float x, bool) -> uint32_t { return gg::fmt::float_to_bf16(x); },
     [](uint32_t c) { return gg::fmt::bf16_to_float(static_cast<uint16_t>(c)); }, false},
    {&kFp16, [](float x, bool) -> uint32_t { return gg::fmt::float_to_fp16(x); },
     [](uint32_t c) { return gg::fmt::fp16_to_float(static_cast<uint16_t>(c)); }, false},
    {&kE4m3, [](float x, bool s) -> uint32_t { return gg::fmt::float_to_e4m3(x, s); },
     [](uint32_t c) { return gg::fmt::e4m3_to_float(static_cast<uint8_t>(c)); }, true},
    {&kE5m2, [](float x, bool s) -> uint32_t { return gg::fmt::float_to_e5m2(x, s); },
     [](uint32_t c) { return gg::fmt::e5m2_to_float(static_cast<uint8_t>(c)); }, true},
    {&kE2m1, [](float x, bool) -> uint32_t { return gg::fmt::float_to_e2m1(x); },
     [](uint32_t c) { return gg::fmt::e2m1_to_float(static_cast<uint8_t>(c)); }, false},
};

void PrintTo(const Codec& codec, std::ostream* os) { *os << codec.format->name; }

class EncodeTest : public ::testing::TestWithParam<Codec> {
 protected:
  const FormatModel& format() const { return *GetParam().format; }
  uint32_t encode(float x, bool saturate) const { return GetParam().encode(x, saturate); }
  // The modes worth running: both when the codec has them.
  std::vector<bool> modes() const {
    return GetParam().has_saturate_mode ? std::vector<bool>{false, true} : std::vector<bool>{false};
  }
  // Formats without a saturate argument: e2m1 always saturates, bf16/fp16
  // never do.
  bool overflow_saturates(bool saturate) const {
    return GetParam().has_saturate_mode ? saturate : format().top == Top::kNone;
  }
};

// decode then encode gives the code back, -0 included; infinities come back
// as the largest value when saturating.
TEST_P(EncodeTest, EveryCodeRoundTrips) {
  const FormatModel& f = format();
  for (uint32_t code = 0; code < (f.sign_bit() << 1); ++code) {
    if (f.is_nan(code)) continue;
    const float x = GetParam().decode(code);
    for (bool saturate : modes()) {
      const uint32_t expected = f.is_inf(code) && overflow_saturates(saturate)
                                    ? (code & f.sign_bit()) | f.max_code()
                                    : code;
      EXPECT_EQ(encode(x, saturate), expected) << f.name << " code " << code << " sat " << saturate;
    }
  }
}

// Midpoints between adjacent finite values go to the even code; the fp32
// values next to a midpoint go to the nearer side.
TEST_P(EncodeTest, MidpointsTieToEvenAndNeighboursGoToTheNearer) {
  const FormatModel& f = format();
  const Rounder rounder(f);
  for (uint32_t below = 0; below < f.max_code(); ++below) {
    const uint32_t above = below + 1;
    const long double midpoint = (rounder.values()[below] + rounder.values()[above]) / 2;
    const float m = static_cast<float>(midpoint);
    ASSERT_EQ(static_cast<long double>(m), midpoint) << f.name << " midpoint is not an fp32 value";
    const uint32_t even = below % 2 == 0 ? below : above;
    for (float sign : {1.0f, -1.0f}) {
      const uint32_t sign_code = sign < 0 ? f.sign_bit() : 0u;
      for (bool saturate : modes()) {
        EXPECT_EQ(encode(sign * m, saturate), sign_code | even) << f.name << " tie at " << m;
        EXPECT_EQ(encode(sign * nextafterf(m, INFINITY), saturate), sign_code | above)
            << f.name << " just above " << m;
        EXPECT_EQ(encode(sign * nextafterf(m, 0.0f), saturate), sign_code | below)
            << f.name << " just below " << m;
      }
    }
  }
}

// Above the largest value: the midpoint to the next (unrepresentable) value
// and its neighbours, then far beyond and infinity.
TEST_P(EncodeTest, OverflowFollowsTheModeAndTheTieRule) {
  const FormatModel& f = format();
  const Rounder rounder(f);
  const uint32_t max = f.max_code();
  const long double midpoint = (rounder.values()[max] + rounder.values()[max + 1]) / 2;
  const float m = static_cast<float>(midpoint);
  ASSERT_EQ(static_cast<long double>(m), midpoint);
  for (bool saturate : modes()) {
    const uint32_t overflow = overflow_saturates(saturate) ? max : max + 1;
    const uint32_t tie = max % 2 == 0 ? max : overflow;
    for (float sign : {1.0f, -1.0f}) {
      const uint32_t s = sign < 0 ? f.sign_bit() : 0u;
      EXPECT_EQ(encode(sign * nextafterf(m, 0.0f), saturate), s | max) << f.name;
      EXPECT_EQ(encode(sign * m, saturate), s | tie) << f.name;
      EXPECT_EQ(encode(sign * nextafterf(m, INFINITY), saturate), s | overflow) << f.name;
      EXPECT_EQ(encode(sign * FLT_MAX, saturate), s | overflow) << f.name;
      EXPECT_EQ(encode(sign * INFINITY, saturate), s | overflow) << f.name;
    }
  }
}

// Quiet and signalling NaNs with assorted payloads, both signs.
TEST_P(EncodeTest, NanInputs) {
  const FormatModel& f = format();
  std::vector<uint32_t> payloads = {1u, 0x400000u, 0x7FFFFFu};
  std::mt19937 random(7);
  for (int i = 0; i < 4096; ++i)
    payloads.push_back((static_cast<uint32_t>(random()) & 0x7FFFFFu) | 1u);
  for (uint32_t payload : payloads) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      const float nan = float_of(sign | 0x7F800000u | payload);
      for (bool saturate : modes()) {
        const uint32_t got = encode(nan, saturate);
        if (f.top == Top::kNone) {
          EXPECT_EQ(got, f.max_code()) << f.name << ": NaN becomes +max";
        } else {
          EXPECT_TRUE(f.is_nan(got)) << f.name << " got " << got;
          EXPECT_EQ((got & f.sign_bit()) != 0, sign != 0) << f.name;
        }
      }
    }
  }
}

// Below half the smallest subnormal everything becomes a zero of the input's
// sign, down to the fp32 subnormals.
TEST_P(EncodeTest, UnderflowKeepsTheSign) {
  const FormatModel& f = format();
  const long double half_min = f.magnitude_value(1) / 2;
  const float below_half = nextafterf(static_cast<float>(half_min), 0.0f);
  for (float x : {below_half, below_half / 3, 0x1p-126f, 0x1p-149f, 0.0f}) {
    if (x >= half_min) continue;
    for (bool saturate : modes()) {
      EXPECT_EQ(encode(x, saturate), 0u) << f.name << " " << x;
      EXPECT_EQ(encode(-x, saturate), f.sign_bit()) << f.name << " " << -x;
    }
  }
}

void expect_matches_model(const Codec& codec, const Rounder& rounder, float x,
                          const std::vector<bool>& modes, bool saturate_always) {
  for (bool saturate : modes) {
    ASSERT_EQ(codec.encode(x, saturate), rounder.round(x, saturate || saturate_always))
        << codec.format->name << " x=" << x << " bits=" << std::hex << bits_of(x)
        << " sat=" << saturate;
  }
}

// Uniformly random fp32 bit patterns (all finite magnitudes, both signs).
TEST_P(EncodeTest, RandomFp32PatternsMatchTheModel) {
  const Rounder rounder(format());
  std::mt19937 random(1234);
  const bool always = format().top == Top::kNone;
  for (int i = 0; i < 1 << 20; ++i) {
    const float x = float_of(static_cast<uint32_t>(random()));
    if (isnan(x)) continue;
    expect_matches_model(GetParam(), rounder, x, modes(), always);
  }
}

// Random values whose exponent lies in or near the format's range, where
// every rounding decision happens.
TEST_P(EncodeTest, RandomValuesInRangeMatchTheModel) {
  const FormatModel& f = format();
  const Rounder rounder(f);
  std::mt19937 random(99);
  const int lowest = 1 - f.bias - f.mantissa_bits - 3;
  const int highest = static_cast<int>(f.all_ones_exponent()) - f.bias + 2;
  std::uniform_int_distribution<int> exponent(lowest, highest < 127 ? highest : 127);
  const bool always = f.top == Top::kNone;
  for (int i = 0; i < 1 << 20; ++i) {
    const uint32_t fraction = static_cast<uint32_t>(random()) & 0x7FFFFFu;
    const float x = ldexpf(1.0f + static_cast<float>(fraction) * 0x1p-23f, exponent(random));
    expect_matches_model(GetParam(), rounder, (i & 1) ? -x : x, modes(), always);
  }
}

// Every 4099th fp32 pattern: a deterministic walk through all binades and
// through the fp32 subnormals.
TEST_P(EncodeTest, StridedFp32PatternsMatchTheModel) {
  const Rounder rounder(format());
  const bool always = format().top == Top::kNone;
  for (uint64_t bits = 0; bits < 0x7F800000u; bits += 4099) {
    expect_matches_model(GetParam(), rounder, float_of(static_cast<uint32_t>(bits)), modes(),
                         always);
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, EncodeTest, ::testing::ValuesIn(kCodecs),
                         [](const ::testing::TestParamInfo<Codec>& param_info) {
                           return std::string(param_info.param.format->name);
                         });

// ---- values written out from the specs ----

TEST(EncodeSpec, E4m3) {
  using gg::fmt::float_to_e4m3;
  EXPECT_EQ(float_to_e4m3(448.0f, false), 0x7E);
  EXPECT_EQ(float_to_e4m3(464.0f, false), 0x7E);                    // tie between 448 and 480: even
  EXPECT_EQ(float_to_e4m3(nextafterf(464.0f, 1e9f), false), 0x7F);  // overflow: NaN
  EXPECT_EQ(float_to_e4m3(nextafterf(464.0f, 1e9f), true), 0x7E);
  EXPECT_EQ(float_to_e4m3(-1e30f, false), 0xFF);
  EXPECT_EQ(float_to_e4m3(-1e30f, true), 0xFE);
  EXPECT_EQ(float_to_e4m3(INFINITY, false), 0x7F);
  EXPECT_EQ(float_to_e4m3(-INFINITY, false), 0xFF);
  EXPECT_EQ(float_to_e4m3(INFINITY, true), 0x7E);
  EXPECT_EQ(float_to_e4m3(-INFINITY, true), 0xFE);
  EXPECT_EQ(float_to_e4m3(NAN, true), 0x7F);
  EXPECT_EQ(float_to_e4m3(-NAN, true), 0xFF);
  EXPECT_EQ(float_to_e4m3(1.0f, false), 0x38);
  EXPECT_EQ(float_to_e4m3(0x1p-9f, false), 0x01);   // smallest subnormal
  EXPECT_EQ(float_to_e4m3(0x1p-10f, false), 0x00);  // half of it: tie to 0
  EXPECT_EQ(float_to_e4m3(0x1.000002p-10f, false), 0x01);
  EXPECT_EQ(float_to_e4m3(-0x1p-11f, false), 0x80);
  EXPECT_EQ(float_to_e4m3(0x1.Cp-7f, false), 0x07);  // largest subnormal 7 * 2^-9
  EXPECT_EQ(float_to_e4m3(0x1.Ep-7f, false), 0x08);  // tie 7.5 * 2^-9: to 0x08
  EXPECT_EQ(float_to_e4m3(0x1p-6f, false), 0x08);    // smallest normal
}

TEST(EncodeSpec, E5m2) {
  using gg::fmt::float_to_e5m2;
  EXPECT_EQ(float_to_e5m2(57344.0f, false), 0x7B);
  EXPECT_EQ(float_to_e5m2(61440.0f, false), 0x7C);  // tie between 57344 and 65536: odd max, up
  EXPECT_EQ(float_to_e5m2(61440.0f, true), 0x7B);
  EXPECT_EQ(float_to_e5m2(nextafterf(61440.0f, 0.0f), false), 0x7B);
  EXPECT_EQ(float_to_e5m2(INFINITY, false), 0x7C);
  EXPECT_EQ(float_to_e5m2(-INFINITY, false), 0xFC);
  EXPECT_EQ(float_to_e5m2(INFINITY, true), 0x7B);
  EXPECT_EQ(float_to_e5m2(-INFINITY, true), 0xFB);
  EXPECT_EQ(float_to_e5m2(NAN, false), 0x7E);
  EXPECT_EQ(float_to_e5m2(-NAN, true), 0xFE);
  EXPECT_EQ(float_to_e5m2(1.0f, false), 0x3C);
  EXPECT_EQ(float_to_e5m2(0x1p-16f, false), 0x01);
  EXPECT_EQ(float_to_e5m2(0x1p-17f, false), 0x00);
  EXPECT_EQ(float_to_e5m2(-0x1p-17f, false), 0x80);
}

TEST(EncodeSpec, E2m1) {
  using gg::fmt::float_to_e2m1;
  EXPECT_EQ(float_to_e2m1(0.25f), 0x0);  // ties go to the even code
  EXPECT_EQ(float_to_e2m1(0.75f), 0x2);
  EXPECT_EQ(float_to_e2m1(1.25f), 0x2);
  EXPECT_EQ(float_to_e2m1(1.75f), 0x4);
  EXPECT_EQ(float_to_e2m1(2.5f), 0x4);
  EXPECT_EQ(float_to_e2m1(3.5f), 0x6);
  EXPECT_EQ(float_to_e2m1(5.0f), 0x6);
  EXPECT_EQ(float_to_e2m1(nextafterf(5.0f, 9.0f)), 0x7);
  EXPECT_EQ(float_to_e2m1(7.0f), 0x7);
  EXPECT_EQ(float_to_e2m1(-1e30f), 0xF);
  EXPECT_EQ(float_to_e2m1(INFINITY), 0x7);
  EXPECT_EQ(float_to_e2m1(-INFINITY), 0xF);
  EXPECT_EQ(float_to_e2m1(NAN), 0x7);
  EXPECT_EQ(float_to_e2m1(-NAN), 0x7);
  EXPECT_EQ(float_to_e2m1(-0.25f), 0x8);
}

TEST(EncodeSpec, Fp16) {
  using gg::fmt::float_to_fp16;
  EXPECT_EQ(float_to_fp16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_fp16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_fp16(nextafterf(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(float_to_fp16(65520.0f), 0x7C00);
  EXPECT_EQ(float_to_fp16(-INFINITY), 0xFC00);
  EXPECT_EQ(float_to_fp16(NAN), 0x7E00);
  EXPECT_EQ(float_to_fp16(-NAN), 0xFE00);
  EXPECT_EQ(float_to_fp16(0x1p-24f), 0x0001);
  EXPECT_EQ(float_to_fp16(0x1p-25f), 0x0000);
  EXPECT_EQ(float_to_fp16(0x1.8p-24f), 0x0002);  // tie 1.5 * 2^-24: to 2
  EXPECT_EQ(float_to_fp16(-0x1p-30f), 0x8000);
}

TEST(EncodeSpec, Bf16) {
  using gg::fmt::float_to_bf16;
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(float_of(0x3F808000u)), 0x3F80);  // tie, even below
  EXPECT_EQ(float_to_bf16(float_of(0x3F818000u)), 0x3F82);  // tie, even above
  EXPECT_EQ(float_to_bf16(float_of(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(float_to_bf16(float_of(0x7F7F8000u)), 0x7F80);  // tie past the max: infinity
  EXPECT_EQ(float_to_bf16(FLT_MAX), 0x7F80);
  EXPECT_EQ(float_to_bf16(-INFINITY), 0xFF80);
  EXPECT_EQ(float_to_bf16(NAN), 0x7FC0);
  EXPECT_EQ(float_to_bf16(float_of(0xFF800001u)), 0xFFC0);  // signalling NaN: quiet, signed
  EXPECT_EQ(float_to_bf16(float_of(0x00008000u)), 0x0000);  // fp32 subnormal tie: even
  EXPECT_EQ(float_to_bf16(float_of(0x00018000u)), 0x0002);
  EXPECT_EQ(float_to_bf16(float_of(0x80000001u)), 0x8000);
}

TEST(EncodeSpec, Ue4m3) {
  using gg::fmt::float_to_ue4m3;
  EXPECT_EQ(float_to_ue4m3(1.0f), 0x38);
  EXPECT_EQ(float_to_ue4m3(448.0f), 0x7E);
  EXPECT_EQ(float_to_ue4m3(1e9f), 0x7E);
  EXPECT_EQ(float_to_ue4m3(INFINITY), 0x7E);
  EXPECT_EQ(float_to_ue4m3(-INFINITY), 0x00);
  EXPECT_EQ(float_to_ue4m3(-1.0f), 0x00);
  EXPECT_EQ(float_to_ue4m3(-0.0f), 0x00);
  EXPECT_EQ(float_to_ue4m3(NAN), 0x7F);
  EXPECT_EQ(float_to_ue4m3(-NAN), 0x7F);
  EXPECT_EQ(float_to_ue4m3(0x1p-10f), 0x00);
  for (uint32_t code = 0; code < 0x7F; ++code) {
    EXPECT_EQ(float_to_ue4m3(gg::fmt::ue4m3_to_float(static_cast<uint8_t>(code))), code);
  }
}

// ue4m3 of every positive input agrees with e4m3's saturating rounding.
TEST(EncodeSpec, Ue4m3MatchesTheModelOnPositives) {
  const Rounder rounder(kE4m3);
  std::mt19937 random(5);
  for (int i = 0; i < 1 << 18; ++i) {
    const float x = float_of(static_cast<uint32_t>(random()) & 0x7FFFFFFFu);
    if (isnan(x)) continue;
    ASSERT_EQ(gg::fmt::float_to_ue4m3(x), rounder.round(x, true)) << x;
  }
}

TEST(EncodeSpec, E8m0FromExponentClamps) {
  using gg::fmt::e8m0_from_exponent;
  EXPECT_EQ(e8m0_from_exponent(-1000), 0);
  EXPECT_EQ(e8m0_from_exponent(-128), 0);
  EXPECT_EQ(e8m0_from_exponent(-127), 0);
  EXPECT_EQ(e8m0_from_exponent(-126), 1);
  EXPECT_EQ(e8m0_from_exponent(0), 127);
  EXPECT_EQ(e8m0_from_exponent(127), 254);
  EXPECT_EQ(e8m0_from_exponent(128), 254);
  EXPECT_EQ(e8m0_from_exponent(1000), 254);
  for (int k = -127; k <= 127; ++k) {
    EXPECT_EQ(static_cast<long double>(gg::fmt::e8m0_to_float(e8m0_from_exponent(k))),
              ldexpl(1.0L, k));
  }
}

}  // namespace
}  // namespace gg_test

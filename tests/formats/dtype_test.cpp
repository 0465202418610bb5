// The dtype-generic entry points (dtype_bits, dtype_max, decode, encode) and
// the e2m1 nibble packing, against the spec's layout and the model.
#include <float.h>
#include <gtest/gtest.h>
#include <math.h>

#include <random>
#include <vector>

#include "formats/codecs.h"
#include "formats/format_model.h"
#include "formats/fp32_bits.h"

namespace gg_test {
namespace {

TEST(Dtype, Bits) {
  EXPECT_EQ(gg::fmt::dtype_bits(GG_DTYPE_BF16), 16);
  EXPECT_EQ(gg::fmt::dtype_bits(GG_DTYPE_FP16), 16);
  EXPECT_EQ(gg::fmt::dtype_bits(GG_DTYPE_FP32), 32);
  EXPECT_EQ(gg::fmt::dtype_bits(GG_DTYPE_E4M3), 8);
  EXPECT_EQ(gg::fmt::dtype_bits(GG_DTYPE_E5M2), 8);
  EXPECT_EQ(gg::fmt::dtype_bits(GG_DTYPE_E2M1), 4);
}

TEST(Dtype, MaxIsTheLargestFiniteValue) {
  EXPECT_EQ(gg::fmt::dtype_max(GG_DTYPE_BF16), 0x1.FEp127f);
  EXPECT_EQ(gg::fmt::dtype_max(GG_DTYPE_FP16), 65504.0f);
  EXPECT_EQ(gg::fmt::dtype_max(GG_DTYPE_FP32), FLT_MAX);
  EXPECT_EQ(gg::fmt::dtype_max(GG_DTYPE_E4M3), 448.0f);
  EXPECT_EQ(gg::fmt::dtype_max(GG_DTYPE_E5M2), 57344.0f);
  EXPECT_EQ(gg::fmt::dtype_max(GG_DTYPE_E2M1), 6.0f);
  // The same, from the model's rules on the top codes.
  for (auto [dtype, format] : {std::pair{GG_DTYPE_BF16, &kBf16}, std::pair{GG_DTYPE_FP16, &kFp16},
                               std::pair{GG_DTYPE_E4M3, &kE4m3}, std::pair{GG_DTYPE_E5M2, &kE5m2},
                               std::pair{GG_DTYPE_E2M1, &kE2m1}}) {
    EXPECT_EQ(static_cast<long double>(gg::fmt::dtype_max(dtype)),
              format->magnitude_value(format->max_code()))
        << format->name;
  }
}

TEST(E2m1Packing, EvenElementInTheLowNibble) {
  uint8_t packed[2] = {0, 0};
  gg::fmt::e2m1_set(packed, 0, 0x3);
  gg::fmt::e2m1_set(packed, 1, 0xA);
  gg::fmt::e2m1_set(packed, 3, 0xF);
  EXPECT_EQ(packed[0], 0xA3);
  EXPECT_EQ(packed[1], 0xF0);
  EXPECT_EQ(gg::fmt::e2m1_get(packed, 0), 0x3);
  EXPECT_EQ(gg::fmt::e2m1_get(packed, 1), 0xA);
  EXPECT_EQ(gg::fmt::e2m1_get(packed, 2), 0x0);
  EXPECT_EQ(gg::fmt::e2m1_get(packed, 3), 0xF);
  // Rewriting one half leaves the other; only the low 4 bits are stored.
  gg::fmt::e2m1_set(packed, 0, 0xF5);
  EXPECT_EQ(packed[0], 0xA5);
  gg::fmt::e2m1_set(packed, 1, 0x0);
  EXPECT_EQ(packed[0], 0x05);
}

TEST(E2m1Packing, RandomArrayRoundTrips) {
  std::mt19937 random(3);
  std::vector<uint8_t> nibbles(1001);
  std::vector<uint8_t> packed((nibbles.size() + 1) / 2, 0xEE);
  for (size_t i = 0; i < nibbles.size(); ++i) {
    nibbles[i] = static_cast<uint8_t>(random() & 0xF);
    gg::fmt::e2m1_set(packed.data(), static_cast<int64_t>(i), nibbles[i]);
  }
  for (size_t i = 0; i < nibbles.size(); ++i) {
    const uint8_t byte = packed[i / 2];
    EXPECT_EQ(i % 2 == 0 ? byte & 0xF : byte >> 4, nibbles[i]) << i;
    EXPECT_EQ(gg::fmt::e2m1_get(packed.data(), static_cast<int64_t>(i)), nibbles[i]) << i;
  }
}

// encode stores what the model's rounding gives, at the right place, and
// decode reads the model's value back.
TEST(DtypeGeneric, EncodeAndDecodeEveryNarrowType) {
  struct Case {
    gg_dtype dtype;
    const FormatModel* format;
    bool saturates_always;
    bool has_saturate_mode;
  };
  const Case cases[] = {{GG_DTYPE_BF16, &kBf16, false, false},
                        {GG_DTYPE_FP16, &kFp16, false, false},
                        {GG_DTYPE_E4M3, &kE4m3, false, true},
                        {GG_DTYPE_E5M2, &kE5m2, false, true},
                        {GG_DTYPE_E2M1, &kE2m1, true, false}};
  std::mt19937 random(11);
  std::normal_distribution<float> normal(0.0f, 300.0f);
  for (const Case& c : cases) {
    const Rounder rounder(*c.format);
    for (bool saturate : {false, true}) {
      const bool rule = c.saturates_always || (c.has_saturate_mode && saturate);
      std::vector<float> values(257);
      for (float& v : values) v = normal(random);
      values[0] = 1e30f;
      values[1] = -INFINITY;
      std::vector<uint8_t> storage(values.size() * sizeof(float), 0);  // room for any dtype
      for (size_t i = 0; i < values.size(); ++i) {
        gg::fmt::encode(c.dtype, storage.data(), static_cast<int64_t>(i), values[i], saturate);
      }
      for (size_t i = 0; i < values.size(); ++i) {
        const uint32_t expected = rounder.round(values[i], rule);
        uint32_t stored = 0;
        switch (gg::fmt::dtype_bits(c.dtype)) {
          case 16:
            stored = static_cast<uint32_t>(storage[2 * i] | storage[2 * i + 1] << 8);
            break;
          case 8:
            stored = storage[i];
            break;
          case 4:
            stored = static_cast<uint32_t>((storage[i / 2] >> (4 * (i % 2))) & 0xF);
            break;
        }
        ASSERT_EQ(stored, expected) << c.format->name << " value " << values[i];
        const float decoded = gg::fmt::decode(c.dtype, storage.data(), static_cast<int64_t>(i));
        if (c.format->is_inf(expected)) {
          EXPECT_TRUE(isinf(decoded));
        } else if (c.format->is_nan(expected)) {
          EXPECT_TRUE(isnan(decoded));
        } else {
          EXPECT_EQ(static_cast<long double>(decoded), c.format->value(expected))
              << c.format->name << " value " << values[i];
        }
      }
    }
  }
}

TEST(DtypeGeneric, Fp32IsStoredAsItIs) {
  const float values[] = {1.5f, -0.0f, float_of(0x00000001u), float_of(0x7FC12345u), -INFINITY};
  float storage[5] = {};
  for (int i = 0; i < 5; ++i) gg::fmt::encode(GG_DTYPE_FP32, storage, i, values[i], true);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(bits_of(storage[i]), bits_of(values[i]));
    EXPECT_EQ(bits_of(gg::fmt::decode(GG_DTYPE_FP32, storage, i)), bits_of(values[i]));
  }
}

}  // namespace
}  // namespace gg_test

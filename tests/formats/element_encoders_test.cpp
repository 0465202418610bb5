// The quantizer's fast element encoders (kernels/quantize/element_encoders.h)
// give the fmt:: bits on the host: the mxfp8 product by a power of two, the
// NaN and zero-step patches and the e2m1 arithmetic are checked here over
// every bf16 input under every scale slot, the fp32 edge values and the
// rounding boundaries (encoder_inputs.h), and e2m1_code over every fp32
// pattern; the reciprocal division against x / s on random pairs over its
// whole range, and with one correction for 16-bit x over every pair of
// significands. The fp8 instruction itself is device code:
// tests/formats/device_agreement_test.cu runs the same cases on the GPU.
#include <gtest/gtest.h>
#include <math.h>
#include <stdint.h>

#include <algorithm>
#include <random>
#include <thread>
#include <vector>

#include "formats/encoder_inputs.h"

namespace gg_test {
namespace {

TEST(ElementEncoders, HostPathGivesTheReferenceBits) {
  const EncoderScales scales = encoder_scales();
  const std::vector<EncoderCase> cases = encoder_cases();
  int mismatches = 0;
  for (const EncoderCase& c : cases) {
    uint32_t fast[kEncoderResults];
    uint32_t want[kEncoderResults];
    encode_pair(scales, c.x0, c.j0, c.x1, c.j1, true, fast);
    encode_pair(scales, c.x0, c.j0, c.x1, c.j1, false, want);
    for (int r = 0; r < kEncoderResults && mismatches < 20; ++r) {
      if (fast[r] != want[r]) {
        ++mismatches;
        ADD_FAILURE() << "x0 bits " << std::hex << gg::fmt::float_bits(c.x0) << " x1 bits "
                      << gg::fmt::float_bits(c.x1) << std::dec << " slots " << c.j0 << ","
                      << c.j1 << " result " << r << ": fast " << std::hex << fast[r]
                      << " reference " << want[r];
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// e2m1_code, and e2m1_code_number where y is not NaN, against
// fmt::float_to_e2m1 over all 2^32 patterns, split across threads.
TEST(ElementEncoders, E2m1CodeOverEveryFp32) {
  const unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  const uint64_t patterns = uint64_t{1} << 32;
  std::vector<uint64_t> mismatches(threads, 0);
  std::vector<uint32_t> first_bad(threads, 0);
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      const uint64_t begin = patterns * w / threads;
      const uint64_t end = patterns * (w + 1) / threads;
      for (uint64_t p = begin; p < end; ++p) {
        const uint32_t bits = static_cast<uint32_t>(p);
        const float y = float_of_bits(bits);
        const uint32_t want = gg::fmt::float_to_e2m1(y);
        const bool bad = gg::quantize::e2m1_code(y) != want ||
                         (y == y && gg::quantize::e2m1_code_number(y) != want);
        if (bad && mismatches[w]++ == 0) first_bad[w] = bits;
      }
    });
  }
  for (std::thread& t : workers) t.join();
  for (unsigned w = 0; w < threads; ++w) {
    const float y = float_of_bits(first_bad[w]);
    EXPECT_EQ(mismatches[w], 0u) << "first mismatch at bits " << std::hex << first_bad[w]
                                 << ": fast " << gg::quantize::e2m1_code(y) << " reference "
                                 << +gg::fmt::float_to_e2m1(y);
  }
}

// ScaleDivider::divide is x / s, correctly rounded, wherever the quotient is
// at least 2^-20, and below that stays below 2^-17 with x's sign: random
// scales over its whole fast range (a third with short mantissas, like
// block scales), quotients from 2^-40 to 2^20, x normal or subnormal, half
// of them bf16 values.
TEST(ElementEncoders, ReciprocalDivisionIsTheRoundedQuotient) {
  std::mt19937_64 random(20261122);
  int mismatches = 0;
  for (int i = 0; i < 20000000 && mismatches < 20; ++i) {
    const uint64_t r = random();
    uint32_t mantissa = static_cast<uint32_t>(r >> 8) & 0x7FFFFFu;
    if (i % 3 == 0) mantissa &= 0x700000u;
    const uint32_t scale_exponent = 47 + static_cast<uint32_t>(r % 180);  // 2^-80 .. 2^100
    const float scale = float_of_bits(scale_exponent << 23 | mantissa);
    const int x_exponent = static_cast<int>(scale_exponent) - 127 +
                           static_cast<int>((r >> 32) % 60) - 40;
    uint32_t x_mantissa = static_cast<uint32_t>(r >> 40) & 0x7FFFFFu;
    if (i % 2 == 1) x_mantissa &= 0x7F0000u;
    const uint32_t sign = static_cast<uint32_t>(r >> 63) << 31;
    if (x_exponent > 127 || x_exponent < -149) continue;
    const float x =
        x_exponent >= -126
            ? float_of_bits(sign | static_cast<uint32_t>(x_exponent + 127) << 23 | x_mantissa)
            : float_of_bits(sign | (0x800000u | x_mantissa) >> (-126 - x_exponent + 1));
    const gg::quantize::ScaleDivider divider(scale);
    ASSERT_TRUE(divider.fast);
    const float fast = divider.divide(x);
    const float want = x / scale;
    const bool tiny = fabsf(want) < 0x1p-20f;
    const bool ok = tiny ? fabsf(fast) < 0x1p-17f && signbit(fast) == signbit(x)
                         : gg::fmt::float_bits(fast) == gg::fmt::float_bits(want);
    if (!ok) {
      ++mismatches;
      ADD_FAILURE() << std::hexfloat << "x " << x << " scale " << scale << ": fast " << fast
                    << " quotient " << want;
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// ScaleDivider::divide<true> (one correction) is x / s, correctly
// rounded, for x of kSignificand significant bits (8: bf16, 11: fp16), on
// every pair of significands (for_each_narrow_quotient).
template <int kSignificand>
void check_narrow_quotients_over_every_significand_pair() {
  const unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  constexpr uint32_t kScales = 1u << 23;
  std::vector<uint64_t> mismatches(threads, 0);
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      for (uint32_t m = w; m < kScales; m += threads) {
        for_each_narrow_quotient<kSignificand>(m, [&](float x, float scale, float quotient) {
          if (gg::fmt::float_bits(quotient) != gg::fmt::float_bits(x / scale) &&
              mismatches[w]++ < 5) {
            ADD_FAILURE() << std::hexfloat << "x " << x << " scale " << scale << ": "
                          << quotient << " against " << x / scale;
          }
        });
      }
    });
  }
  for (std::thread& t : workers) t.join();
  for (unsigned w = 0; w < threads; ++w) EXPECT_EQ(mismatches[w], 0u);
}

TEST(ElementEncoders, OneCorrectionDividesEveryBf16Significand) {
  check_narrow_quotients_over_every_significand_pair<8>();
}

TEST(ElementEncoders, OneCorrectionDividesEveryFp16Significand) {
  check_narrow_quotients_over_every_significand_pair<11>();
}

// e2m1_pair_codes under e2m1_thresholds gives the reference's nvfp4 codes
// for every finite bf16 and fp16 magnitude, both signs, in either half,
// under the 1600 steps of e2m1_threshold_steps (the partner half runs the
// magnitudes backwards under the next step).
template <gg_dtype kHalf>
void check_pair_codes_over_every_magnitude(uint32_t magnitudes) {
  namespace q = gg::quantize;
  const std::vector<float> steps = e2m1_threshold_steps();
  const unsigned threads = std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
  std::vector<int> mismatches(threads, 0);
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      for (size_t i = w; i < steps.size(); i += threads) {
        const float low_step = steps[i], high_step = steps[(i + 1) % steps.size()];
        const q::E2m1Thresholds thresholds = q::e2m1_thresholds<kHalf>(low_step, high_step);
        for (uint32_t m = 0; m < magnitudes; ++m) {
          for (uint32_t sign : {0u, 0x8000u}) {
            const uint32_t low = m | sign, high = (magnitudes - 1 - m) | (sign ^ 0x8000u);
            const uint32_t codes = q::e2m1_pair_codes<kHalf>(low | high << 16, thresholds);
            const uint32_t want = e2m1_reference_pair<kHalf>(low, high, low_step, high_step);
            if (codes != want && mismatches[w]++ < 5) {
              ADD_FAILURE() << std::hex << "bits " << low << " under " << std::hexfloat
                            << low_step << ", bits " << std::hex << high << " under "
                            << std::hexfloat << high_step << ": codes " << std::hex << codes
                            << " reference " << want;
            }
          }
        }
      }
    });
  }
  for (std::thread& t : workers) t.join();
  for (unsigned w = 0; w < threads; ++w) EXPECT_EQ(mismatches[w], 0);
}

TEST(ElementEncoders, E2m1PairCodesOverEveryBf16) {
  for (float step : e2m1_threshold_steps()) ASSERT_TRUE(gg::quantize::ScaleDivider(step).fast);
  check_pair_codes_over_every_magnitude<GG_DTYPE_BF16>(kFiniteBf16Magnitudes);
}

TEST(ElementEncoders, E2m1PairCodesOverEveryFp16) {
  check_pair_codes_over_every_magnitude<GG_DTYPE_FP16>(kFiniteFp16Magnitudes);
}

}  // namespace
}  // namespace gg_test

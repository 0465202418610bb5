// Output rounding: a double result must reach bf16 / fp16 / fp32 with one
// rounding to nearest even. The hard cases sit next to a midpoint of the
// output format, where rounding through fp32 first would tie the wrong way.
#include <gtest/gtest.h>
#include <math.h>
#include <string.h>

#include <random>

#include "format_model.h"
#include "reference/output_rounding.h"

namespace gg::test {
namespace {

long double stored_value(gg_dtype dtype, double value) {
  uint32_t code = 0;
  if (dtype == GG_DTYPE_FP32) {
    float out;
    gg::ref::store_rounded(dtype, &out, 0, value);
    memcpy(&code, &out, sizeof out);
  } else {
    uint16_t out;
    gg::ref::store_rounded(dtype, &out, 0, value);
    code = out;
  }
  return model_value(dtype, code);
}

void expect_rounded_once(gg_dtype dtype, double value) {
  const long double want = model_round(dtype, value);
  const long double got = stored_value(dtype, value);
  EXPECT_TRUE(got == want || (isnan(got) && isnan(want)))
      << "dtype " << dtype << " value " << value << " got " << static_cast<double>(got) << " want "
      << static_cast<double>(want);
}

TEST(OutputRounding, AboveAMidpointThatFp32WouldTieDown) {
  // 1 + 2^-8 is the bf16 midpoint between 1 and 1 + 2^-7; the 2^-40 above it
  // is lost in fp32, after which a tie would go down to 1.
  const double value = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(stored_value(GG_DTYPE_BF16, value), 1.0L + ldexpl(1, -7));
  EXPECT_EQ(stored_value(GG_DTYPE_BF16, -value), -1.0L - ldexpl(1, -7));
  const double below = 1.0 + std::ldexp(1.0, -8) - std::ldexp(1.0, -40);
  EXPECT_EQ(stored_value(GG_DTYPE_BF16, below), 1.0L);
  // fp16: midpoint 1 + 2^-11.
  const double fp16_value = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -45);
  EXPECT_EQ(stored_value(GG_DTYPE_FP16, fp16_value), 1.0L + ldexpl(1, -10));
}

TEST(OutputRounding, NearEveryKindOfMidpoint) {
  std::mt19937 rng(11);
  for (gg_dtype dtype : {GG_DTYPE_BF16, GG_DTYPE_FP16, GG_DTYPE_FP32}) {
    for (int i = 0; i < 20000; ++i) {
      // A finite code and its neighbour above: their midpoint, exactly, and
      // nudged by a fraction of the gap far below fp32 precision.
      uint32_t code = random_code(dtype, CodeRange::kFull, rng) &
                      (dtype == GG_DTYPE_FP32 ? 0x7FFFFFFFu : 0x7FFFu);
      const long double low = model_value(dtype, code);
      const long double high = model_value(dtype, code + 1);
      if (!isfinite(high)) continue;
      const long double mid = (low + high) / 2;
      const long double gap = high - low;
      for (long double nudge : {0.0L, ldexpl(gap, -30), -ldexpl(gap, -30), ldexpl(gap, -3)}) {
        const double value = static_cast<double>(mid + nudge);
        if (static_cast<long double>(value) != mid + nudge) continue;  // not a double
        expect_rounded_once(dtype, value);
        expect_rounded_once(dtype, -value);
      }
    }
  }
}

TEST(OutputRounding, OverflowSubnormalsAndSpecials) {
  for (gg_dtype dtype : {GG_DTYPE_BF16, GG_DTYPE_FP16, GG_DTYPE_FP32}) {
    const long double max = model_max(dtype);
    const long double half_ulp = model_ulp(dtype, max) / 2;
    for (long double v : {max, max + half_ulp, max + half_ulp / 2, max + half_ulp * 3,
                          ldexpl(1, 2000), model_ulp(dtype, 0), model_ulp(dtype, 0) / 2,
                          model_ulp(dtype, 0) * 0.75L, ldexpl(1, -1074), 0.0L}) {
      expect_rounded_once(dtype, static_cast<double>(v));
      expect_rounded_once(dtype, -static_cast<double>(v));
    }
    EXPECT_TRUE(isinf(stored_value(dtype, INFINITY)));
    EXPECT_TRUE(isnan(stored_value(dtype, NAN)));
  }
}

}  // namespace
}  // namespace gg::test

// See format_model.h.
#include "format_model.h"

#include <math.h>
#include <string.h>

#include <map>
#include <stdexcept>
#include <utility>

namespace gg::test {
namespace {

struct Layout {
  int exp_bits;
  int man_bits;
  int bias;
  bool ieee_specials;  // all-ones exponent: inf / NaN
  bool e4m3_nan;       // only S.1111.111 is NaN
};

Layout layout_of(gg_dtype dtype) {
  switch (dtype) {
    case GG_DTYPE_BF16:
      return {8, 7, 127, true, false};
    case GG_DTYPE_FP16:
      return {5, 10, 15, true, false};
    case GG_DTYPE_FP32:
      return {8, 23, 127, true, false};
    case GG_DTYPE_E4M3:
      return {4, 3, 7, false, true};
    case GG_DTYPE_E5M2:
      return {5, 2, 15, true, false};
    case GG_DTYPE_E2M1:
      return {2, 1, 1, false, false};
  }
  throw std::logic_error("unknown dtype");
}

int code_bits(const Layout& f) { return 1 + f.exp_bits + f.man_bits; }

}  // namespace

long double model_value(gg_dtype dtype, uint32_t code) {
  const Layout f = layout_of(dtype);
  const uint32_t exp_mask = (1u << f.exp_bits) - 1;
  const uint32_t man_mask = (1u << f.man_bits) - 1;
  const bool negative = (code >> (f.exp_bits + f.man_bits)) & 1u;
  const uint32_t e = (code >> f.man_bits) & exp_mask;
  const uint32_t m = code & man_mask;
  long double magnitude;
  if (f.ieee_specials && e == exp_mask) {
    magnitude = m == 0 ? INFINITY : NAN;
  } else if (f.e4m3_nan && e == exp_mask && m == man_mask) {
    magnitude = NAN;
  } else if (e == 0) {
    magnitude = ldexpl(static_cast<long double>(m), 1 - f.bias - f.man_bits);
  } else {
    magnitude = ldexpl(static_cast<long double>((1u << f.man_bits) + m),
                       static_cast<int>(e) - f.bias - f.man_bits);
  }
  return negative ? -magnitude : magnitude;
}

long double model_e8m0(uint8_t code) {
  return code == 0xFF ? NAN : ldexpl(1.0L, static_cast<int>(code) - 127);
}

long double model_max(gg_dtype dtype) {
  const Layout f = layout_of(dtype);
  const int max_exp_field = (1 << f.exp_bits) - (f.ieee_specials ? 2 : 1);
  const int top_mantissa = (1 << f.man_bits) - (f.e4m3_nan ? 2 : 1);
  return ldexpl(static_cast<long double>((1 << f.man_bits) + top_mantissa),
                max_exp_field - f.bias - f.man_bits);
}

long double model_ulp(gg_dtype dtype, long double x) {
  const Layout f = layout_of(dtype);
  int exponent = 1 - f.bias;
  if (x != 0) {
    int frexp_exp;
    frexpl(fabsl(x), &frexp_exp);
    if (frexp_exp - 1 > exponent) exponent = frexp_exp - 1;
  }
  return ldexpl(1.0L, exponent - f.man_bits);
}

long double model_round(gg_dtype dtype, long double x) {
  if (isnan(x) || isinf(x) || x == 0) return x;
  const long double quantum = model_ulp(dtype, x);
  // x / quantum is exact (a power of two); nearbyintl rounds half to even.
  const long double rounded = nearbyintl(x / quantum) * quantum;
  const long double max = model_max(dtype);
  if (fabsl(rounded) <= max) return rounded;
  const bool saturates = !layout_of(dtype).ieee_specials || dtype == GG_DTYPE_E5M2;
  return copysignl(saturates ? max : INFINITY, x);
}

uint32_t model_code(gg_dtype dtype, long double value) {
  // Every code of the format by (value, sign), built once per format.
  static std::map<gg_dtype, std::map<std::pair<long double, bool>, uint32_t>> tables;
  auto& table = tables[dtype];
  if (table.empty()) {
    const uint32_t codes = 1u << code_bits(layout_of(dtype));
    for (uint32_t code = 0; code < codes; ++code) {
      const long double v = model_value(dtype, code);
      if (!isnan(v)) table.emplace(std::make_pair(v, static_cast<bool>(signbit(v))), code);
    }
  }
  const auto found = table.find(std::make_pair(value, static_cast<bool>(signbit(value))));
  if (found == table.end()) throw std::logic_error("value not representable");
  return found->second;
}

uint32_t random_code(gg_dtype dtype, CodeRange range, std::mt19937& rng) {
  const Layout f = layout_of(dtype);
  // All ones in the code's bits (32 for fp32, which a shift cannot reach).
  const uint32_t codes_max = ~uint32_t{0} >> (32 - code_bits(f));
  const int window =
      dtype == GG_DTYPE_BF16 || dtype == GG_DTYPE_FP16 || dtype == GG_DTYPE_FP32 ? 4 : 1;
  for (;;) {
    uint32_t code = std::uniform_int_distribution<uint32_t>(0, codes_max)(rng);
    if (range == CodeRange::kWindow && dtype != GG_DTYPE_E2M1) {
      const uint32_t sign = code >> (f.exp_bits + f.man_bits);
      const int e = std::uniform_int_distribution<int>(f.bias - window, f.bias + window)(rng);
      uint32_t m = code & ((1u << f.man_bits) - 1);
      // fp32 keeps 11 significant bits, like fp16, so products stay short.
      if (dtype == GG_DTYPE_FP32) m &= ~((1u << 13) - 1);
      code = (sign << (f.exp_bits + f.man_bits)) | (static_cast<uint32_t>(e) << f.man_bits) | m;
    }
    if (isfinite(model_value(dtype, code))) return code;
  }
}

uint32_t random_fp32_code(int bits, int min_exp, int max_exp, bool positive, std::mt19937& rng) {
  const uint32_t mantissa =
      std::uniform_int_distribution<uint32_t>(0, (1u << 23) - 1)(rng) & ~((1u << (24 - bits)) - 1);
  const int e = std::uniform_int_distribution<int>(min_exp, max_exp)(rng);
  const uint32_t sign = positive ? 0u : std::uniform_int_distribution<uint32_t>(0, 1)(rng);
  return (sign << 31) | (static_cast<uint32_t>(e + 127) << 23) | mantissa;
}

}  // namespace gg::test

// An independent model of the narrow float formats, for the tests.
//
// It knows each format only by its spec's parameters (exponent bits, mantissa
// bits, bias, which top codes are special) and evaluates the textbook formula
//   normal:    (-1)^s * 2^(e - bias) * (1 + m / 2^mbits)
//   subnormal: (-1)^s * 2^(1 - bias) * (m / 2^mbits)
// in long double, which holds every value of these formats and every fp32
// exactly. Rounding is a search in the table of representable values: the
// nearest one, the even code on a tie, decided by comparing with exact
// midpoints. It shares no code with src/formats.
#pragma once

#include <math.h>
#include <stdint.h>

#include <vector>

namespace gg_test {

enum class Top { kIeee, kNanOnly, kNone };

struct FormatModel {
  const char* name;
  int exponent_bits;
  int mantissa_bits;
  int bias;
  Top top;

  uint32_t sign_bit() const { return 1u << (exponent_bits + mantissa_bits); }
  uint32_t all_ones_exponent() const { return (1u << exponent_bits) - 1u; }
  uint32_t mantissa_mask() const { return (1u << mantissa_bits) - 1u; }

  // Largest finite magnitude code, from the spec's rules on the top codes.
  uint32_t max_code() const {
    const uint32_t all_ones = sign_bit() - 1u;
    switch (top) {
      case Top::kIeee:
        return ((all_ones_exponent() - 1u) << mantissa_bits) | mantissa_mask();
      case Top::kNanOnly:
        return all_ones - 1u;
      case Top::kNone:
        return all_ones;
    }
    return 0;
  }

  bool is_nan(uint32_t code) const {
    const uint32_t magnitude = code & (sign_bit() - 1u);
    if (top == Top::kIeee)
      return (magnitude >> mantissa_bits) == all_ones_exponent() &&
             (magnitude & mantissa_mask()) != 0;
    return top == Top::kNanOnly && magnitude == sign_bit() - 1u;
  }

  bool is_inf(uint32_t code) const {
    const uint32_t magnitude = code & (sign_bit() - 1u);
    return top == Top::kIeee && magnitude == all_ones_exponent() << mantissa_bits;
  }

  // Value of a magnitude code by the formula. Also defined one code past
  // max_code: the value the format would have with one more exponent.
  long double magnitude_value(uint32_t magnitude) const {
    const int e = static_cast<int>(magnitude >> mantissa_bits);
    const long double m = static_cast<long double>(magnitude & mantissa_mask());
    const long double scale = ldexpl(1.0L, -mantissa_bits);
    if (e == 0) return ldexpl(m * scale, 1 - bias);
    return ldexpl(1.0L + m * scale, e - bias);
  }

  // Signed value of a finite code.
  long double value(uint32_t code) const {
    const long double v = magnitude_value(code & (sign_bit() - 1u));
    return (code & sign_bit()) ? -v : v;
  }
};

inline const FormatModel kBf16{"bf16", 8, 7, 127, Top::kIeee};
inline const FormatModel kFp16{"fp16", 5, 10, 15, Top::kIeee};
inline const FormatModel kE4m3{"e4m3", 4, 3, 7, Top::kNanOnly};
inline const FormatModel kE5m2{"e5m2", 5, 2, 15, Top::kIeee};
inline const FormatModel kE2m1{"e2m1", 2, 1, 1, Top::kNone};

// The OCP MX v1.0 e8m0 scale: 2^(code - 127), code 0xFF NaN.
inline long double e8m0_value(uint32_t code) {
  return code == 0xFFu ? NAN : ldexpl(1.0L, static_cast<int>(code) - 127);
}

// An MX element under its block's e8m0 scale: value = element * 2^(code -
// 127), every element NaN under the NaN scale (OCP MX v1.0, section 6.3).
struct MxModel {
  FormatModel element;

  long double value(uint32_t element_code, uint32_t scale_code) const {
    return element.value(element_code) * e8m0_value(scale_code);
  }
};

inline const MxModel kMxfp4{kE2m1};

// Rounds finite values to a format by table search.
class Rounder {
 public:
  explicit Rounder(const FormatModel& format) : format_(format) {
    for (uint32_t code = 0; code <= format.max_code() + 1u; ++code) {
      values_.push_back(format.magnitude_value(code));
    }
  }

  // Code of finite x rounded to nearest, ties to the even code. Overflow
  // (past max after rounding) gives +-max when `saturate` or the format has
  // no special codes, else the code after max (infinity, or e4m3's NaN).
  uint32_t round(long double x, bool saturate) const {
    const uint32_t sign = signbit(x) ? format_.sign_bit() : 0u;
    const long double a = fabsl(x);
    const uint32_t max = format_.max_code();
    const uint32_t overflow = (saturate || format_.top == Top::kNone) ? max : max + 1u;
    if (a >= values_.back()) return sign | overflow;
    uint32_t above = 0;  // first code whose value is >= a
    uint32_t count = static_cast<uint32_t>(values_.size());
    while (count > 0) {
      const uint32_t half = count / 2;
      if (values_[above + half] < a) {
        above += half + 1;
        count -= half + 1;
      } else {
        count = half;
      }
    }
    uint32_t code = above;
    if (above > 0 && values_[above] != a) {
      const uint32_t below = above - 1;
      const long double midpoint = (values_[below] + values_[above]) / 2;
      if (a < midpoint || (a == midpoint && below % 2 == 0)) code = below;
    }
    return sign | (code > max ? overflow : code);
  }

  const std::vector<long double>& values() const { return values_; }

 private:
  FormatModel format_;
  std::vector<long double> values_;  // magnitude codes 0 .. max_code + 1
};

}  // namespace gg_test

// The number formats as the tests know them: values computed from each
// format's definition ((-1)^s * 2^(e - bias) * (1 + m / 2^mbits), subnormals,
// specials) in long double, and rounding to nearest even written from the
// same definition. Nothing here calls the library, so expectations built on
// it are independent of the code under test.
#pragma once

#include <stdint.h>

#include <random>

#include "groupgemm/groupgemm.h"

namespace gg::test {

// Value of one code of `dtype` (e2m1: the low nibble).
long double model_value(gg_dtype dtype, uint32_t code);
// Value of an e8m0 scale: 2^(code - 127); 0xFF is NaN.
long double model_e8m0(uint8_t code);

// x rounded to nearest even in `dtype`. bf16/fp16/fp32 overflow to inf;
// fp8 and e2m1 saturate to their largest finite value.
long double model_round(gg_dtype dtype, long double x);
// The code of a value of `dtype` (zeros keep their sign); the value must be
// representable and `dtype` at most 16 bits wide.
uint32_t model_code(gg_dtype dtype, long double value);
// Spacing of `dtype`'s values at magnitude |x| (the subnormal spacing below
// the normal range).
long double model_ulp(gg_dtype dtype, long double x);
// Largest finite value of `dtype`.
long double model_max(gg_dtype dtype);

// Random codes. kWindow keeps the exponent within 2^-4 .. 2^4 (fp8 and
// smaller formats: 2^-1 .. 2^2; e2m1: every code) so that sums of products
// stay exact in double; kFull draws every finite code.
enum class CodeRange { kWindow, kFull };
uint32_t random_code(gg_dtype dtype, CodeRange range, std::mt19937& rng);
// A code for an fp32 value with `bits` significant bits and exponent in
// [min_exp, max_exp], random sign unless `positive`.
uint32_t random_fp32_code(int bits, int min_exp, int max_exp, bool positive, std::mt19937& rng);

}  // namespace gg::test

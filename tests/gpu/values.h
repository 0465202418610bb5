// Host-side element codec for the dtypes a GEMM reads and writes (bf16, fp16,
// fp32), the codes of quantized operands (fp8, e2m1 two per byte), and the
// value sets the tests draw from.
//
// Conversions come from the CUDA toolkit's cuda_bf16.h / cuda_fp16.h host
// functions (round to nearest even), not from the library, so expectations
// never depend on the code under test. Poison is a quiet NaN with a payload
// of its own, so an element a kernel should not touch can be checked bit for
// bit, and one it should write but forgot shows up as NaN.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <random>

#include "groupgemm/groupgemm.h"

namespace gg::test {

size_t dtype_size(gg_dtype dtype);
// Bytes of `elements` elements of any dtype (e2m1: two per byte).
size_t storage_bytes(gg_dtype dtype, int64_t elements);
bool is_quantized_dtype(gg_dtype dtype);
// Relative spacing of the dtype's values: 2^-(significand bits - 1).
double dtype_epsilon(gg_dtype dtype);
// Smallest positive (subnormal) value of the dtype.
double dtype_min_subnormal(gg_dtype dtype);

// Element `index` of an array of `dtype`, exactly as stored.
float load_element(const void* base, gg_dtype dtype, int64_t index);
// Rounds `value` to nearest even and stores it at element `index`.
void store_element(void* base, gg_dtype dtype, int64_t index, float value);
void store_poison(void* base, gg_dtype dtype, int64_t index);

// Quantized operands hold codes: fp8 bytes, e2m1 nibbles (element i in the
// low nibble of byte i / 2 when i is even). Poison for fp8 is a NaN code;
// e2m1 has none, so its poison is -6, its largest magnitude, which a read
// of it would carry into a result.
uint8_t load_code(const void* base, gg_dtype dtype, int64_t index);
void store_code(void* base, gg_dtype dtype, int64_t index, uint8_t code);
void store_code_poison(void* base, gg_dtype dtype, int64_t index);
// A code of `dtype` drawn uniformly from the finite ones.
uint8_t draw_code(gg_dtype dtype, std::mt19937_64& rng);
// The code of the magnitude of `code`'s value (its sign bit cleared).
uint8_t magnitude_code(gg_dtype dtype, uint8_t code);

// What the inputs hold. kUniform: uniform in [-1, 1), rounded to the dtype.
// kSmallIntegers: integers in [-3, 3], so every product and every partial sum
// of a test-sized GEMM is exact in fp32 and the result is order-independent.
enum class ValueSet { kUniform, kSmallIntegers };

// One value of `set`; `wide` draws from a wider integer range ([-8, 8]) for
// the previous output and the bias, which enter the result once.
float draw_value(ValueSet set, bool wide, std::mt19937_64& rng);

}  // namespace gg::test

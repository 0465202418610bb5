// Host conversion between numbers and the element types a problem stores.
//
// The CUDA toolkit's own host conversions (cuda_bf16.h, cuda_fp16.h,
// cuda_fp8.h) do the rounding: round to nearest even, fp8 saturating to its
// largest finite value. The CLI's data then holds exactly representable
// values, so its fp64 products and the library see the same numbers.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "cli/args.h"
#include "groupgemm/groupgemm.h"

namespace gg::cli {

extern const std::vector<Name<gg_dtype>> kOutputDtypeNames;

// Whole-byte types only: e2m1, two a byte, is packed by its one user
// (host_data.cpp).
size_t element_bytes(gg_dtype dtype);
// Bytes `elements` elements take as stored (e2m1: two a byte, rounded up).
int64_t stored_bytes(int64_t elements, gg_dtype dtype);
void encode_element(gg_dtype dtype, double value, uint8_t* destination);
double decode_element(gg_dtype dtype, const uint8_t* source);
bool is_fp8(gg_dtype dtype);

// The value `value` becomes once stored as `dtype`.
inline double representable(gg_dtype dtype, double value) {
  uint8_t bytes[4];
  encode_element(dtype, value, bytes);
  return decode_element(dtype, bytes);
}

}  // namespace gg::cli

// Stores a double result into a bf16, fp16 or fp32 output with a single
// rounding to nearest even.
//
// fp32 is one conversion. For bf16 and fp16 a direct double -> fp32 -> 16-bit
// chain would round twice and can miss ties (a double just above a 16-bit
// midpoint may round to the midpoint in fp32, then to even: the wrong way).
// The first step therefore rounds to odd (truncate, then set the last bit if
// anything was dropped): fp32 keeps at least 13 more significand bits than
// either 16-bit format, down to their smallest subnormals, and a round-to-odd
// intermediate with two or more spare bits makes the second, nearest-even
// rounding exact.
#pragma once

#include <stdint.h>

#include "groupgemm/groupgemm.h"

namespace gg::ref {

// value rounded once to `dtype` (bf16, fp16 or fp32), stored at element `index` of base.
void store_rounded(gg_dtype dtype, void* base, int64_t index, double value);

}  // namespace gg::ref

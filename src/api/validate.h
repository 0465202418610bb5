// Validation of the descriptors: everything the host can see, never device
// memory. Each validator returns a normalized copy (every zero stride filled
// in), which is all that the paths below ever see, so nothing below the API
// re-validates. Failures set gg_last_error() to a message naming the field.
//
// A combination the API can express but the library does not implement (bf16
// x fp16 operands, a quantize output format without a rule) fails with
// GG_STATUS_NOT_SUPPORTED; a wrong argument with GG_STATUS_INVALID_ARGUMENT.
// What depends on the path (the alignment its vector loads need) is checked
// once the path is known, by check_operand_alignment.
#pragma once

#include <stddef.h>

#include "groupgemm/groupgemm.h"

namespace gg::api {

gg_status validate_gemm(const gg_gemm_desc* desc, gg_gemm_desc* normalized);

gg_status validate_quantize(const gg_quantize_desc* desc, gg_quantize_desc* normalized);

// Data pointers and row strides (in bytes) of lhs, rhs, out and bias must be
// multiples of `alignment` on path `path`. The matrices behind a pointer
// array are out of the host's sight: only their strides are checked.
gg_status check_operand_alignment(const gg_gemm_desc& desc, size_t alignment,
                                  size_t quantized_alignment, const char* path);

}  // namespace gg::api

// The quantization rules as the tests state them, from the formulas of
// formats/block_quant.h's documentation: fp32 divisions where the rule says
// fp32, exact arithmetic elsewhere, and the roundings of format_model.h. The
// tests compare the reference's scales and codes with these.
#pragma once

#include <stdint.h>

#include "groupgemm/groupgemm.h"

namespace gg::test {

// fp8 current scaling (and each 1x128, 128x128 or rowwise block's scale):
// amax / fp8 max in fp32, 1 unless positive and finite.
float model_fp8_scale(float amax, gg_dtype fp8);
// fp8(x / scale): an fp32 division, then nearest even, saturating.
uint32_t model_fp8_code(float x, float scale, gg_dtype fp8);

// MX: e8m0 code of X = floor(log2(amax)) - emax (8 for e4m3, 15 for e5m2,
// 2 for e2m1), clamped to [-127, 127]; amax 0 or subnormal gives code 0, inf
// or NaN the NaN code 0xFF.
uint8_t model_mx_scale(float amax, gg_dtype element);
// element(x / 2^X), one rounding, saturating.
uint32_t model_mx_code(float x, uint8_t scale, gg_dtype element);

// NVFP4: tensor scale amax / 2688 (fp32; 1 unless positive and finite);
// block scale ue4m3((block_amax / 6) / tensor_scale) with two fp32
// divisions; element e2m1(x / (block_scale * tensor_scale)) with an fp32
// product and division, 0 when the product is 0.
float model_nvfp4_tensor_scale(float amax);
uint8_t model_nvfp4_block_scale(float block_amax, float tensor_scale);
uint32_t model_nvfp4_code(float x, uint8_t block_scale, float tensor_scale);

}  // namespace gg::test

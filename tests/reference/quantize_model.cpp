// See quantize_model.h.
#include "quantize_model.h"

#include <float.h>
#include <math.h>

#include "format_model.h"

namespace gg::test {
namespace {

float usable_or_one(float scale) { return scale > 0.0f && scale <= FLT_MAX ? scale : 1.0f; }

// The code of x rounded in `dtype` (fp8 and e2m1 saturate).
uint32_t rounded_code(gg_dtype dtype, long double x) {
  return model_code(dtype, model_round(dtype, x));
}

}  // namespace

float model_fp8_scale(float amax, gg_dtype fp8) {
  return usable_or_one(amax / static_cast<float>(model_max(fp8)));
}

uint32_t model_fp8_code(float x, float scale, gg_dtype fp8) {
  const float quotient = x / scale;
  return rounded_code(fp8, quotient);
}

uint8_t model_mx_scale(float amax, gg_dtype element) {
  if (!isfinite(amax)) return 0xFF;
  if (amax < FLT_MIN) return 0;
  int exponent;
  frexpf(amax, &exponent);  // amax = f * 2^exponent, f in [0.5, 1)
  const int emax = element == GG_DTYPE_E4M3 ? 8 : element == GG_DTYPE_E5M2 ? 15 : 2;
  const int x = exponent - 1 - emax;
  return static_cast<uint8_t>((x < -127 ? -127 : x > 127 ? 127 : x) + 127);
}

uint32_t model_mx_code(float x, uint8_t scale, gg_dtype element) {
  return rounded_code(element, ldexpl(x, 127 - static_cast<int>(scale)));
}

float model_nvfp4_tensor_scale(float amax) { return usable_or_one(amax / 2688.0f); }

uint8_t model_nvfp4_block_scale(float block_amax, float tensor_scale) {
  const float per_element = block_amax / 6.0f;
  const float scale = per_element / tensor_scale;
  return static_cast<uint8_t>(rounded_code(GG_DTYPE_E4M3, scale));
}

uint32_t model_nvfp4_code(float x, uint8_t block_scale, float tensor_scale) {
  const float step = static_cast<float>(model_value(GG_DTYPE_E4M3, block_scale)) * tensor_scale;
  if (step == 0.0f) return 0;
  const float quotient = x / step;
  return rounded_code(GG_DTYPE_E2M1, quotient);
}

}  // namespace gg::test

// See output_rounding.h.
#include "reference/output_rounding.h"

#include <math.h>
#include <string.h>

#include "formats/codecs.h"

namespace gg::ref {
namespace {

float round_to_odd_float(double value) {
  float nearest = static_cast<float>(value);
  if (isnan(value) || static_cast<double>(nearest) == value) return nearest;
  // Truncate toward zero (this also turns an overflow to inf into FLT_MAX) ...
  if (fabs(static_cast<double>(nearest)) > fabs(value)) nearest = nextafterf(nearest, 0.0f);
  // ... and mark the dropped bits in the last place.
  uint32_t bits;
  memcpy(&bits, &nearest, sizeof bits);
  bits |= 1u;
  memcpy(&nearest, &bits, sizeof bits);
  return nearest;
}

}  // namespace

void store_rounded(gg_dtype dtype, void* base, int64_t index, double value) {
  if (dtype == GG_DTYPE_FP32) {
    static_cast<float*>(base)[index] = static_cast<float>(value);
    return;
  }
  const float odd = round_to_odd_float(value);
  static_cast<uint16_t*>(base)[index] =
      dtype == GG_DTYPE_BF16 ? fmt::float_to_bf16(odd) : fmt::float_to_fp16(odd);
}

}  // namespace gg::ref

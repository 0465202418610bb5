// Element conversions: see elements.h.
#include "cli/elements.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstring>

namespace gg::cli {

const std::vector<Name<gg_dtype>> kOutputDtypeNames = {
    {"bf16", GG_DTYPE_BF16}, {"fp16", GG_DTYPE_FP16}, {"fp32", GG_DTYPE_FP32}};

namespace {

__nv_fp8_interpretation_t fp8_kind(gg_dtype dtype) {
  return dtype == GG_DTYPE_E4M3 ? __NV_E4M3 : __NV_E5M2;
}

}  // namespace

bool is_fp8(gg_dtype dtype) { return dtype == GG_DTYPE_E4M3 || dtype == GG_DTYPE_E5M2; }

size_t element_bytes(gg_dtype dtype) {
  switch (dtype) {
    case GG_DTYPE_FP32:
      return 4;
    case GG_DTYPE_BF16:
    case GG_DTYPE_FP16:
      return 2;
    default:
      return 1;
  }
}

int64_t stored_bytes(int64_t elements, gg_dtype dtype) {
  if (dtype == GG_DTYPE_E2M1) return (elements + 1) / 2;
  return elements * static_cast<int64_t>(element_bytes(dtype));
}

void encode_element(gg_dtype dtype, double value, uint8_t* destination) {
  switch (dtype) {
    case GG_DTYPE_FP32: {
      const auto single = static_cast<float>(value);
      std::memcpy(destination, &single, sizeof single);
      return;
    }
    case GG_DTYPE_BF16: {
      const __nv_bfloat16_raw raw = __double2bfloat16(value);
      std::memcpy(destination, &raw.x, sizeof raw.x);
      return;
    }
    case GG_DTYPE_FP16: {
      const __half_raw raw = __double2half(value);
      std::memcpy(destination, &raw.x, sizeof raw.x);
      return;
    }
    default:
      *destination = __nv_cvt_double_to_fp8(value, __NV_SATFINITE, fp8_kind(dtype));
      return;
  }
}

double decode_element(gg_dtype dtype, const uint8_t* source) {
  switch (dtype) {
    case GG_DTYPE_FP32: {
      float single;
      std::memcpy(&single, source, sizeof single);
      return single;
    }
    case GG_DTYPE_BF16: {
      __nv_bfloat16_raw raw;
      std::memcpy(&raw.x, source, sizeof raw.x);
      return static_cast<double>(__bfloat162float(__nv_bfloat16(raw)));
    }
    case GG_DTYPE_FP16: {
      __half_raw raw;
      std::memcpy(&raw.x, source, sizeof raw.x);
      return static_cast<double>(__half2float(__half(raw)));
    }
    default:
      return static_cast<double>(
          __half2float(__half(__nv_cvt_fp8_to_halfraw(*source, fp8_kind(dtype)))));
  }
}

}  // namespace gg::cli

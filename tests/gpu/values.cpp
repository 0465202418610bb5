// See values.h.
#include "gpu/values.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <string.h>

#include <stdexcept>

namespace gg::test {
namespace {

constexpr uint16_t kBf16Poison = 0x7fc5;
constexpr uint16_t kFp16Poison = 0x7e05;
constexpr uint32_t kFp32Poison = 0x7fc0a5a5;

[[noreturn]] void unsupported(gg_dtype dtype) {
  throw std::invalid_argument("dtype " + std::to_string(static_cast<int>(dtype)) +
                              " is not a GEMM input or output dtype of these tests");
}

template <typename T>
T load_as(const void* base, int64_t index) {
  T value;
  memcpy(&value, static_cast<const char*>(base) + index * static_cast<int64_t>(sizeof(T)),
         sizeof(T));
  return value;
}

template <typename T>
void store_as(void* base, int64_t index, T value) {
  memcpy(static_cast<char*>(base) + index * static_cast<int64_t>(sizeof(T)), &value, sizeof(T));
}

}  // namespace

size_t dtype_size(gg_dtype dtype) {
  switch (dtype) {
    case GG_DTYPE_BF16:
    case GG_DTYPE_FP16:
      return 2;
    case GG_DTYPE_FP32:
      return 4;
    default:
      unsupported(dtype);
  }
}

double dtype_epsilon(gg_dtype dtype) {
  switch (dtype) {
    case GG_DTYPE_BF16:
      return 0x1p-7;
    case GG_DTYPE_FP16:
      return 0x1p-10;
    case GG_DTYPE_FP32:
      return 0x1p-23;
    default:
      unsupported(dtype);
  }
}

double dtype_min_subnormal(gg_dtype dtype) {
  switch (dtype) {
    case GG_DTYPE_BF16:
      return 0x1p-133;
    case GG_DTYPE_FP16:
      return 0x1p-24;
    case GG_DTYPE_FP32:
      return 0x1p-149;
    default:
      unsupported(dtype);
  }
}

float load_element(const void* base, gg_dtype dtype, int64_t index) {
  switch (dtype) {
    case GG_DTYPE_BF16:
      return __bfloat162float(load_as<__nv_bfloat16>(base, index));
    case GG_DTYPE_FP16:
      return __half2float(load_as<__half>(base, index));
    case GG_DTYPE_FP32:
      return load_as<float>(base, index);
    default:
      unsupported(dtype);
  }
}

void store_element(void* base, gg_dtype dtype, int64_t index, float value) {
  switch (dtype) {
    case GG_DTYPE_BF16:
      return store_as(base, index, __float2bfloat16_rn(value));
    case GG_DTYPE_FP16:
      return store_as(base, index, __float2half_rn(value));
    case GG_DTYPE_FP32:
      return store_as(base, index, value);
    default:
      unsupported(dtype);
  }
}

void store_poison(void* base, gg_dtype dtype, int64_t index) {
  switch (dtype) {
    case GG_DTYPE_BF16:
      return store_as(base, index, kBf16Poison);
    case GG_DTYPE_FP16:
      return store_as(base, index, kFp16Poison);
    case GG_DTYPE_FP32:
      return store_as(base, index, kFp32Poison);
    default:
      unsupported(dtype);
  }
}

float draw_value(ValueSet set, bool wide, std::mt19937_64& rng) {
  if (set == ValueSet::kUniform) return std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  const int bound = wide ? 8 : 3;
  return static_cast<float>(std::uniform_int_distribution<int>(-bound, bound)(rng));
}

}  // namespace gg::test

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
    case GG_DTYPE_E4M3:
    case GG_DTYPE_E5M2:
      return 1;
    default:
      unsupported(dtype);
  }
}

size_t storage_bytes(gg_dtype dtype, int64_t elements) {
  const size_t count = static_cast<size_t>(elements);
  return dtype == GG_DTYPE_E2M1 ? (count + 1) / 2 : count * dtype_size(dtype);
}

bool is_quantized_dtype(gg_dtype dtype) {
  return dtype == GG_DTYPE_E4M3 || dtype == GG_DTYPE_E5M2 || dtype == GG_DTYPE_E2M1;
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

uint8_t load_code(const void* base, gg_dtype dtype, int64_t index) {
  const uint8_t* bytes = static_cast<const uint8_t*>(base);
  if (dtype != GG_DTYPE_E2M1) return bytes[index];
  return static_cast<uint8_t>((bytes[index / 2] >> (4 * (index % 2))) & 0xFu);
}

void store_code(void* base, gg_dtype dtype, int64_t index, uint8_t code) {
  uint8_t* bytes = static_cast<uint8_t*>(base);
  if (dtype != GG_DTYPE_E2M1) {
    bytes[index] = code;
    return;
  }
  const int shift = 4 * static_cast<int>(index % 2);
  uint8_t& byte = bytes[index / 2];
  byte = static_cast<uint8_t>((byte & ~(0xFu << shift)) | ((code & 0xFu) << shift));
}

void store_code_poison(void* base, gg_dtype dtype, int64_t index) {
  // e4m3 NaN is S.1111.111; e5m2's S.11111.01 is one of its NaNs; e2m1 -6.
  const uint8_t poison = dtype == GG_DTYPE_E4M3 ? 0x7F : (dtype == GG_DTYPE_E5M2 ? 0x7D : 0xF);
  store_code(base, dtype, index, poison);
}

uint8_t draw_code(gg_dtype dtype, std::mt19937_64& rng) {
  for (;;) {
    const int bits = dtype == GG_DTYPE_E2M1 ? 4 : 8;
    const uint8_t code =
        static_cast<uint8_t>(std::uniform_int_distribution<int>(0, (1 << bits) - 1)(rng));
    const uint8_t magnitude = magnitude_code(dtype, code);
    const bool finite = dtype == GG_DTYPE_E2M1 || (dtype == GG_DTYPE_E4M3 ? magnitude != 0x7F
                                                                           : magnitude < 0x7C);
    if (finite) return code;
  }
}

uint8_t magnitude_code(gg_dtype dtype, uint8_t code) {
  return static_cast<uint8_t>(code & (dtype == GG_DTYPE_E2M1 ? 0x7u : 0x7Fu));
}

float draw_value(ValueSet set, bool wide, std::mt19937_64& rng) {
  if (set == ValueSet::kUniform) return std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  const int bound = wide ? 8 : 3;
  return static_cast<float>(std::uniform_int_distribution<int>(-bound, bound)(rng));
}

}  // namespace gg::test

// fp32 bit patterns in the tests, kept apart from the library's own helpers.
#pragma once

#include <stdint.h>
#include <string.h>

namespace gg_test {

inline uint32_t bits_of(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  return bits;
}

inline float float_of(uint32_t bits) {
  float x;
  memcpy(&x, &bits, sizeof(x));
  return x;
}

}  // namespace gg_test

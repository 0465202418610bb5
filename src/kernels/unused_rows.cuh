// GG_GEMM_ZERO_UNUSED_ROWS: a ragged-M output's rows past the last group,
// [end of the last group, M), are written as zeros by the GEMM kernel's own
// threads once their tiles are done, so the option costs no launch. No tile
// ever stores past its group's rows, so these stores meet no other write.
// Rows go out in 16-byte stores when every row starts 16-byte aligned and
// holds a whole number of them, else element by element (every output type
// is a multiple of 2 bytes).
#pragma once

#include <stdint.h>

#include "groupgemm/groupgemm.h"

namespace gg {

// Zeroes rows [first, end) of a row-major `dtype` matrix at `out` (rows
// `ld` elements apart, `cols` used in each), shared by `threads` threads of
// which the caller is number `thread`.
__device__ __forceinline__ void zero_rows(void* out, gg_dtype dtype, int64_t ld, int64_t cols,
                                          int64_t first, int64_t end, int64_t thread,
                                          int64_t threads) {
  if (first >= end) return;
  const int64_t element_bytes = dtype == GG_DTYPE_FP32 ? 4 : 2;
  const int64_t ld_bytes = ld * element_bytes;
  const int64_t row_bytes = cols * element_bytes;
  const bool wide =
      reinterpret_cast<uintptr_t>(out) % 16 == 0 && ld_bytes % 16 == 0 && row_bytes % 16 == 0;
  const int64_t unit = wide ? 16 : 2;
  const int64_t units_per_row = row_bytes / unit;
  const int64_t units = (end - first) * units_per_row;
  char* base = static_cast<char*>(out) + first * ld_bytes;
  for (int64_t i = thread; i < units; i += threads) {
    char* at = base + (i / units_per_row) * ld_bytes + (i % units_per_row) * unit;
    if (wide) {
      *reinterpret_cast<uint4*>(at) = make_uint4(0, 0, 0, 0);
    } else {
      *reinterpret_cast<uint16_t*>(at) = 0;
    }
  }
}

}  // namespace gg

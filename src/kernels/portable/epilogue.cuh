// Epilogue of the portable kernel: out = alpha * acc + beta * out + bias, in
// fp32, rounded once (to nearest even) to the output type, stored straight
// from the accumulator registers. With quantized operands scaled by row
// (GG_BLOCK_ROWWISE), alpha * acc is first multiplied by the row's and the
// column's fp32 scale (a ScaledOutputTile).
//
// In the mma.sync accumulator layout (mma_layout.h) a lane holds, for each
// 16x8 block, rows lane/4 and lane/4 + 8 at columns 2 (lane%4) and
// 2 (lane%4) + 1, so every access moves an adjacent pair; the first column of
// a pair is even and rows start 16-byte aligned, so a pair is always aligned.
// At the last column a pair shrinks to one element. Elements outside the
// tile's bounds (the group's rows, the output's columns) are neither read nor
// written, and out is read only when beta != 0: a NaN-poisoned output stays
// out of a result with beta = 0.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda/std/type_traits>
#include <stdint.h>

#include "groupgemm/groupgemm.h"
#include "kernels/portable/mma_layout.h"

namespace gg::portable {

// The part of one group's output a tile covers, and how to finish it.
struct OutputTile {
  void* matrix;        // out (ragged-M) or out[g] (ragged-K)
  gg_dtype type;       // bf16, fp16 or fp32
  int64_t row_stride;  // elements
  int64_t row_begin;   // first row of the tile
  int64_t row_end;     // rows at or past this are not the group's
  int64_t col_begin;
  int64_t col_end;
  float alpha;
  float beta;
  const void* bias;  // the group's bias row [N], or null
  gg_dtype bias_type;
};

// The output of a tile with quantized operands: rowwise scales too. Output
// row r is scaled by row_scales[r * row_scale_stride] and column c by
// col_scales[c * col_scale_stride] (null: 1).
struct ScaledOutputTile : OutputTile {
  const float* row_scales;
  int64_t row_scale_stride;
  const float* col_scales;
  int64_t col_scale_stride;
};

// Elements `index` and index + 1 (when `pair`) of a bf16, fp16 or fp32 array.
__device__ __forceinline__ float2 load_pair(const void* base, gg_dtype type, int64_t index,
                                            bool pair) {
  switch (type) {
    case GG_DTYPE_BF16: {
      const __nv_bfloat16* p = static_cast<const __nv_bfloat16*>(base) + index;
      if (pair) return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(p));
      return make_float2(__bfloat162float(*p), 0.0f);
    }
    case GG_DTYPE_FP16: {
      const __half* p = static_cast<const __half*>(base) + index;
      if (pair) return __half22float2(*reinterpret_cast<const __half2*>(p));
      return make_float2(__half2float(*p), 0.0f);
    }
    default: {
      const float* p = static_cast<const float*>(base) + index;
      if (pair) return *reinterpret_cast<const float2*>(p);
      return make_float2(*p, 0.0f);
    }
  }
}

__device__ __forceinline__ void store_pair(void* base, gg_dtype type, int64_t index, float2 v,
                                           bool pair) {
  switch (type) {
    case GG_DTYPE_BF16: {
      __nv_bfloat16* p = static_cast<__nv_bfloat16*>(base) + index;
      if (pair) {
        *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(v.x, v.y);
      } else {
        *p = __float2bfloat16_rn(v.x);
      }
      return;
    }
    case GG_DTYPE_FP16: {
      __half* p = static_cast<__half*>(base) + index;
      if (pair) {
        *reinterpret_cast<__half2*>(p) = __floats2half2_rn(v.x, v.y);
      } else {
        *p = __float2half_rn(v.x);
      }
      return;
    }
    default: {
      float* p = static_cast<float*>(base) + index;
      if (pair) {
        *reinterpret_cast<float2*>(p) = v;
      } else {
        *p = v.x;
      }
      return;
    }
  }
}

// Finishes output (row, col) and, where `pair`, (row, col + 1) from their
// accumulators x and y, and stores them; both inside the tile's bounds.
template <class Tile>
__device__ __forceinline__ void finish_pair(const Tile& out, int64_t row, int64_t col, float x,
                                            float y, bool pair) {
  const int64_t index = row * out.row_stride + col;
  float2 v = make_float2(out.alpha * x, out.alpha * y);
  if constexpr (cuda::std::is_same_v<Tile, ScaledOutputTile>) {
    const float row_scale =
        out.row_scales != nullptr ? out.row_scales[row * out.row_scale_stride] : 1.0f;
    v.x *= row_scale;
    v.y *= row_scale;
    if (out.col_scales != nullptr) {
      v.x *= out.col_scales[col * out.col_scale_stride];
      if (pair) v.y *= out.col_scales[(col + 1) * out.col_scale_stride];
    }
  }
  if (out.beta != 0.0f) {
    const float2 old = load_pair(out.matrix, out.type, index, pair);
    v.x += out.beta * old.x;
    v.y += out.beta * old.y;
  }
  if (out.bias != nullptr) {
    const float2 bias = load_pair(out.bias, out.bias_type, col, pair);
    v.x += bias.x;
    v.y += bias.y;
  }
  store_pair(out.matrix, out.type, index, v, pair);
}

// Finishes one warp's accumulators: acc[i][j] is the 16x8 block at tile rows
// warp_row0 + 16 i, columns warp_col0 + 8 j.
template <class Tile, int kBlocksM, int kBlocksN>
__device__ __forceinline__ void store_tile(const float (&acc)[kBlocksM][kBlocksN][4],
                                           const Tile& out, int warp_row0, int warp_col0,
                                           int lane) {
#pragma unroll
  for (int i = 0; i < kBlocksM; ++i) {
#pragma unroll
    for (int j = 0; j < kBlocksN; ++j) {
#pragma unroll
      for (int e = 0; e < 4; e += 2) {  // accumulators e and e + 1: adjacent columns
        const int64_t row = out.row_begin + warp_row0 + 16 * i + accumulator_row(lane, e);
        const int64_t col = out.col_begin + warp_col0 + 8 * j + accumulator_col(lane, e);
        if (row >= out.row_end || col >= out.col_end) continue;
        finish_pair(out, row, col, acc[i][j][e], acc[i][j][e + 1], col + 1 < out.col_end);
      }
    }
  }
}

}  // namespace gg::portable

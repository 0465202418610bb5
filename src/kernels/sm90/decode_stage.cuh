// The decode stage of the Hopper kernel's quantized operands: one k-step of
// a tile's codes, landed by TMA in the stage's raw area (densely: rows of
// 64 bytes for fp8, 32 for e2m1), decoded into the stage's bf16 tile,
// 128-byte swizzled, where its wgmmas read it as they read a bf16
// operand's (decoded_steps.h says how, and why it is exact). Run by the 256
// consumer threads on each full stage before its wgmmas; a consumer barrier
// and an async-proxy fence follow, so the wgmmas of both consumers see
// every chunk. Each thread takes 16-byte chunks of codes, the same rows'
// every step of a tile: its loads of them read consecutive bytes with the
// warp's other threads, and its 16-byte stores land on 8 rows' distinct
// swizzled chunks, so neither conflicts in shared memory.
// What depends only on the tile (each chunk's row, whether it lies inside
// the operand, where its row of block scales starts) is worked out once a
// tile; a step then costs its chunks' loads, decode and stores, and one
// scale load per block. A chunk's block-scale codes come from global memory
// (L2): each thread loads those of its chunks one step ahead, so that they
// arrive under the step's wgmmas rather than in front of its decode.
// Rows past the operand and depths past K are stored as zeros, their
// scales never read; K is a whole number of chunks (16-byte rows), so a
// chunk lies wholly inside or outside. Along a ragged-K group's tokens
// (kTokens; decoded_steps.h) depths count from the group's first token,
// each row's codes start `shift` elements into its box, and the elements
// of a group's last chunk past its end are zeroed.
#pragma once

#include <stdint.h>

#include "kernels/portable/operand_decode.h"
#include "kernels/sm90/decoded_steps.h"

namespace gg::sm90 {

// One operand tile's decode, for a thread of kThreads.
template <int kRows, int kThreads>
struct StepDecoder {
  // Chunks a thread takes: of kRows x 4 fp8 ones (16 elements) or kRows x 2
  // e2m1 ones (32 elements, two block-scale codes each with NV16 blocks).
  static constexpr int kSlots = (kRows * 4 + kThreads - 1) / kThreads;
  const uint8_t* scale_rows[kSlots];  // each chunk's row of block scales
  uint32_t inside = 0;                // bit n: chunk n's row lies inside the operand
  uint8_t codes[2 * kSlots] = {};     // the next step's block-scale codes

  template <int kChunkElements>
  struct Chunks {
    static constexpr int kPerRow = kChunkElements == 32 ? 2 : 4;
    static constexpr int kCount = kRows * kPerRow;
    static constexpr int kPerThread = (kCount + kThreads - 1) / kThreads;
    static __device__ __forceinline__ bool exists(int n, int thread) {
      return kCount % kThreads == 0 || thread + n * kThreads < kCount;
    }
    static __device__ __forceinline__ int row(int n, int thread) {
      return (thread + n * kThreads) / kPerRow;
    }
    static __device__ __forceinline__ int chunk(int n, int thread) {
      return (thread + n * kThreads) % kPerRow;
    }
  };

  template <int kChunkElements>
  __device__ __forceinline__ void begin_tile_of(const portable::QuantOperand& q,
                                                const uint8_t* scales, int64_t outer0,
                                                int64_t outer_end, int thread) {
    using C = Chunks<kChunkElements>;
    inside = 0;
#pragma unroll
    for (int n = 0; n < C::kPerThread; ++n) {
      const int64_t outer = outer0 + C::row(n, thread);
      if (C::exists(n, thread) && outer < outer_end) inside |= 1u << n;
      scale_rows[n] = scales + outer * q.scale_row_length;
    }
  }

  // The tile whose first row is outer index `outer0` (`scales`: its
  // group's block-scale matrix, unused without block scales; along tokens,
  // from the group's first block column).
  __device__ __forceinline__ void begin_tile(const portable::QuantOperand& q,
                                             const uint8_t* scales, int64_t outer0,
                                             int64_t outer_end, int thread) {
    if (q.dtype == GG_DTYPE_E2M1) {
      begin_tile_of<32>(q, scales, outer0, outer_end, thread);
    } else {
      begin_tile_of<16>(q, scales, outer0, outer_end, thread);
    }
  }

  template <int kChunkElements>
  __device__ __forceinline__ void load_scales_of(const portable::QuantOperand& q, int depth0,
                                                 int depth_end, int thread) {
    using C = Chunks<kChunkElements>;
#pragma unroll
    for (int n = 0; n < C::kPerThread; ++n) {
      const int depth = depth0 + C::chunk(n, thread) * kChunkElements;
      if ((inside >> n & 1u) != 0 && depth < depth_end) {
        // An e2m1 chunk's second half: the next NV16 block, or the same MX32
        // one; none where a group's last chunk ends in its first half (its
        // elements are zeros, and a NaN scale would not keep them so).
        const ChunkScaleEntries entries = chunk_scale_entries(q, 0, depth);
        codes[2 * n] = scale_rows[n][entries.first];
        if (kChunkElements == 32) {
          codes[2 * n + 1] = depth + 16 < depth_end ? scale_rows[n][entries.second] : codes[2 * n];
        }
      }
    }
  }

  // Loads the block-scale codes of this thread's chunks of the k-step from
  // depth0; none without block scales.
  __device__ __forceinline__ void load_scales(const portable::QuantOperand& q, int depth0,
                                              int depth_end, int thread) {
    if (portable::decoded_block_shift(q.scaling) == 0) return;
    if (q.dtype == GG_DTYPE_E2M1) {
      load_scales_of<32>(q, depth0, depth_end, thread);
    } else {
      load_scales_of<16>(q, depth0, depth_end, thread);
    }
  }

  // kKind: 0 e2m1, 1 e4m3, 2 e5m2; kMx: MX32 blocks (known here, so their
  // factors take a few integer operations), else the scaling q names.
  // kTokens: along a ragged-K group's tokens, each row's codes `shift`
  // elements into its box (decoded_steps.h).
  template <int kKind, bool kMx, bool kTokens>
  __device__ __forceinline__ void decode_of(const portable::QuantOperand& q, const uint8_t* raw,
                                            uint8_t* tile, int depth0, int depth_end, int shift,
                                            int thread) const {
    constexpr int kChunkElements = kKind == 0 ? 32 : 16;
    using C = Chunks<kChunkElements>;
    constexpr gg_dtype kDtype = kKind == 0 ? GG_DTYPE_E2M1 : kKind == 1 ? GG_DTYPE_E4M3
                                                                         : GG_DTYPE_E5M2;
    // Bytes of a row's codes in the stage: a step's, or a token box's.
    constexpr int kRawRow = (kKind == 0 ? 32 : 64) + (kTokens ? 16 : 0);
    constexpr int kOutChunks = kChunkElements / 8;  // 16-byte bf16 chunks per chunk of codes
    const gg_block_scaling scaling = kMx ? GG_BLOCK_MX32 : q.scaling;
#pragma unroll
    for (int n = 0; n < C::kPerThread; ++n) {
      if (!C::exists(n, thread)) break;
      const int row = C::row(n, thread);
      const int chunk = C::chunk(n, thread);
      uint32_t words[16];
      const int depth = depth0 + chunk * kChunkElements;
      if ((inside >> n & 1u) != 0 && depth < depth_end) {
        uint32_t chunk_codes[4];
        if constexpr (kTokens) {
          token_chunk_codes(raw + row * kRawRow, chunk * 16, shift, kDtype, depth_end - depth,
                            chunk_codes);
        } else {
          const uint4 packed = *reinterpret_cast<const uint4*>(raw + row * kRawRow + chunk * 16);
          chunk_codes[0] = packed.x, chunk_codes[1] = packed.y;
          chunk_codes[2] = packed.z, chunk_codes[3] = packed.w;
        }
        if constexpr (kKind == 0) {
          decode_e2m1_chunk(chunk_codes, scale_bf16(scaling, codes[2 * n]),
                            scale_bf16(scaling, codes[2 * n + 1]), words);
        } else {
          decode_fp8_chunk<kKind == 2>(chunk_codes, scaling, codes[2 * n], words);
        }
      } else {
#pragma unroll
        for (int w = 0; w < 16; ++w) words[w] = 0;
      }
#pragma unroll
      for (int j = 0; j < kOutChunks; ++j) {
        *reinterpret_cast<uint4*>(tile + swizzled_chunk_offset(row, chunk * kOutChunks + j)) =
            make_uint4(words[4 * j], words[4 * j + 1], words[4 * j + 2], words[4 * j + 3]);
      }
    }
  }

  // Decodes the k-step from depth0 into `tile`, its scales loaded by
  // load_scales (kTokens: `shift` as decode_of takes it; else unused).
  template <bool kTokens>
  __device__ __forceinline__ void decode(const portable::QuantOperand& q, const uint8_t* raw,
                                         uint8_t* tile, int depth0, int depth_end, int shift,
                                         int thread) const {
    const bool mx = q.scaling == GG_BLOCK_MX32;
    if (q.dtype == GG_DTYPE_E2M1) {
      decode_of<0, false, kTokens>(q, raw, tile, depth0, depth_end, shift, thread);
    } else if (q.dtype == GG_DTYPE_E4M3) {
      if (mx) {
        decode_of<1, true, kTokens>(q, raw, tile, depth0, depth_end, shift, thread);
      } else {
        decode_of<1, false, kTokens>(q, raw, tile, depth0, depth_end, shift, thread);
      }
    } else if (mx) {
      decode_of<2, true, kTokens>(q, raw, tile, depth0, depth_end, shift, thread);
    } else {
      decode_of<2, false, kTokens>(q, raw, tile, depth0, depth_end, shift, thread);
    }
  }
};

}  // namespace gg::sm90

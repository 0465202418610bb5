// The decode stage of the Hopper kernel's quantized operands: one k-step of
// a tile's codes, landed by TMA in the stage's raw area (densely: rows of
// 64 bytes for fp8, 32 for e2m1), decoded into the stage's bf16 tile,
// 128-byte swizzled, where its wgmmas read it as they read a bf16
// operand's (decoded_steps.h says how, and why it is exact). Run by the 256
// consumer threads on each full stage before its wgmmas; a consumer barrier
// and an async-proxy fence follow, so the wgmmas of both consumers see
// every chunk. Each thread takes 16-byte chunks of codes: its loads of them
// read consecutive bytes with the warp's other threads, and its 16-byte
// stores land on 8 rows' distinct swizzled chunks, so neither conflicts in
// shared memory. Rows past the operand (`outer_end`) and depths past K are
// stored as zeros, their scales never read; K is a whole number of chunks
// (16-byte rows), so a chunk lies wholly inside or outside.
#pragma once

#include <stdint.h>

#include "kernels/portable/operand_decode.h"
#include "kernels/sm90/decoded_steps.h"

namespace gg::sm90 {

template <int kRows, int kChunkElements, int kThreads>
__device__ __forceinline__ void decode_rows(const portable::QuantOperand& q, const uint8_t* scales,
                                            const uint8_t* raw, uint8_t* tile, int64_t outer0,
                                            int64_t outer_end, int64_t depth0, int64_t depth_end,
                                            int thread) {
  constexpr int kRawRow = kChunkElements == 32 ? 32 : 64;  // bytes of a row's codes
  constexpr int kChunksPerRow = kRawRow / 16;
  constexpr int kOutChunks = kChunkElements / 8;  // 16-byte bf16 chunks per chunk of codes
  constexpr int kChunks = kRows * kChunksPerRow;
#pragma unroll
  for (int n = 0; n < (kChunks + kThreads - 1) / kThreads; ++n) {
    const int i = thread + n * kThreads;
    if (kChunks % kThreads != 0 && i >= kChunks) break;
    const int row = i / kChunksPerRow;
    const int chunk = i % kChunksPerRow;
    const int64_t depth = depth0 + chunk * kChunkElements;
    uint32_t words[16];
    if (outer0 + row < outer_end && depth < depth_end) {
      const uint4 codes4 = *reinterpret_cast<const uint4*>(raw + row * kRawRow + chunk * 16);
      const uint32_t codes[4] = {codes4.x, codes4.y, codes4.z, codes4.w};
      const ChunkScales s = chunk_scales(q, scales, outer0 + row, depth);
      if constexpr (kChunkElements == 32) {
        decode_e2m1_chunk(codes, s.first, s.second, words);
      } else {
        decode_fp8_chunk(q.dtype == GG_DTYPE_E5M2, codes, s.first, words);
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

// Decodes one k-step of a kRows-row operand tile whose first row is outer
// index `outer0`, from depth `depth0` (`scales`: the group's block-scale
// matrix, unused without block scales).
template <int kRows, int kThreads>
__device__ __forceinline__ void decode_step(const portable::QuantOperand& q, const uint8_t* scales,
                                            const uint8_t* raw, uint8_t* tile, int64_t outer0,
                                            int64_t outer_end, int64_t depth0, int64_t depth_end,
                                            int thread) {
  if (q.dtype == GG_DTYPE_E2M1) {
    decode_rows<kRows, 32, kThreads>(q, scales, raw, tile, outer0, outer_end, depth0, depth_end,
                                     thread);
  } else {
    decode_rows<kRows, 16, kThreads>(q, scales, raw, tile, outer0, outer_end, depth0, depth_end,
                                     thread);
  }
}

}  // namespace gg::sm90

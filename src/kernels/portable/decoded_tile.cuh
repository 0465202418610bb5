// One quantized operand of a CTA tile, decoded into bf16 in shared memory.
//
// Design. The quantized elements (fp8, or e2m1 packed two per byte) and
// their block scales are read from global memory by the CTA's threads,
// each element multiplied by its block scale exactly (operand_decode.h) and
// stored as bf16 in the same stage layout a bf16 operand's cp.async copies
// fill (operand_layout.h, 16 bytes = 8 elements per store). So the mainloop,
// the ldmatrix loads and the mma.sync of the bf16 kernel run unchanged on
// the decoded stage: a format is this decode, not a kernel of its own.
// The stores are plain st.shared, made visible by the mainloop's barrier
// before the slice is read, like the cp.async copies beside them.
// The value of each element code and each block-scale code comes from a
// table in shared memory that the CTA fills once (fill_values) with
// operand_decode.h's own functions: one load per element rather than the
// decode arithmetic, which, inlined for every element of every chunk, made
// a kernel of 56k instructions whose mainloop overflowed the instruction
// cache (on an H100 the decode kernels ran at 1-3% of bf16).
//
// Bounds are those of a copied operand: elements outside the operand's
// extent are stored as zeros, and so are the depths before a ragged-K
// group's start (their block-scale entry belongs to another group).
// A chunk wholly inside whose codes are aligned for it is read with one
// 8-byte (fp8) or 4-byte (e2m1) load; any other chunk code by code. So a
// quantized operand may have any row stride and start (the path's
// quantized_operand_alignment is 1): a columnwise copy of 72 tokens, say.
#pragma once

#include <cuda_bf16.h>
#include <stdint.h>

#include "kernels/portable/gemm_params.h"
#include "kernels/portable/operand_decode.h"
#include "kernels/portable/operand_layout.h"
#include "kernels/portable/operand_tile.cuh"

namespace gg::portable {

// How one group's quantized operand decodes.
struct DecodeFormat {
  gg_dtype dtype;
  gg_block_scaling scaling;
  const uint8_t* scales;  // the group's block-scale matrix (MX32, NV16), else unused
  BlockScaleIndex scale_index;
};

// Where one quantized operand of the current tile lives and how it decodes.
struct DecodeSource {
  const uint8_t* matrix;  // the group's matrix: element 0 (byte 0)
  OperandExtent extent;
  DecodeFormat format;
};

template <int kOuter, int kDepth, Major kMajor>
struct DecodedTile {
  // The stage is a bf16 operand's: the same bytes, ldmatrix loads.
  using Stage = OperandTile<__nv_bfloat16, kOuter, kDepth, kMajor>;
  using Layout = typename Stage::Layout;
  using Element = uint8_t;
  using Source = DecodeSource;
  static constexpr bool kDecoded = true;
  static constexpr int kChunk = Stage::kChunk;  // 8 elements
  static constexpr int kBytes = Stage::kBytes;
  static constexpr bool kDepthMajor = Layout::kDepthMajor;

  // Group g's format of quantized operand q; `group` is g's record (its
  // start and first token block, for blocks along ragged-K tokens).
  static __device__ __forceinline__ DecodeFormat format(const QuantOperand& q, int64_t g,
                                                        const GroupRecord& group) {
    const int shift = decoded_block_shift(q.scaling);
    return DecodeFormat{
        q.dtype, q.scaling, shift > 0 ? group_scales(q, g) : nullptr,
        BlockScaleIndex{shift, q.scale_row_length, q.token_blocks, group.start, group.tile_begin}};
  }

  // Values of this operand's codes: [0, 256) element codes, [256, 512)
  // block-scale codes (1 without block scales). One array per tile type,
  // so an lhs and an rhs of different formats each have theirs.
  static __device__ __forceinline__ float* values() {
    __shared__ float table[512];
    return table;
  }

  // Fills values() for quantized operand q; all kThreads threads call it,
  // and a barrier follows before the first copy.
  template <int kThreads>
  static __device__ __forceinline__ void fill_values(const QuantOperand& q, int thread) {
    float* table = values();
    for (int i = thread; i < 512; i += kThreads) {
      table[i] = i < 256 ? element_value(q.dtype, static_cast<uint8_t>(i))
                         : block_scale_value(q.scaling, static_cast<uint8_t>(i - 256));
    }
  }

  // Eight element codes from one aligned load: fp8 codes in bytes 0-7, e2m1
  // codes in nibbles 0-7 of the low word.
  static __device__ __forceinline__ uint64_t load_codes(const DecodeSource& s, int64_t element) {
    if (s.format.dtype == GG_DTYPE_E2M1) {
      return *reinterpret_cast<const uint32_t*>(s.matrix + element / 2);
    }
    return *reinterpret_cast<const uint64_t*>(s.matrix + element);
  }

  // Whether the eight codes from `element` on can be read by load_codes.
  static __device__ __forceinline__ bool loadable(const DecodeSource& s, int64_t element) {
    if (s.format.dtype == GG_DTYPE_E2M1) {
      return element % 2 == 0 && reinterpret_cast<uintptr_t>(s.matrix + element / 2) % 4 == 0;
    }
    return reinterpret_cast<uintptr_t>(s.matrix + element) % 8 == 0;
  }

  static __device__ __forceinline__ uint8_t code_at(const DecodeSource& s, int64_t element) {
    return s.format.dtype == GG_DTYPE_E2M1 ? fmt::e2m1_get(s.matrix, element) : s.matrix[element];
  }

  static __device__ __forceinline__ uint8_t packed_code(gg_dtype dtype, uint64_t codes, int e) {
    return static_cast<uint8_t>(dtype == GG_DTYPE_E2M1 ? (codes >> (4 * e)) & 0xFu
                                                       : (codes >> (8 * e)) & 0xFFu);
  }

  static __device__ __forceinline__ bool inside(const OperandExtent& x, int64_t outer,
                                                int64_t depth) {
    return outer < x.outer_end && depth >= x.depth_begin && depth < x.depth_end;
  }

  // Eight elements of a chunk wholly inside the operand, their codes loaded:
  // a depth-major chunk reads at most two block scales (a block is 16 or 32
  // deep), an outer-major one eight consecutive entries of one scale row.
  static __device__ __forceinline__ void decode_whole(const DecodeSource& s, const ChunkOrigin& o,
                                                      uint64_t codes, const float* table,
                                                      uint32_t (&words)[kChunk / 2]) {
    const bool blocked = s.format.scale_index.block_shift > 0;
    const BlockScaleIndex& index = s.format.scale_index;
    const int64_t entry = blocked ? index.entry(kDepthMajor, o.outer, o.depth) : 0;
    float scale = 1.0f;       // depth-major: elements before `split`
    float next_scale = 1.0f;  // and from `split` on
    int64_t split = kChunk;
    if (kDepthMajor && blocked) {
      split = index.depths_left_in_block(o.depth);
      scale = table[256 + s.format.scales[entry]];
      next_scale = split < kChunk ? table[256 + s.format.scales[entry + 1]] : scale;
    }
#pragma unroll
    for (int e = 0; e < kChunk; ++e) {
      float element_scale = e < split ? scale : next_scale;
      if (!kDepthMajor && blocked) element_scale = table[256 + s.format.scales[entry + e]];
      const uint16_t bits = scaled_to_bf16(table[packed_code(s.format.dtype, codes, e)],
                                           element_scale);
      words[e / 2] = e % 2 == 0 ? bits : words[e / 2] | static_cast<uint32_t>(bits) << 16;
    }
  }

  // Eight elements of a chunk at the operand's edge or with unaligned codes,
  // one by one (zeros outside the operand); a loop, not unrolled, so that the
  // rare case costs little code.
  static __device__ __forceinline__ void decode_edge(const DecodeSource& s, const ChunkOrigin& o,
                                                     int64_t first, const float* table,
                                                     uint32_t (&words)[kChunk / 2]) {
    const bool blocked = s.format.scale_index.block_shift > 0;
    uint64_t low = 0;
    uint64_t high = 0;
#pragma unroll 1
    for (int e = 0; e < kChunk; ++e) {
      const int64_t outer = kDepthMajor ? o.outer : o.outer + e;
      const int64_t depth = kDepthMajor ? o.depth + e : o.depth;
      uint64_t bits = 0;
      if (inside(s.extent, outer, depth)) {
        const float scale =
            blocked ? table[256 + s.format.scales[s.format.scale_index.entry(kDepthMajor, outer,
                                                                              depth)]]
                    : 1.0f;
        bits = scaled_to_bf16(table[code_at(s, first + e)], scale);
      }
      if (e < 4) {
        low |= bits << (16 * e);
      } else {
        high |= bits << (16 * (e - 4));
      }
    }
    words[0] = static_cast<uint32_t>(low);
    words[1] = static_cast<uint32_t>(low >> 32);
    words[2] = static_cast<uint32_t>(high);
    words[3] = static_cast<uint32_t>(high >> 32);
  }

  // Decodes this thread's chunks of depths [depth0, depth0 + kDepth) into
  // the stage at shared address `stage`. All kThreads threads call it. The
  // codes of all its chunks are loaded first, so that their loads are in
  // flight together, then decoded (decode_to_bf16's product and rounding,
  // the values from the tables).
  template <int kThreads>
  static __device__ __forceinline__ void copy(const DecodeSource& s, int64_t depth0,
                                              uint32_t stage, int thread) {
    static_assert(Layout::kChunks % kThreads == 0, "every thread decodes as many chunks");
    constexpr int kPerThread = Layout::kChunks / kThreads;
    const float* table = values();
    uint64_t codes[kPerThread];
    bool vector[kPerThread];
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const ChunkOrigin o = Layout::chunk_origin(s.extent, depth0, thread + i * kThreads);
      const int64_t last_outer = kDepthMajor ? o.outer : o.outer + kChunk - 1;
      const int64_t last_depth = kDepthMajor ? o.depth + kChunk - 1 : o.depth;
      const int64_t first = first_element(s, o);
      vector[i] = inside(s.extent, last_outer, last_depth) && inside(s.extent, o.outer, o.depth) &&
                  loadable(s, first);
      codes[i] = vector[i] ? load_codes(s, first) : 0;
    }
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const ChunkOrigin o = Layout::chunk_origin(s.extent, depth0, thread + i * kThreads);
      uint32_t words[kChunk / 2];
      if (vector[i]) {
        decode_whole(s, o, codes[i], table, words);
      } else {
        decode_edge(s, o, first_element(s, o), table, words);
      }
      st_shared_16(stage + static_cast<uint32_t>(o.stage_element * 2), words);
    }
  }

  // The element index of a chunk's first element in the group's matrix.
  static __device__ __forceinline__ int64_t first_element(const DecodeSource& s,
                                                          const ChunkOrigin& o) {
    return kDepthMajor ? o.outer * s.extent.row_stride + o.depth
                       : o.depth * s.extent.row_stride + o.outer;
  }

  static __device__ __forceinline__ void load_block(uint32_t stage, int outer0, int depth0,
                                                    int lane, uint32_t (&r)[4]) {
    Stage::load_block(stage, outer0, depth0, lane, r);
  }
};

}  // namespace gg::portable

// The grouped quantizer's tile I/O (grouped_quantize.cu): the input tile's
// layout in shared memory, its loads from global memory (16-byte vectors,
// batched so that several are in flight; or copied ahead by cp.async into a
// staging buffer) and the stores of coded output (vectors, words, and
// nibble-wise atomics where a byte is shared with another group).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "formats/codecs.h"
#include "groupgemm/groupgemm.h"
#include "kernels/quantize/quantize_params.h"

namespace gg::quantize {

constexpr int kThreads = 256;
constexpr int kTk = kTileCols;  // tile columns, also the shared-memory row pitch in floats
constexpr int kPerThread = 16;  // elements a thread codes at once (one 16-byte fp8 store)

__device__ inline uint32_t abs_bits(float x) { return fmt::float_bits(x) & ~fmt::kF32SignBit; }

// ---- the tile in shared memory ----

// Float index of tile element (r, c): rows of kTk floats, the 16-byte chunk
// q of a row stored at q ^ ((q >> 2) & 7). A rowwise thread reading chunks
// 4j + i (j = 0..7 over eight lanes) and 32 lanes reading 32 consecutive
// columns of one row both hit 32 distinct banks.
__device__ __forceinline__ int tile_index(int r, int c) {
  const int q = c >> 2;
  return r * kTk + (((q ^ ((q >> 2) & 7)) << 2) | (c & 3));
}

struct Tile {
  int32_t g;
  int64_t token0;       // first token (absolute row of the input matrix)
  int64_t row0;         // first token relative to the group start
  int rows;             // valid tokens
  int64_t k0;           // first K element
  int cols;             // valid K elements
  int64_t k_tile;       // k0 / 128
  int64_t first_block;  // columnwise: the group's first block column (ragged)
};

template <gg_dtype kIn>
struct InputType;
template <>
struct InputType<GG_DTYPE_BF16> {
  using Word = uint16_t;
  __device__ static float decode(uint16_t v) { return fmt::bf16_to_float(v); }
};
template <>
struct InputType<GG_DTYPE_FP16> {
  using Word = uint16_t;
  // The reference's decoder: NaN payloads survive, as the amax words see them.
  __device__ static float decode(uint16_t v) { return fmt::fp16_to_float(v); }
};
template <>
struct InputType<GG_DTYPE_FP32> {
  using Word = float;
  __device__ static float decode(float v) { return v; }
};

// Loads `kVec` consecutive elements of one row (those at or past `valid`
// read as 0, which no amax notices).
template <gg_dtype kIn, int kVec>
__device__ void load_vector(const void* input, int64_t index, int valid, float x[kVec]) {
  using In = InputType<kIn>;
  using Word = typename In::Word;
  const Word* source = static_cast<const Word*>(input) + index;
  if (valid >= kVec && reinterpret_cast<uintptr_t>(source) % 16 == 0) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(source));
    Word w[kVec];
    memcpy(w, &v, sizeof v);
#pragma unroll
    for (int i = 0; i < kVec; ++i) x[i] = In::decode(w[i]);
    return;
  }
#pragma unroll
  for (int i = 0; i < kVec; ++i) x[i] = i < valid ? In::decode(source[i]) : 0.0f;
}

// The input of slot (r, c) of tile t when it comes as one aligned vector,
// else null.
template <gg_dtype kIn, int kVec>
__device__ const void* vector_source(const QuantizeParams& p, const Tile& t, int64_t input_base,
                                     int r, int c) {
  if (r >= t.rows || c >= t.cols || t.cols - c < kVec) return nullptr;
  const auto* source = static_cast<const typename InputType<kIn>::Word*>(p.input) + input_base +
                       (t.token0 + r) * p.input_stride + c;
  return reinterpret_cast<uintptr_t>(source) % 16 == 0 ? source : nullptr;
}

// Calls sink(r, c, x) with the kVec elements x of every 16-byte slot (r, c)
// of tile t that this thread owns (zeros outside the tile's valid rows and
// columns). The loads of kBatch slots are issued before any is used, so
// that they are in flight together; slots that are not whole aligned
// vectors (ragged edges) are read element by element afterwards.
template <int TM, gg_dtype kIn, int kMaxBatch, class Sink>
__device__ void for_each_slot(const QuantizeParams& p, const Tile& t, int64_t input_base,
                              Sink&& sink) {
  using In = InputType<kIn>;
  constexpr int kVec = kIn == GG_DTYPE_FP32 ? 4 : 8;  // 16 bytes
  constexpr int kPerRow = kTk / kVec;
  constexpr int kJobs = TM * kPerRow / kThreads;
  constexpr int kBatch = kMaxBatch < kJobs ? kMaxBatch : kJobs;
  static_assert(kJobs % kBatch == 0, "batches split the slots evenly");
#pragma unroll 1
  for (int first = 0; first < kJobs; first += kBatch) {
    uint4 v[kBatch];
    bool whole[kBatch];
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int job = static_cast<int>(threadIdx.x) + (first + i) * kThreads;
      const void* source =
          vector_source<kIn, kVec>(p, t, input_base, job / kPerRow, (job % kPerRow) * kVec);
      whole[i] = source != nullptr;
      v[i] = whole[i] ? __ldg(static_cast<const uint4*>(source)) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int job = static_cast<int>(threadIdx.x) + (first + i) * kThreads;
      const int r = job / kPerRow;
      const int c = (job % kPerRow) * kVec;
      float x[kVec];
      if (whole[i]) {
        typename In::Word w[kVec];
        memcpy(w, &v[i], sizeof v[i]);
#pragma unroll
        for (int e = 0; e < kVec; ++e) x[e] = In::decode(w[e]);
      } else {
#pragma unroll
        for (int e = 0; e < kVec; ++e) x[e] = 0.0f;
        if (r < t.rows && c < t.cols) {
          load_vector<kIn, kVec>(p.input, input_base + (t.token0 + r) * p.input_stride + c,
                                 t.cols - c, x);
        }
      }
      sink(r, c, x);
    }
  }
}

// The tile (zeros outside its valid rows and columns) into shared memory;
// returns this thread's max of |x| bits over what it loaded.
template <int TM, gg_dtype kIn>
__device__ uint32_t load_tile(const QuantizeParams& p, const Tile& t, int64_t input_base,
                              float* tile) {
  constexpr int kVec = kIn == GG_DTYPE_FP32 ? 4 : 8;
  uint32_t amax = 0;
  for_each_slot<TM, kIn, 4>(p, t, input_base, [&](int r, int c, const float* x) {
#pragma unroll
    for (int h = 0; h < kVec; h += 4) {
      *reinterpret_cast<float4*>(tile + tile_index(r, c + h)) =
          make_float4(x[h], x[h + 1], x[h + 2], x[h + 3]);
    }
#pragma unroll
    for (int i = 0; i < kVec; ++i) amax = max(amax, abs_bits(x[i]));
  });
  return amax;
}

// ---- stores ----

// ORs `nibble` into the element at byte `byte`, half `high`, leaving the
// other half to whoever owns it: the word-wide atomics cannot tear it.
__device__ inline void set_nibble(uint8_t* byte, bool high, uint32_t nibble) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(byte);
  unsigned int* word = reinterpret_cast<unsigned int*>(address & ~uintptr_t{3});
  const unsigned shift = static_cast<unsigned>((address & 3u) * 8u + (high ? 4u : 0u));
  atomicAnd(word, ~(0xFu << shift));
  atomicOr(word, (nibble & 0xFu) << shift);
}

// Stores the codes of 4 fp8 or 8 e2m1 consecutive output elements from
// element `first` (even for e2m1), packed little-endian in `codes`; `valid`
// has a bit per element that is this thread's to write.
template <int kBits>
__device__ void store_word(uint8_t* data, int64_t first, uint32_t codes, uint32_t valid) {
  constexpr bool kE2m1 = kBits == 4;
  constexpr uint32_t kAll = kE2m1 ? 0xFFu : 0xFu;
  uint8_t* bytes = data + (kE2m1 ? first / 2 : first);
  if (valid == kAll && reinterpret_cast<uintptr_t>(bytes) % 4 == 0) {
    *reinterpret_cast<uint32_t*>(bytes) = codes;
    return;
  }
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    const uint8_t byte = static_cast<uint8_t>(codes >> (8 * b));
    if (!kE2m1) {
      if (valid & (1u << b)) bytes[b] = byte;
      continue;
    }
    const uint32_t halves = (valid >> (2 * b)) & 3u;
    if (halves == 3u) {
      bytes[b] = byte;
    } else if (halves == 1u) {
      set_nibble(bytes + b, false, byte & 0xFu);
    } else if (halves == 2u) {
      set_nibble(bytes + b, true, byte >> 4);
    }
  }
}

// The codes of 16 consecutive output elements from element `first`, in
// kBits * 16 / 32 words; `valid` has a bit per element. One vector store
// when all are valid and the address is aligned, else words.
template <int kBits>
__device__ void store16(uint8_t* data, int64_t first, const uint32_t* words, uint32_t valid) {
  constexpr int kWords = kBits * kPerThread / 32;
  constexpr int kPerWord = 32 / kBits;
  uint8_t* bytes = data + first * kBits / 8;
  if (valid == 0xFFFFu && reinterpret_cast<uintptr_t>(bytes) % (4 * kWords) == 0) {
    if constexpr (kWords == 4) {
      *reinterpret_cast<uint4*>(bytes) = make_uint4(words[0], words[1], words[2], words[3]);
    } else {
      *reinterpret_cast<uint2*>(bytes) = make_uint2(words[0], words[1]);
    }
    return;
  }
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    const uint32_t mask = (valid >> (w * kPerWord)) & ((1u << kPerWord) - 1u);
    if (mask != 0) store_word<kBits>(data, first + w * kPerWord, words[w], mask);
  }
}

// Element index of the tile's (token 0, k0) in the input.
__device__ inline int64_t input_base_of(const QuantizeParams& p, const Tile& t) {
  return (p.stacked ? t.g * p.input_matrix_stride : 0) + t.k0;
}

// ---- staged loads ----
// At TM = 32 the next tile's input is copied by cp.async into a staging
// buffer while the current tile is coded, so that loads stay in flight
// through the compute phases. A thread copies and later decodes the same
// 16-byte slots of every tile, so no barrier guards the buffer; the slots
// that are not whole aligned vectors inside the tile (ragged edges) are read
// directly when decoded.
constexpr int kStageBytes = 32 * kTk * 4;

__device__ inline void cp_async16(void* shared, const void* global) {
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global));
}

template <int TM, gg_dtype kIn>
__device__ void stage_tile(const QuantizeParams& p, const Tile& t, uint4* stage) {
  constexpr int kVec = kIn == GG_DTYPE_FP32 ? 4 : 8;
  constexpr int kPerRow = kTk / kVec;
  const int64_t input_base = input_base_of(p, t);
#pragma unroll
  for (int it = 0; it < TM * kPerRow / kThreads; ++it) {
    const int job = static_cast<int>(threadIdx.x) + it * kThreads;
    const void* source = vector_source<kIn, kVec>(p, t, input_base, job / kPerRow,
                                                  (job % kPerRow) * kVec);
    if (source != nullptr) cp_async16(stage + job, source);
  }
  asm volatile("cp.async.commit_group;\n" ::);
}

// The staged tile into the fp32 tile, as load_tile; returns this thread's
// max of |x| bits.
template <int TM, gg_dtype kIn>
__device__ uint32_t unstage_tile(const QuantizeParams& p, const Tile& t, const uint4* stage,
                                 float* tile) {
  using In = InputType<kIn>;
  constexpr int kVec = kIn == GG_DTYPE_FP32 ? 4 : 8;
  constexpr int kPerRow = kTk / kVec;
  const int64_t input_base = input_base_of(p, t);
  asm volatile("cp.async.wait_all;\n" ::: "memory");
  uint32_t amax = 0;
#pragma unroll
  for (int it = 0; it < TM * kPerRow / kThreads; ++it) {
    const int job = static_cast<int>(threadIdx.x) + it * kThreads;
    const int r = job / kPerRow;
    const int c = (job % kPerRow) * kVec;
    float x[kVec];
    if (vector_source<kIn, kVec>(p, t, input_base, r, c) != nullptr) {
      const uint4 v = stage[job];
      typename In::Word w[kVec];
      memcpy(w, &v, sizeof v);
#pragma unroll
      for (int i = 0; i < kVec; ++i) x[i] = In::decode(w[i]);
    } else {
#pragma unroll
      for (int i = 0; i < kVec; ++i) x[i] = 0.0f;
      if (r < t.rows && c < t.cols) {
        load_vector<kIn, kVec>(p.input, input_base + (t.token0 + r) * p.input_stride + c,
                               t.cols - c, x);
      }
    }
#pragma unroll
    for (int h = 0; h < kVec; h += 4) {
      *reinterpret_cast<float4*>(tile + tile_index(r, c + h)) =
          make_float4(x[h], x[h + 1], x[h + 2], x[h + 3]);
    }
#pragma unroll
    for (int i = 0; i < kVec; ++i) amax = max(amax, abs_bits(x[i]));
  }
  return amax;
}

template <int TM>
__device__ void stage_any(const QuantizeParams& p, const Tile& t, uint4* stage) {
  switch (p.input_type) {
    case GG_DTYPE_BF16: stage_tile<TM, GG_DTYPE_BF16>(p, t, stage); break;
    case GG_DTYPE_FP16: stage_tile<TM, GG_DTYPE_FP16>(p, t, stage); break;
    default: stage_tile<TM, GG_DTYPE_FP32>(p, t, stage); break;
  }
}

}  // namespace gg::quantize

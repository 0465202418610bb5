// The grouped quantizer's tile I/O (quantize_kernel.cuh): the input tile as
// it lies in shared memory (raw input words in panels of 128-byte rows,
// 16-byte chunks swizzled by row), its copy from global memory by cp.async
// (zero-filled past the tile's valid rows and columns), the 16-byte loads of
// the amax pass, the element types' packed magnitudes, and the stores of
// coded output (vectors, words, bytes, and nibble-wise atomics where a byte
// is shared with another group).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "formats/codecs.h"
#include "groupgemm/groupgemm.h"
#include "kernels/quantize/quantize_params.h"

namespace gg::quantize {

// A tile is kTm tokens x kTk K-elements, kTm = 64, 128 or 256 by the plan
// (plan/quantize_plan.h), coded by a CTA of 2 kTm threads: a columnwise
// thread takes a column pair of 32 tokens, a rowwise thread runs of two rows.
constexpr int kTk = kTileCols;  // K elements per tile
template <int kTm>
constexpr int kThreadsOf = 2 * kTm;
template <int kTm>
constexpr int kWarpsOf = kThreadsOf<kTm> / 32;

struct Tile {
  int32_t g;
  int64_t token0;       // first token (absolute row of the input matrix)
  int64_t row0;         // first token relative to the group start
  int rows;             // valid tokens
  int64_t k0;           // first K element
  int cols;             // valid K elements
  int64_t k_tile;       // k0 / kTk
  int64_t first_block;  // columnwise: the group's first block column (ragged)
  // A span tile under row scales whose rows cross groups: each row's scale
  // is its own group's (fill_row_scales), not group g's.
  bool mixed_groups;
};

// ---- input element types ----
// A Pair is two adjacent elements of a row as they lie in memory; a Mag the
// magnitudes of a pair, kept so that their maximum, turned into fp32 bits,
// is the max of |x| bits over the pair's elements (the order the
// reference's amax_accumulate uses, NaN above inf). For 16-bit inputs that
// is the 15-bit patterns, two to a word, maxed by one SIMD instruction:
// both formats decode monotonically in them, NaN payloads included.
// low_finite / high_finite are low / high for pairs known to hold finite
// elements (fp16: the conversion instruction, exact for every finite value).
template <gg_dtype kIn>
struct InputType;

template <>
struct InputType<GG_DTYPE_BF16> {
  using Word = uint16_t;
  using Pair = uint32_t;
  using Mag = uint32_t;
  __device__ static float low(Pair p) { return fmt::bits_float(p << 16); }
  __device__ static float high(Pair p) { return fmt::bits_float(p & 0xFFFF0000u); }
  __device__ static float low_finite(Pair p) { return low(p); }
  __device__ static float high_finite(Pair p) { return high(p); }
  __device__ static Mag magnitude(Pair p) { return p & 0x7FFF7FFFu; }
  __device__ static Mag max(Mag a, Mag b) { return __vmaxu2(a, b); }
  __device__ static Mag zero() { return 0; }
  __device__ static uint32_t low_bits(Mag m) { return m << 16; }
  __device__ static uint32_t high_bits(Mag m) { return m & 0xFFFF0000u; }
};

template <>
struct InputType<GG_DTYPE_FP16> {
  using Word = uint16_t;
  using Pair = uint32_t;
  using Mag = uint32_t;
  // The reference's decoder: NaN payloads survive, as the amax words see them.
  __device__ static float decode(uint32_t v) { return fmt::fp16_to_float(static_cast<uint16_t>(v)); }
  __device__ static float low(Pair p) { return decode(p & 0xFFFFu); }
  __device__ static float high(Pair p) { return decode(p >> 16); }
  __device__ static float convert(uint32_t v) {
    float x;
    asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(static_cast<uint16_t>(v)));
    return x;
  }
  __device__ static float low_finite(Pair p) { return convert(p & 0xFFFFu); }
  __device__ static float high_finite(Pair p) { return convert(p >> 16); }
  __device__ static Mag magnitude(Pair p) { return p & 0x7FFF7FFFu; }
  __device__ static Mag max(Mag a, Mag b) { return __vmaxu2(a, b); }
  __device__ static Mag zero() { return 0; }
  __device__ static uint32_t low_bits(Mag m) { return fmt::float_bits(decode(m & 0xFFFFu)); }
  __device__ static uint32_t high_bits(Mag m) { return fmt::float_bits(decode(m >> 16)); }
};

template <>
struct InputType<GG_DTYPE_FP32> {
  using Word = uint32_t;
  using Pair = uint2;
  using Mag = uint2;
  __device__ static float low(Pair p) { return fmt::bits_float(p.x); }
  __device__ static float high(Pair p) { return fmt::bits_float(p.y); }
  __device__ static float low_finite(Pair p) { return low(p); }
  __device__ static float high_finite(Pair p) { return high(p); }
  __device__ static Mag magnitude(Pair p) { return make_uint2(p.x & 0x7FFFFFFFu, p.y & 0x7FFFFFFFu); }
  __device__ static Mag max(Mag a, Mag b) { return make_uint2(::max(a.x, b.x), ::max(a.y, b.y)); }
  __device__ static Mag zero() { return make_uint2(0, 0); }
  __device__ static uint32_t low_bits(Mag m) { return m.x; }
  __device__ static uint32_t high_bits(Mag m) { return m.y; }
};

// Facts of the tile layout for one input type. A stage holds the tile as
// panels: panel p is the elements of the tile's K range that fall in bytes
// 128 p .. 128 p + 127 of every row, kTm rows of 128 bytes.
template <gg_dtype kIn>
struct TileShape {
  using In = InputType<kIn>;
  using Word = typename In::Word;
  static constexpr int kBytes = static_cast<int>(sizeof(Word));
  static constexpr int kVec = 16 / kBytes;              // elements per 16-byte chunk
  static constexpr int kPairsPerVec = kVec / 2;
  static constexpr int kRowChunks = kTk / kVec;         // 16-byte chunks per tile row
  static constexpr int kPanelChunks = 8;                // 16-byte chunks of a panel row
  template <int kTm>
  static constexpr int kTileBytes = kTm * kTk * kBytes;
};

// Where 16-byte chunk c of tile row r lies in a stage (in chunks from its
// start): in row r of panel c / 8, at slot (c mod 8) XOR (r mod 8). Readers
// meet every bank once per phase when a phase's eight lanes read one chunk
// of eight rows (the rowwise runs), 128 bytes of one row (the columnwise
// pairs) or eight chunks of one row (the copies in).
template <gg_dtype kIn, int kTm>
__device__ __forceinline__ int tile_chunk(int r, int c) {
  constexpr int kPanelChunks = TileShape<kIn>::kPanelChunks;
  return ((c / kPanelChunks) * kTm + r) * kPanelChunks + ((c % kPanelChunks) ^ (r % 8));
}

// fp32 bits of the larger magnitude of a Mag.
template <gg_dtype kIn>
__device__ uint32_t max_bits(typename InputType<kIn>::Mag m) {
  using In = InputType<kIn>;
  return ::max(In::low_bits(m), In::high_bits(m));
}

// Mag of a 16-byte chunk of pairs.
template <gg_dtype kIn>
__device__ typename InputType<kIn>::Mag chunk_magnitude(const uint4& v) {
  using In = InputType<kIn>;
  using Pair = typename In::Pair;
  constexpr int kPairs = TileShape<kIn>::kPairsPerVec;
  Pair pairs[kPairs];
  memcpy(pairs, &v, sizeof v);
  typename In::Mag m = In::magnitude(pairs[0]);
#pragma unroll
  for (int i = 1; i < kPairs; ++i) m = In::max(m, In::magnitude(pairs[i]));
  return m;
}

// ---- loads ----

// Chunk (r, c) of tile t as one 16-byte value: elements at or past the
// tile's valid columns, and rows at or past its valid rows, read as zero
// (which no amax notices). Element by element when the input rows are not
// 16-byte aligned.
template <gg_dtype kIn>
__device__ const typename InputType<kIn>::Word* chunk_source(const QuantizeParams& p,
                                                             const Tile& t, int64_t input_base,
                                                             int r, int c) {
  return static_cast<const typename InputType<kIn>::Word*>(p.input) + input_base +
         (t.token0 + r) * p.input_stride + c;
}

template <gg_dtype kIn>
__device__ uint4 load_chunk_by_elements(const typename InputType<kIn>::Word* source, int valid) {
  using Shape = TileShape<kIn>;
  typename Shape::Word w[Shape::kVec];
#pragma unroll
  for (int i = 0; i < Shape::kVec; ++i) w[i] = i < valid ? source[i] : 0;
  uint4 v;
  memcpy(&v, w, sizeof v);
  return v;
}

// Elements of chunk (r, c) inside the tile: 0 past its rows or columns.
__device__ inline int chunk_valid(const Tile& t, int r, int c, int vec) {
  if (r >= t.rows || c >= t.cols) return 0;
  return t.cols - c < vec ? t.cols - c : vec;
}

__device__ inline void cp_async16(void* shared, const void* global, int source_bytes) {
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(global),
               "r"(source_bytes));
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// Starts the copy of tile t into `stage` (kTileBytes, laid out by tile_chunk):
// rows up to the next multiple of 32 past the valid ones are zero-filled
// (the columnwise writer reads them), later rows are left alone (nobody
// reads them). With aligned input rows every chunk of a valid row is one
// cp.async whose source size is its valid bytes; otherwise chunks are
// loaded element by element and stored here, synchronously. The descriptor's fields are read
// once: it may live in shared memory, which the copies write, so the
// compiler would reload them after every copy.
template <gg_dtype kIn, int kTm>
__device__ void fill_tile(const QuantizeParams& p, const Tile& t, int64_t input_base,
                          uint4* stage) {
  using Shape = TileShape<kIn>;
  constexpr int kThreads = kThreadsOf<kTm>;
  // Threads a row of chunks, and the rows from one of a thread's to the
  // next: at least 8, so that a thread's rows keep their swizzle (fp32
  // tiles of 64 tokens: 16 threads a row, each taking two of its chunks).
  constexpr int kRowThreads = Shape::kRowChunks < kThreads / 8 ? Shape::kRowChunks : kThreads / 8;
  constexpr int kRowStep = kThreads / kRowThreads;
  static_assert(kRowStep % 8 == 0 && Shape::kRowChunks % kRowThreads == 0,
                "a thread's rows keep their swizzle");
  const int rows = t.rows;
  const int cols = t.cols;
  const int filled_rows = (rows + 31) / 32 * 32;
  const int r0 = static_cast<int>(threadIdx.x) / kRowThreads;
  // A thread's rows keep r0's swizzle: its chunk steps down its panel.
  constexpr int kChunkStep = kRowStep * Shape::kPanelChunks;
#pragma unroll
  for (int j = 0; j < Shape::kRowChunks / kRowThreads; ++j) {
    const int c_index = static_cast<int>(threadIdx.x) % kRowThreads + j * kRowThreads;
    const int c = c_index * Shape::kVec;
    const int column_valid = c < cols ? min(Shape::kVec, cols - c) : 0;
    const auto* row = chunk_source<kIn>(p, t, input_base, r0, c);
    const auto* anywhere = chunk_source<kIn>(p, t, input_base, 0, 0);  // for copies of nothing
    const int64_t step = kRowStep * p.input_stride;
    uint4* chunk = stage + tile_chunk<kIn, kTm>(r0, c_index);
    if (p.aligned_input) {
      // The same source size for every row of the tile: the copies of a
      // column past the valid ones read nothing from one place; the zero
      // rows are plain stores.
      const int bytes = column_valid * Shape::kBytes;
      const auto* source = column_valid > 0 ? row : anywhere;
      const int64_t source_step = column_valid > 0 ? step : 0;
      int r = r0;
#pragma unroll 4
      for (; r < rows; r += kRowStep, chunk += kChunkStep, source += source_step) {
        cp_async16(chunk, source, bytes);
      }
      for (; r < filled_rows; r += kRowStep, chunk += kChunkStep) *chunk = make_uint4(0, 0, 0, 0);
    } else {
#pragma unroll 4
      for (int r = r0; r < filled_rows; r += kRowStep, chunk += kChunkStep, row += step) {
        *chunk = load_chunk_by_elements<kIn>(row, r < rows ? column_valid : 0);
      }
    }
  }
}

// Chunk (r, c) of tile t read straight from global memory (the amax pass).
template <gg_dtype kIn>
__device__ uint4 load_chunk(const QuantizeParams& p, const Tile& t, int64_t input_base, int r,
                            int c) {
  using Shape = TileShape<kIn>;
  const int valid = chunk_valid(t, r, c, Shape::kVec);
  if (valid == 0) return make_uint4(0, 0, 0, 0);
  const auto* source = chunk_source<kIn>(p, t, input_base, r, c);
  if (p.aligned_input && valid == Shape::kVec) return __ldg(reinterpret_cast<const uint4*>(source));
  return load_chunk_by_elements<kIn>(source, valid);
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

// The byte that holds output element `element` (even for e2m1) of `data`.
template <int kBits>
__device__ uint8_t* code_byte(uint8_t* data, int64_t element) {
  return data + (kBits == 4 ? element / 2 : element);
}

// Stores the codes of 4 fp8 or 8 e2m1 consecutive output elements from the
// one at `bytes` (a byte boundary), packed little-endian in `codes`; `valid`
// has a bit per element that is this thread's to write.
template <int kBits>
__device__ void store_word(uint8_t* bytes, uint32_t codes, uint32_t valid) {
  constexpr bool kE2m1 = kBits == 4;
  constexpr uint32_t kAll = kE2m1 ? 0xFFu : 0xFu;
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

// The codes of kCount consecutive output elements from the one at `bytes`
// (a byte boundary), in kBits * kCount / 32 words (at least one); `valid`
// has a bit per element. One vector store when all are valid and the
// address is aligned, else words, bytes or nibbles.
template <int kBits, int kCount>
__device__ void store_codes(uint8_t* bytes, const uint32_t* words, uint32_t valid) {
  constexpr int kTotalBits = kBits * kCount;
  constexpr int kWords = kTotalBits >= 32 ? kTotalBits / 32 : 1;
  constexpr int kPerWord = 32 / kBits;
  constexpr uint32_t kAll = kCount >= 32 ? ~0u : (1u << kCount) - 1u;
  constexpr int kAlignment = kTotalBits / 8 < 16 ? kTotalBits / 8 : 16;
  if (valid == kAll && reinterpret_cast<uintptr_t>(bytes) % kAlignment == 0) {
    if constexpr (kTotalBits == 256) {
      uint4* vectors = reinterpret_cast<uint4*>(bytes);
      vectors[0] = make_uint4(words[0], words[1], words[2], words[3]);
      vectors[1] = make_uint4(words[4], words[5], words[6], words[7]);
      return;
    } else if constexpr (kTotalBits == 128) {
      *reinterpret_cast<uint4*>(bytes) = make_uint4(words[0], words[1], words[2], words[3]);
      return;
    } else if constexpr (kTotalBits == 64) {
      *reinterpret_cast<uint2*>(bytes) = make_uint2(words[0], words[1]);
      return;
    } else if constexpr (kTotalBits == 32) {
      *reinterpret_cast<uint32_t*>(bytes) = words[0];
      return;
    } else if constexpr (kTotalBits == 16) {
      *reinterpret_cast<uint16_t*>(bytes) = static_cast<uint16_t>(words[0]);
      return;
    }
  }
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    const uint32_t mask =
        (valid >> (w * kPerWord)) & (kPerWord >= 32 ? ~0u : (1u << kPerWord) - 1u);
    if (mask != 0) store_word<kBits>(bytes + w * 4, words[w], mask);
  }
}

// A chunk's codes from byte b (0-15) on, in the low bits: word b / 4 by
// selects rather than an index that would put the caller's words in local
// memory, less its bytes before b.
__device__ inline uint32_t chunk_bits(const uint32_t* words, int b) {
  const uint32_t word =
      (b & 8) ? ((b & 4) ? words[3] : words[2]) : ((b & 4) ? words[1] : words[0]);
  return word >> (8 * (b & 3));
}

// Bytes [a, b) of the 16-byte chunk at `chunk` (16-byte aligned) from its
// codes `words`, in aligned pieces of 1, 2, 4 or 8 bytes: sizes rising from
// a to an alignment, then falling to b. A group's first or last chunk is a
// suffix or a prefix of one, so it takes at most four stores.
__device__ inline void store_byte_range(uint8_t* chunk, const uint32_t* words, int a, int b) {
  const auto piece = [&](int at, int size) {
    uint8_t* p = chunk + at;
    if (size == 8) {
      const int w = at / 4;  // 0 or 2
      *reinterpret_cast<uint2*>(p) = w ? make_uint2(words[2], words[3])
                                       : make_uint2(words[0], words[1]);
      return;
    }
    const uint32_t bits = chunk_bits(words, at);
    if (size == 4) *reinterpret_cast<uint32_t*>(p) = bits;
    else if (size == 2) *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(bits);
    else *p = static_cast<uint8_t>(bits);
  };
#pragma unroll
  for (int size = 1; size <= 8; size *= 2) {
    if ((a & size) && a + size <= b) {
      piece(a, size);
      a += size;
    }
  }
#pragma unroll
  for (int size = 8; size >= 1; size /= 2) {
    if (b - a >= size) {
      piece(a, size);
      a += size;
    }
  }
}

// e2m1 elements [lo, hi) (0 <= lo < hi <= 32) of the 16-byte chunk at
// `chunk` (16-byte aligned) from its codes `words`: one vector store when
// the range is the whole chunk. Otherwise the halves of the end bytes that
// the range shares with a neighbour take nibble atomics and the bytes
// between leave in aligned pieces. Byte by byte, as store_word goes, each
// byte took a three-way branch; the pieces measured 1.03-1.08x on nvfp4
// under random and skewed routing (on an H200). (fp8 end chunks leave a
// byte a lane, store_end_bytes in tile_writers.cuh.)
__device__ inline void store_e2m1_chunk_range(uint8_t* chunk, const uint32_t* words, int lo,
                                              int hi) {
  if (lo == 0 && hi == 32) {
    *reinterpret_cast<uint4*>(chunk) = make_uint4(words[0], words[1], words[2], words[3]);
    return;
  }
  if (lo & 1) set_nibble(chunk + lo / 2, true, chunk_bits(words, lo / 2) >> 4);
  if (hi & 1) set_nibble(chunk + hi / 2, false, chunk_bits(words, hi / 2));
  store_byte_range(chunk, words, (lo + 1) / 2, hi / 2);
}

}  // namespace gg::quantize

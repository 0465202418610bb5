// Coding one staged input tile of the grouped quantizer (quantize_kernel.cuh
// streams the tiles in): rowwise and columnwise outputs of one format from
// one read of the tile, by all the CTA's threads.
//
//   columnwise: a thread takes two adjacent K columns (one 32-bit word of a
//               16-bit input) of 32 tokens, so that a warp's shared-memory
//               reads are 128 bytes of one row. It keeps the column amaxes
//               of its 16- and 32-token blocks (decision_max: SIMD maxes,
//               two columns in one instruction); a 1x128 block combines the
//               four chunks of its column through shared memory, its four
//               warps waiting only for each other (sync_block_runs). It codes
//               each column into a staging buffer of code rows (one per K
//               column, tokens along it), byte scales into another, and
//               after a barrier the warps copy both out: code rows in
//               16-byte stores, as they are where every row of the tile
//               starts on 16 bytes, else shifted to the output's alignment
//               (group starts need not be aligned), the chunks a row shares
//               with its neighbours apart (fp8 a byte a lane), with the
//               bytes shared with another group (odd starts of e2m1 rows)
//               set nibble-wise with atomics, so neighbours and untouched
//               tokens keep their bits, as in the reference; scales a lane
//               per block, so a warp's bytes share a few lines.
//   rowwise:    a thread takes a run of 32 elements of a token's row, takes
//               the amax of each block in it (or shares a 1x128 block's
//               with the row's other runs by shuffles), decides the block
//               scales (formats/block_quant.h) and stores its codes in one
//               or two vector stores.
//   both, fp8 without blocks under one scale: every element has one code
//               for both outputs, so the rowwise writer codes it once and
//               keeps its codes in the stage; the columnwise code rows are
//               those codes transposed by byte permutes (about one
//               instruction an element instead of a second coding).
// Elements are coded by the codecs of tile_codecs.cuh: a block whose amax
// is finite takes the short encoders (division by the reciprocal with
// Markstein's corrections, one for 16-bit elements and two for fp32, or the
// mxfp8 product, then the fp8 conversion instruction or the e2m1
// arithmetic; fp16 elements are widened by the conversion instruction,
// exact for finite values), any other block the exact ones; both give the
// reference's bits. 16-bit elements under nvfp4
// skip the division: a block's seven e2m1 thresholds, and a pair's two
// codes by a binary search over them (element_encoders.h). A 128x128
// block takes the tile's amax, reduced over the CTA. Block decisions read
// their maxes as fp32 bits: fp16 ones widened by the conversion instruction
// (decision_bits), not the reference's software decoder.
//
// A staged tile (laid out by tile_chunk, 128-byte aligned) must read as
// zero from its last valid row up to the next multiple of 32 (the
// columnwise runs take those rows into their amaxes); later rows are never
// read.
#pragma once

#include <cuda_runtime.h>
#include <float.h>
#include <stdint.h>

#include <type_traits>

#include "formats/block_quant.h"
#include "formats/codecs.h"
#include "kernels/quantize/quantize_params.h"
#include "kernels/quantize/tile_codecs.cuh"
#include "kernels/quantize/tile_io.cuh"

namespace gg::quantize {

// The magnitude max behind a block decision, which reads only the largest
// magnitude and whether it is NaN, never a NaN's payload. On sm_86+ a pair
// of 16-bit values takes one max.NaN.xorsign.abs (NaN comes out canonical,
// and the sign bits are garbage until In::magnitude clears them once at the
// end), where In::max of the magnitudes takes two instructions. A leaf is
// a raw pair, a join the max of two leaves or joins.
template <gg_dtype kIn>
__device__ typename InputType<kIn>::Mag decision_leaf(typename InputType<kIn>::Pair p) {
  using In = InputType<kIn>;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 860
  if constexpr (kIn != GG_DTYPE_FP32) return p;
#endif
  return In::magnitude(p);
}
template <gg_dtype kIn>
__device__ typename InputType<kIn>::Mag decision_join(typename InputType<kIn>::Mag a,
                                                      typename InputType<kIn>::Mag b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 860
  if constexpr (kIn != GG_DTYPE_FP32) {
    uint32_t out;
    if constexpr (kIn == GG_DTYPE_BF16) {
      asm("max.NaN.xorsign.abs.bf16x2 %0, %1, %2;" : "=r"(out) : "r"(a), "r"(b));
    } else {
      asm("max.NaN.xorsign.abs.f16x2 %0, %1, %2;" : "=r"(out) : "r"(a), "r"(b));
    }
    return out;
  }
#endif
  return InputType<kIn>::max(a, b);
}

// The decision max of pairs[kFirst .. kFirst + kCount), its sign bits
// cleared, taken as a tree: as many instructions as a running max, but a
// dependency chain log2(kCount) deep instead of kCount.
template <gg_dtype kIn, int kFirst, int kCount>
__device__ typename InputType<kIn>::Mag decision_tree(const typename InputType<kIn>::Pair* pairs) {
  if constexpr (kCount == 1) {
    return decision_leaf<kIn>(pairs[kFirst]);
  } else {
    constexpr int kHalf = kCount / 2;
    return decision_join<kIn>(decision_tree<kIn, kFirst, kHalf>(pairs),
                              decision_tree<kIn, kFirst + kHalf, kCount - kHalf>(pairs));
  }
}
template <gg_dtype kIn, int kFirst, int kCount>
__device__ typename InputType<kIn>::Mag decision_max(const typename InputType<kIn>::Pair* pairs) {
  return InputType<kIn>::magnitude(decision_tree<kIn, kFirst, kCount>(pairs));
}

// fp32 bits of the low (kHigh false) or high magnitude of a decision max,
// as In::low_bits and high_bits give them, but fp16 by the conversion
// instruction rather than the reference's generic minifloat decoder (which
// keeps NaN payloads): the same bits for every finite value and inf, and a
// NaN still a NaN, whose payload no block decision reads.
template <gg_dtype kIn, bool kHigh>
__device__ uint32_t decision_bits(typename InputType<kIn>::Mag m) {
  using In = InputType<kIn>;
  if constexpr (kIn == GG_DTYPE_FP16) {
    return fmt::float_bits(In::convert(kHigh ? m >> 16 : m & 0xFFFFu));
  } else {
    return kHigh ? In::high_bits(m) : In::low_bits(m);
  }
}
template <gg_dtype kIn>
__device__ uint32_t decision_max_bits(typename InputType<kIn>::Mag m) {
  return max(decision_bits<kIn, false>(m), decision_bits<kIn, true>(m));
}

constexpr int kColumnTokens = 32;  // tokens of a columnwise thread's run
constexpr int kRowRun = 32;        // elements of a rowwise thread's run
template <int kTm>
constexpr int kMaxColumnBlocks = kTm / 16;  // columnwise blocks a tile column can hold
// The 32-token chunks of a 1x128 column block within a tile: four, fewer in
// a shorter tile.
template <int kTm>
constexpr int kLongBlockChunks = (kTm < 128 ? kTm : 128) / kColumnTokens;

__device__ inline uint32_t warp_max(uint32_t v) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v = max(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}

__device__ inline float amax_of(const uint32_t* amax_bits, int32_t g) {
  return fmt::bits_float(amax_bits[g]);
}

// The fp32 scale of group g of one output (1 where it has none), from the
// amax words: the reference's outer_scale_from_amax.
__device__ inline float outer_scale(const OutputParams& out, const QuantizeParams& p, int32_t g) {
  if (out.extent == GG_SCALE_NONE) return 1.0f;
  const float amax = amax_of(p.amax_bits, out.extent == GG_SCALE_GROUP ? g : p.groups);
  if (out.scaling == GG_BLOCK_NV16) return fmt::nvfp4_tensor_scale(amax);
  return fmt::fp8_scale_from_amax(amax, out.dtype);
}

// Two elements of input type kIn by the short encoders or the exact ones.
template <bool kShort, gg_dtype kIn, class Codec>
__device__ uint32_t encode2(const typename Codec::Coder& coder, float x0, float x1) {
  if constexpr (kShort) return Codec::template encode2_short<kIn>(coder, x0, x1);
  else return Codec::encode2(coder, x0, x1);
}

// The elements of a pair; on the short path every element is finite.
template <bool kShort, class In>
__device__ float low_of(typename In::Pair p) {
  if constexpr (kShort) return In::low_finite(p);
  else return In::low(p);
}
template <bool kShort, class In>
__device__ float high_of(typename In::Pair p) {
  if constexpr (kShort) return In::high_finite(p);
  else return In::high(p);
}

// Calls f(std::true_type) when `short_path`, else f(std::false_type): one
// branch around a run, each side straight code.
template <class F>
__device__ void by_path(bool short_path, F&& f) {
  if (short_path) f(std::true_type{}); else f(std::false_type{});
}

// Whether a codec's short path codes 16-bit pairs by thresholds
// (element_encoders.h) rather than element by element.
template <gg_dtype kIn, class Codec>
constexpr bool kPairThresholds = kHalfInput<kIn> && std::is_same_v<Codec, Nvfp4>;

// Whether a run under `coder` whose amax is `amax` takes the short path.
// Thresholds hold for every finite magnitude under a step in the divider's
// fast range, so the nvfp4 pair path asks only that, and never forms the
// reciprocal the division would take.
template <gg_dtype kIn, class Codec>
__device__ bool takes_short_path(const typename Codec::Coder& coder, float amax) {
  if constexpr (kPairThresholds<kIn, Codec>) {
    return coder.fast && amax <= FLT_MAX;
  } else {
    return Codec::short_path(coder, amax);
  }
}

// A rowwise run of 16-bit elements under nvfp4 by thresholds: kSpanChunks
// chunks of eight elements a block, a chunk's eight codes one word. A
// pair's codes (nibbles at bits 0-3 and 16-19) are folded into its low
// byte, and four pairs' bytes gathered by byte permutes.
template <gg_dtype kIn, int kSpanChunks, int kRunChunks, int kSpans>
__device__ void row_codes_by_thresholds(const uint4 (&chunks)[kRunChunks],
                                        const ScaleDivider (&steps)[kSpans],
                                        uint32_t (&codes)[kRunChunks]) {
  E2m1Thresholds thresholds[kSpans];
#pragma unroll
  for (int s = 0; s < kSpans; ++s) {
    thresholds[s] = e2m1_thresholds<kIn>(steps[s].scale, steps[s].scale);
  }
#pragma unroll
  for (int j = 0; j < kRunChunks; ++j) {
    const uint32_t pairs[4] = {chunks[j].x, chunks[j].y, chunks[j].z, chunks[j].w};
    uint32_t bytes[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const uint32_t pair_codes = e2m1_pair_codes<kIn>(pairs[i], thresholds[j / kSpanChunks]);
      bytes[i] = pair_codes + (pair_codes >> 12);
    }
    codes[j] = __byte_perm(__byte_perm(bytes[0], bytes[1], 0x0040),
                           __byte_perm(bytes[2], bytes[3], 0x0040), 0x5410);
  }
}

// ---- the tile writers ----

// Per-tile facts every writer needs.
struct TileContext {
  int64_t matrix;    // stacked matrix index (0 when ragged)
  float tile_param;  // kWholeTile / kSquareTile codecs: the element parameter
  // kWholeTile codecs of a span tile whose rows cross groups, or under row
  // scales: each row's parameter, in place of tile_param (write_rowwise's
  // kRowParams).
  const float* row_params = nullptr;
  // The columnwise output under row scales: each K column's parameter
  // (code_columnwise's kColumnParams).
  const float* column_params = nullptr;
};

// The rowwise output of a tile: output rows = tokens, blocks along K. A
// thread codes a run of kRowRun consecutive elements of a token's row (four
// runs a row), read as 16-byte chunks: it takes the amax of each block the
// run holds (two of nvfp4's, one of mxfp8's) or, for a 1x128 block, shares
// it with the row's other runs by two shuffles; decides the block scales;
// codes the run and stores it in one or two vector stores. Runs are long so
// that a decision, and its latency, is paid once per block rather than by
// every lane of it, and a thread's chunks are independent loads. A warp
// takes eight rows, lane l run l / 8 of row l mod 8, so that a load phase
// reads one chunk of eight rows (tile_chunk: distinct banks). A thread
// keeps its run from row to row (kRowStep rows apart, which keeps the
// chunks' slots), so everything but the row's offsets is set up once. Warps
// run whole: rows past the tile's up to the warp's last are read and store
// nothing, so the shuffles take the full mask. kKeepCodes (fp8 under a
// whole-tile scale only): a thread also leaves each run's 32 codes in the
// stage, in place of the run's first two chunks, which only it reads
// (transpose_row_codes). kRowParams (kWholeTile codecs): each row takes
// its own parameter from ctx.row_params, a template flag so that the tiles
// of one group keep a loop without the per-row load.
template <gg_dtype kIn, int kTm, class Codec, bool kKeepCodes = false, bool kRowParams = false>
__device__ void write_rowwise(const OutputParams& out, const Tile& t, uint4* tile,
                              const Codec& codec, const TileContext& ctx) {
  using Shape = TileShape<kIn>;
  using In = InputType<kIn>;
  constexpr int kVec = Shape::kVec;
  constexpr int kRunChunks = kRowRun / kVec;
  constexpr int kRowRuns = kTk / kRowRun;
  constexpr int kRowStep = kThreadsOf<kTm> / kRowRuns;
  constexpr int kWarpRows = 32 / kRowRuns;
  // Elements under one scale decision within the run, and runs sharing a block.
  constexpr int kSpan = Codec::kBlock > 0 && Codec::kBlock < kRowRun ? Codec::kBlock : kRowRun;
  constexpr int kSpans = kRowRun / kSpan;
  constexpr int kSpanChunks = kSpan / kVec;
  constexpr int kBlockRuns = Codec::kBlock > kRowRun ? Codec::kBlock / kRowRun : 1;
  static_assert(kRowStep % 8 == 0, "a thread's rows keep their swizzle, its chunks their slots");
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int run = lane / kWarpRows;
  const int c = run * kRowRun;
  const int first_row = static_cast<int>(threadIdx.x) / 32 * kWarpRows + lane % kWarpRows;
  const int warp_rows = (t.rows + kWarpRows - 1) / kWarpRows * kWarpRows;
  const uint32_t valid = t.cols - c >= kRowRun ? ~0u : (1u << max(t.cols - c, 0)) - 1u;
  bool stores_scale[kSpans];
#pragma unroll
  for (int s = 0; s < kSpans; ++s) {
    stores_scale[s] = c + s * kSpan < t.cols && run % kBlockRuns == 0;
  }
  int64_t scale_index = 0;
  if constexpr (Codec::kBlock > 0) {
    scale_index = ctx.matrix * out.scale_matrix_entries +
                  (t.token0 + first_row) * out.scale_row_length + (t.k0 + c) / Codec::kBlock;
  }
  const int64_t scale_step = kRowStep * out.scale_row_length;
  uint8_t* bytes = code_byte<Codec::kBits>(out.data, ctx.matrix * out.matrix_stride +
                                                         (t.token0 + first_row) * out.row_stride +
                                                         t.k0 + c);
  const int64_t byte_step = kRowStep * out.row_stride * Codec::kBits / 8;
  uint4* chunks[kRunChunks];
#pragma unroll
  for (int j = 0; j < kRunChunks; ++j) {
    chunks[j] = tile + tile_chunk<kIn, kTm>(first_row, run * kRunChunks + j);
  }
#pragma unroll 1
  for (int r = first_row, offset = 0; r < warp_rows; r += kRowStep,
           offset += kRowStep * Shape::kPanelChunks, scale_index += scale_step,
           bytes += byte_step) {
    uint4 v[kRunChunks];
#pragma unroll
    for (int j = 0; j < kRunChunks; ++j) v[j] = chunks[j][offset];
    uint32_t amax[kSpans];
#pragma unroll
    for (int s = 0; s < kSpans; ++s) {
      typename In::Pair pairs[kSpanChunks * Shape::kPairsPerVec];
      memcpy(pairs, &v[s * kSpanChunks], sizeof pairs);
      amax[s] = decision_max_bits<kIn>(
          decision_max<kIn, 0, kSpanChunks * Shape::kPairsPerVec>(pairs));
    }
#pragma unroll
    for (int d = kWarpRows; d < kBlockRuns * kWarpRows; d *= 2) {
      amax[0] = max(amax[0], __shfl_xor_sync(0xffffffffu, amax[0], d));
    }
    typename Codec::Coder coders[kSpans];
    bool short_path = true;
#pragma unroll
    for (int s = 0; s < kSpans; ++s) {
      float param = ctx.tile_param;
      if constexpr (kRowParams) param = ctx.row_params[r];
      if constexpr (Codec::kBlock > 0) {
        const BlockDecision decision = codec.decide(fmt::bits_float(amax[s]));
        param = decision.param;
        if (stores_scale[s] && r < t.rows) Codec::store(out, scale_index + s, decision.stored);
      }
      coders[s] = Codec::coder(param);
      short_path = short_path && takes_short_path<kIn, Codec>(coders[s], fmt::bits_float(amax[s]));
    }
    if (valid == 0 || r >= t.rows) continue;
    uint32_t codes[kRowRun * Codec::kBits / 32] = {};
    const auto code_elements = [&](auto path) {
      constexpr bool kShort = decltype(path)::value;
#pragma unroll
      for (int j = 0; j < kRunChunks; ++j) {
        typename In::Pair pairs[Shape::kPairsPerVec];
        memcpy(pairs, &v[j], sizeof v[j]);
#pragma unroll
        for (int i = 0; i < Shape::kPairsPerVec; ++i) {
          const int bit = (j * kVec + 2 * i) * Codec::kBits;
          // Added, not ORed, into disjoint fields: the shift folds into one LEA.
          codes[bit / 32] += encode2<kShort, kIn, Codec>(coders[j / kSpanChunks],
                                                         low_of<kShort, In>(pairs[i]),
                                                         high_of<kShort, In>(pairs[i]))
                             << (bit % 32);
        }
      }
    };
    if constexpr (kPairThresholds<kIn, Codec>) {
      if (short_path) {
        row_codes_by_thresholds<kIn, kSpanChunks>(v, coders, codes);
      } else {
        code_elements(std::false_type{});
      }
    } else {
      by_path(short_path, code_elements);
    }
    if constexpr (kKeepCodes) {
      static_assert(Codec::kBlock == kWholeTile && Codec::kBits == 8 && kRunChunks >= 2,
                    "fp8 codes of a whole-tile scale, a run's filling two chunks");
      chunks[0][offset] = make_uint4(codes[0], codes[1], codes[2], codes[3]);
      chunks[1][offset] = make_uint4(codes[4], codes[5], codes[6], codes[7]);
    }
    store_codes<Codec::kBits, kRowRun>(bytes, codes, valid);
  }
}

// A columnwise thread's share of a tile: the column pair (columns 2 pair,
// 2 pair + 1) of tokens chunk * 32 .. + 31, and its magnitudes over the
// first and second 16 of them. The pairs stay in shared memory (read again
// to code them) rather than in 32 registers. Token i's pair lies 128 i
// bytes past token 0's with bits 4-6 of its shared address XORed by i mod 8
// (tile_chunk; stages are 128-byte aligned): the XOR is taken on a 32-bit
// shared address, where generic pointers to the eight slots cost registers
// enough to spill.
template <gg_dtype kIn, int kTm>
struct ColumnRun {
  using In = InputType<kIn>;
  using Pair = typename In::Pair;
  static constexpr int kPairsPerChunk = TileShape<kIn>::kPairsPerVec;
  int pair;
  int chunk;
  bool live;       // the chunk holds tokens of the group
  uint32_t first;  // shared address of the pair in the run's first token
  typename In::Mag half[2];

  __device__ void load(const uint4* tile, const Tile& t) {
    const int warp = static_cast<int>(threadIdx.x) / 32;
    pair = (warp % 2) * 32 + static_cast<int>(threadIdx.x) % 32;
    chunk = warp / 2;
    live = chunk * kColumnTokens < t.rows;
    first = static_cast<uint32_t>(__cvta_generic_to_shared(
                tile + tile_chunk<kIn, kTm>(chunk * kColumnTokens, pair / kPairsPerChunk))) +
            (pair % kPairsPerChunk) * static_cast<uint32_t>(sizeof(Pair));
    half[0] = half[1] = In::zero();
    if (!live) return;
    Pair pairs[kColumnTokens];
#pragma unroll
    for (int i = 0; i < kColumnTokens; ++i) pairs[i] = at(i);
    half[0] = decision_max<kIn, 0, 16>(pairs);
    half[1] = decision_max<kIn, 16, 16>(pairs);
  }
  __device__ Pair at(int token) const {
    const uint32_t address = (first ^ ((token % 8) << 4)) + token * 128;
    // volatile: side effects to the compiler, so the loads stay between the
    // tile's barriers.
    Pair pair_value;
    if constexpr (sizeof(Pair) == 4) {
      asm volatile("ld.shared.b32 %0, [%1];" : "=r"(pair_value) : "r"(address));
    } else {
      asm volatile("ld.shared.v2.b32 {%0, %1}, [%2];"
                   : "=r"(pair_value.x), "=r"(pair_value.y)
                   : "r"(address));
    }
    return pair_value;
  }
  // fp32 bits of column h's amax over the tokens 16 s .. 16 s + 15.
  __device__ uint32_t amax_bits(int h, int s) const {
    return h ? decision_bits<kIn, true>(half[s]) : decision_bits<kIn, false>(half[s]);
  }
};

// A columnwise run of 16-bit pairs under nvfp4 by thresholds, the two
// columns' in the halves: two tokens' pair codes make a byte of each
// column (byte 0 and byte 2), and four such a word of each by byte
// permutes.
template <gg_dtype kIn, class Run, int kSpans, int kWords>
__device__ void column_codes_by_thresholds(const Run& run, const ScaleDivider (&steps)[2][kSpans],
                                           uint32_t (&codes)[2][kWords]) {
  static_assert(kSpans == 2 && kWords * 8 == kColumnTokens, "two blocks of 16 tokens, e2m1");
  E2m1Thresholds thresholds[kSpans];
#pragma unroll
  for (int s = 0; s < kSpans; ++s) {
    thresholds[s] = e2m1_thresholds<kIn>(steps[0][s].scale, steps[1][s].scale);
  }
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    uint32_t bytes[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int token = 8 * w + 2 * i;
      const E2m1Thresholds& block = thresholds[token / 16];
      bytes[i] = e2m1_pair_codes<kIn>(run.at(token), block) +
                 (e2m1_pair_codes<kIn>(run.at(token + 1), block) << 4);
    }
    const uint32_t low = __byte_perm(bytes[0], bytes[1], 0x6240);
    const uint32_t high = __byte_perm(bytes[2], bytes[3], 0x6240);
    codes[0][w] = __byte_perm(low, high, 0x5410);
    codes[1][w] = __byte_perm(low, high, 0x7632);
  }
}

// Shared memory of the quantize pass past the stages.
template <int kTm>
struct CodeStage {
  // Columnwise codes: one row per K column of the tile, tokens along it
  // (kTm bytes of fp8, kTm / 2 of e2m1).
  uint32_t codes[kTk * kTm / 4];
  // The fp32 scales of a tile's output rows: a span's rows' group scales
  // (fill_row_scales) or the rowwise output's row scales, and the
  // columnwise output's row scales by K column (fill_line_params).
  struct LineScales {
    float rows[kTm];
    float columns[kTk];
  };
  // A columnwise output of 1x128 blocks is coded before the rowwise one
  // takes its line scales, with a barrier between (code_tile).
  union {
    uint32_t chunk_amax[kTm / kColumnTokens][kTk];  // per column and 32-token chunk (1x128)
    LineScales line_scales;
  };
  static_assert(sizeof(LineScales) <= sizeof(chunk_amax), "the plan's code stage");
  uint32_t warp_amax[kWarpsOf<kTm>];  // the tile amax (128x128), per warp
  // Columnwise byte scales (mxfp8, nvfp4): per K column, its blocks of 16 or 32 tokens.
  uint8_t column_scales[kTk][kMaxColumnBlocks<kTm>];
};

// Code rows' 16-byte chunks are permuted by k / 2, so the eight lanes of a
// store phase (rows 2l or 2l + 1, one offset) hit distinct banks: where
// chunk `chunk` of code row k lies in its row.
template <int kRowChunks>
__device__ int permuted_chunk(int k, int chunk) {
  return (chunk ^ (k >> 1)) & (kRowChunks - 1);
}

// Word index of word j of code row k: rows of kTm * kBits / 32 words.
template <int kBits, int kTm>
__device__ int code_index(int k, int j) {
  constexpr int kRowWords = kTm * kBits / 32;
  return k * kRowWords + (permuted_chunk<kRowWords / 4>(k, j >> 2) << 2) + (j & 3);
}

// The columnwise output of a tile, into the code stage: output rows = K,
// columns = tokens, blocks along tokens from the group start. Both columns
// of the run are coded together, so each pair is read once more.
// kColumnParams (kWholeTile codecs, row scales): column k takes
// ctx.column_params[k] in place of the tile's parameter.
template <gg_dtype kIn, int kTm, class Codec, bool kColumnParams = false>
__device__ void code_columnwise(const QuantizeParams& p, const OutputParams& out, const Tile& t,
                                const ColumnRun<kIn, kTm>& run, CodeStage<kTm>* stage,
                                const Codec& codec,
                                const TileContext& ctx) {
  using In = InputType<kIn>;
  constexpr int kBits = Codec::kBits;
  constexpr int kBlock = Codec::kBlock;
  constexpr int kSpans = kBlock == 16 ? 2 : 1;  // blocks (16 tokens each) in the run, else 1
  if (!run.live) return;
  const int64_t block_column = (p.stacked ? 0 : t.first_block) + t.row0 / (kBlock > 0 ? kBlock : 1);
  typename Codec::Coder coders[2][kSpans];
  bool short_path = true;  // for every block of the run
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int k = 2 * run.pair + h;
    const bool column = k < t.cols;
    const int64_t scale_row =
        ctx.matrix * out.scale_matrix_entries + (t.k0 + k) * out.scale_row_length;
#pragma unroll
    for (int s = 0; s < kSpans; ++s) {
      uint32_t amax = kSpans == 2 ? run.amax_bits(h, s) : max(run.amax_bits(h, 0), run.amax_bits(h, 1));
      float param = ctx.tile_param;
      if constexpr (kColumnParams) param = ctx.column_params[k];
      if constexpr (kBlock == 128) {
        // The chunks of the run's block (four, fewer in a shorter tile).
        // Every run leaves its chunk's amax, 0 past the tile's rows, so
        // all are read, unrolled.
        constexpr int kChunks = kLongBlockChunks<kTm>;
        const int first_chunk = run.chunk / kChunks * kChunks;
        amax = 0;
#pragma unroll
        for (int c = 0; c < kChunks; ++c) amax = max(amax, stage->chunk_amax[first_chunk + c][k]);
      }
      if constexpr (kBlock > 0) {
        const BlockDecision decision = codec.decide(fmt::bits_float(amax));
        param = decision.param;
        const int token = run.chunk * kColumnTokens + s * 16;  // the block's first
        if (column && token < t.rows && token % kBlock == 0) {
          if constexpr (Codec::kScaleBytes == 1) {  // staged: copy_out_column_scales
            stage->column_scales[k][token / kBlock] = static_cast<uint8_t>(decision.stored);
          } else {
            Codec::store(out, scale_row + block_column + token / kBlock, decision.stored);
          }
        }
      }
      coders[h][s] = Codec::coder(param);
      short_path = short_path && takes_short_path<kIn, Codec>(coders[h][s], fmt::bits_float(amax));
    }
  }
  constexpr int kWords = kColumnTokens * kBits / 32;
  uint32_t codes[2][kWords] = {};
  const auto code_elements = [&](auto path) {
    constexpr bool kShort = decltype(path)::value;
#pragma unroll
    for (int i = 0; i < kColumnTokens; i += 2) {
      const typename In::Pair a = run.at(i);
      const typename In::Pair b = run.at(i + 1);
      const int s = kSpans == 2 ? i / 16 : 0;
      const int bit = i * kBits;  // disjoint fields, added as in write_rowwise
      codes[0][bit / 32] +=
          encode2<kShort, kIn, Codec>(coders[0][s], low_of<kShort, In>(a),
                                      low_of<kShort, In>(b))
          << (bit % 32);
      codes[1][bit / 32] +=
          encode2<kShort, kIn, Codec>(coders[1][s], high_of<kShort, In>(a),
                                      high_of<kShort, In>(b))
          << (bit % 32);
    }
  };
  if constexpr (kPairThresholds<kIn, Codec>) {
    if (short_path) {
      column_codes_by_thresholds<kIn>(run, coders, codes);
    } else {
      code_elements(std::false_type{});
    }
  } else {
    by_path(short_path, code_elements);
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int w = 0; w < kWords; w += 4) {
      *reinterpret_cast<uint4*>(stage->codes +
                                code_index<kBits, kTm>(2 * run.pair + h, run.chunk * kWords + w)) =
          make_uint4(codes[h][w], codes[h][w + 1], codes[h][w + 2], codes[h][w + 3]);
    }
  }
}

// The columnwise output of a tile whose codes are its rowwise ones (fp8
// under one whole-tile scale: the same dtype and the same group or tensor
// scale), into the code stage, from the codes write_rowwise kept in the
// stage: a thread turns a word of 16 tokens (K columns 4q .. 4q + 3 of
// each) into a 16-byte chunk of each of those four code rows, by byte
// permutes of 4 x 4 blocks. A byte permute and a shared load cost less
// than coding the element a second time. Tokens past the tile's hold stale
// bytes, which copy_out_columnwise never stores.
template <gg_dtype kIn, int kTm>
__device__ void transpose_row_codes(const Tile& t, const uint4* tile, CodeStage<kTm>* stage) {
  constexpr int kRunChunks = kRowRun / TileShape<kIn>::kVec;
  static_assert(kThreadsOf<kTm> == (kTk / 4) * (kTm / 16), "a thread per word of 16 tokens");
  const int q = static_cast<int>(threadIdx.x) % (kTk / 4);
  const int token0 = static_cast<int>(threadIdx.x) / (kTk / 4) * 16;
  if (token0 >= t.rows || 4 * q >= t.cols) return;
  // The word's run keeps its codes in its first two chunks, 16 columns each.
  const int chunk = q / 8 * kRunChunks + q % 8 / 4;
  const uint32_t* words = reinterpret_cast<const uint32_t*>(tile);
  uint32_t w[16];
#pragma unroll
  for (int i = 0; i < 16; ++i) w[i] = words[tile_chunk<kIn, kTm>(token0 + i, chunk) * 4 + q % 4];
  uint32_t rows[4][4];  // [K column 4q + m][word of 4 tokens]
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    const uint32_t* quad = w + 4 * b;
    const uint32_t low01 = __byte_perm(quad[0], quad[1], 0x5140);  // columns 0, 1 of tokens 0, 1
    const uint32_t low23 = __byte_perm(quad[2], quad[3], 0x5140);
    const uint32_t high01 = __byte_perm(quad[0], quad[1], 0x7362);  // columns 2, 3
    const uint32_t high23 = __byte_perm(quad[2], quad[3], 0x7362);
    rows[0][b] = __byte_perm(low01, low23, 0x5410);
    rows[1][b] = __byte_perm(low01, low23, 0x7632);
    rows[2][b] = __byte_perm(high01, high23, 0x5410);
    rows[3][b] = __byte_perm(high01, high23, 0x7632);
  }
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    *reinterpret_cast<uint4*>(stage->codes + code_index<8, kTm>(4 * q + m, token0 / 4)) =
        make_uint4(rows[m][0], rows[m][1], rows[m][2], rows[m][3]);
  }
}

// The fp8 codes of a tile's output rows that share a 16-byte chunk with
// another tile (rows starting off a chunk), after the whole chunks: a lane
// a byte, a half warp or a warp a row, so that a warp's byte stores fall on
// the end chunks of one or two rows and every lane whose byte exists
// stores, where a chunk's piecewise stores in the whole chunks' loop left
// all but one lane of a warp idle. A row's first `left` and last `right`
// tokens are its end bytes (left to the first chunk boundary, right past
// the last whole chunk; 16 together in a full tile). Where all rows start
// alike (the row length a multiple of 16) a thread keeps one token down its
// rows; else lane j takes left byte j < 15 or right byte 30 - j of each
// row, if the row has it.
template <int kTm>
__device__ void store_end_bytes(const OutputParams& out, const Tile& t, int64_t matrix,
                                const CodeStage<kTm>* stage) {
  constexpr int kThreads = kThreadsOf<kTm>;
  constexpr int kRowBytes = kTm;  // of a code row
  // The end bytes of the row whose first token is element `first`.
  const auto ends = [&](int64_t first, int* left, int* right) {
    const int skew = static_cast<int>(static_cast<uint64_t>(first) & 15u);
    *left = skew == 0 ? 0 : min(t.rows, 16 - skew);
    *right = (t.rows - *left) & 15;
  };
  int64_t first = matrix * out.matrix_stride + t.k0 * out.row_stride + t.token0;
  const bool one_skew = out.row_stride % 16 == 0;
  int split = 15, width = 30;  // jobs j < split are left bytes, the others right ones
  if (one_skew) {
    int right = 0;
    ends(first, &split, &right);
    width = split + right;
  }
  const int lane_bits = width <= 16 ? 4 : 5;  // a row's jobs: 16 or 32 lanes
  const int j = static_cast<int>(threadIdx.x) & ((1 << lane_bits) - 1);
  if (j >= width) return;
  const bool in_left = j < split;
  const int token = in_left ? j : t.rows - (width - j);
  int k = static_cast<int>(threadIdx.x) >> lane_bits;
  const int row_step = kThreads >> lane_bits;
  first += k * out.row_stride;
  const int64_t first_step = row_step * out.row_stride;
  const uint8_t* codes = reinterpret_cast<const uint8_t*>(stage->codes);
#pragma unroll 1
  for (; k < t.cols; k += row_step, first += first_step) {
    if (!one_skew) {  // the row's own ends
      int left = 0, right = 0;
      ends(first, &left, &right);
      if (in_left ? j >= left : width - j > right) continue;
    }
    const int code = k * kRowBytes + (permuted_chunk<kRowBytes / 16>(k, token >> 4) << 4) +
                     (token & 15);
    out.data[first + token] = codes[code];
  }
}

// The code rows of a tile to the columnwise output. Where every output row
// of the tile starts on a 16-byte chunk (the usual case: group starts and
// the row length multiples of 16 tokens, or 32 for e2m1), a code chunk is
// an output chunk and goes out as it is. Otherwise a thread takes one
// 16-byte chunk of an output row, aligned in memory (group starts are not):
// its four words take the code bits that land in them, shifted by the row's
// misalignment, and leave in one vector store if the chunk lies inside the
// tile's tokens. Its (row, chunk) advances by a constant per job, carried
// by hand rather than divided out. Code words before or past the row's are
// read from within the row (the chunk index wraps): their bits fall on
// elements outside the group, which no store writes. A row's end chunks,
// which it shares with the tile before or after, leave apart: fp8 a byte a
// lane after the loop (store_end_bytes), 1.04-1.18x on 11 of 12 fp8 rows
// under random routing against storing them in the loop (on an H200); e2m1
// in the loop, in aligned pieces with nibble atomics
// (store_e2m1_chunk_range). Before that, three layouts that took the ends
// apart (a pass of their own a row a lane, a thread's chunk kept as it
// steps rows, live chunks only) measured slower on fp8, and runs of
// m-tiles a CTA, whose shared end chunks were completed in shared memory,
// gained on a few random rows but slowed the rest.
template <int kBits, int kTm>
__device__ void copy_out_columnwise(const OutputParams& out, const Tile& t, int64_t matrix,
                                    const CodeStage<kTm>* stage) {
  constexpr int kThreads = kThreadsOf<kTm>;
  constexpr int kPerChunk = 128 / kBits;  // elements per 16-byte chunk
  constexpr int kRowWords = kTm * kBits / 32;
  constexpr int kCodeChunks = kRowWords / 4;  // 16-byte chunks of a code row
  const int64_t tile_first = matrix * out.matrix_stride + t.k0 * out.row_stride + t.token0;
  if (tile_first % kPerChunk == 0 && out.row_stride % kPerChunk == 0) {
    // Every row starts on a chunk: chunk c of a code row is chunk c of the
    // output row, and only the last one may hold tokens past the group. A
    // thread keeps its chunk c and steps kRowStep rows at a time, which
    // keeps its code chunk's swizzle (k / 2 moves by a multiple of the
    // chunk count), so a step is a shared load, a store and two additions.
    constexpr int kRowStep = kThreads / kCodeChunks;
    static_assert(kThreads % kCodeChunks == 0 && (kRowStep / 2) % kCodeChunks == 0,
                  "a thread's code chunks keep their swizzle");
    const int live_chunks = (t.rows + kPerChunk - 1) / kPerChunk;
    const int c = static_cast<int>(threadIdx.x) % kCodeChunks;
    if (c >= live_chunks) return;
    const int last_valid = t.rows - (live_chunks - 1) * kPerChunk;
    constexpr uint32_t kFull = kPerChunk >= 32 ? ~0u : (1u << kPerChunk) - 1u;
    const uint32_t mask = c < live_chunks - 1 || last_valid >= kPerChunk ? kFull
                                                                          : (1u << last_valid) - 1u;
    int k = static_cast<int>(threadIdx.x) / kCodeChunks;
    const uint4* code = reinterpret_cast<const uint4*>(
        stage->codes + k * kRowWords + (((c ^ (k >> 1)) & (kCodeChunks - 1)) << 2));
    uint8_t* bytes = code_byte<kBits>(out.data, tile_first + k * out.row_stride + c * kPerChunk);
    const int64_t byte_step = kRowStep * out.row_stride * kBits / 8;
#pragma unroll 2
    for (; k < t.cols; k += kRowStep, code += kRowStep * kRowWords / 4, bytes += byte_step) {
      const uint4 codes = *code;
      const uint32_t words[4] = {codes.x, codes.y, codes.z, codes.w};
      store_codes<kBits, kPerChunk>(bytes, words, mask);
    }
    return;
  }
  // 16-byte chunks a row's codes can touch: one more than they fill, for the skew.
  constexpr int kRowChunks = (kTm + kPerChunk - 1) / kPerChunk + 1;
  constexpr int kRowStep = kThreads / kRowChunks;  // a job's step: kRowStep rows ...
  constexpr int kChunkStep = kThreads % kRowChunks;  // ... and kChunkStep chunks
  int k = static_cast<int>(threadIdx.x) / kRowChunks;
  int c = static_cast<int>(threadIdx.x) % kRowChunks;
  int64_t first = matrix * out.matrix_stride + (t.k0 + k) * out.row_stride + t.token0;
  const int64_t first_step = kRowStep * out.row_stride;
#pragma unroll 1
  for (; k < t.cols; c += kChunkStep, k += kRowStep, first += first_step) {
    if (c >= kRowChunks) {
      c -= kRowChunks;
      k += 1;
      first += out.row_stride;
      if (k >= t.cols) break;
    }
    const int skew = static_cast<int>(static_cast<uint64_t>(first) % kPerChunk);
    const int lo = max(0, skew - c * kPerChunk);
    const int hi = min(kPerChunk, skew + t.rows - c * kPerChunk);
    // fp8: only whole chunks here; a row's end bytes leave in store_end_bytes.
    if (hi <= 0 || (kBits == 8 && (lo > 0 || hi < kPerChunk))) continue;
    const int bit0 = 128 * c - skew * kBits;  // code bit of the chunk's first bit (may be < 0)
    const int w0 = bit0 >> 5;
    const int shift = bit0 & 31;
    // Words w0 .. w0 + 4 lie in code chunks j0 and j0 + 1, from word o of
    // j0: two vector loads, then o picked by two selects a word.
    const uint32_t* row = stage->codes + k * kRowWords;
    const int j0 = w0 >> 2;
    const int o = w0 & 3;
    const auto code_chunk = [&](int j) {
      return *reinterpret_cast<const uint4*>(row + (((j ^ (k >> 1)) & (kCodeChunks - 1)) << 2));
    };
    const uint4 lower = code_chunk(j0);
    const uint4 upper = code_chunk(j0 + 1);
    const uint32_t window[8] = {lower.x, lower.y, lower.z, lower.w,
                                upper.x, upper.y, upper.z, upper.w};
    uint32_t by_two[6];
#pragma unroll
    for (int i = 0; i < 6; ++i) by_two[i] = (o & 2) ? window[i + 2] : window[i];
    uint32_t code_words[5];
#pragma unroll
    for (int i = 0; i < 5; ++i) code_words[i] = (o & 1) ? by_two[i + 1] : by_two[i];
    uint32_t words[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) words[i] = __funnelshift_r(code_words[i], code_words[i + 1], shift);
    uint8_t* chunk = code_byte<kBits>(out.data, first - skew + c * kPerChunk);
    if constexpr (kBits == 8) {
      *reinterpret_cast<uint4*>(chunk) = make_uint4(words[0], words[1], words[2], words[3]);
    } else {
      store_e2m1_chunk_range(chunk, words, lo, hi);
    }
  }
  if constexpr (kBits == 8) store_end_bytes<kTm>(out, t, matrix, stage);
}

// The columnwise byte scales of a tile (mxfp8, nvfp4), staged by
// code_columnwise, to their scale rows: a lane per (K column, block), so
// that a warp's bytes fall on four rows' lines instead of each lane storing
// to a row of its own. A thread keeps its block and steps its column (and
// both addresses) by a constant.
template <int kTm>
__device__ void copy_out_column_scales(const QuantizeParams& p, const Tile& t, int64_t matrix,
                                       const CodeStage<kTm>* stage) {
  constexpr int kColumnStep = kThreadsOf<kTm> / kMaxColumnBlocks<kTm>;
  const OutputParams& out = p.columnwise;
  const int block = static_cast<int>(threadIdx.x) % kMaxColumnBlocks<kTm>;
  if (block * out.block >= t.rows) return;
  int k = static_cast<int>(threadIdx.x) / kMaxColumnBlocks<kTm>;
  uint8_t* scale = out.block_scales + matrix * out.scale_matrix_entries +
                   (t.k0 + k) * out.scale_row_length + (p.stacked ? 0 : t.first_block) +
                   t.row0 / out.block + block;
  const int64_t step = kColumnStep * out.scale_row_length;
  const uint8_t* staged = &stage->column_scales[k][block];
#pragma unroll 4
  for (; k < t.cols; k += kColumnStep, scale += step,
                     staged += kColumnStep * kMaxColumnBlocks<kTm>) {
    *scale = *staged;
  }
}

// The parameter of a codec without block scales: the fp32 scale, or the
// 128x128 block's, decided from the tile amax (thread 0 stores it).
template <class Codec>
__device__ float tile_param_of(const Codec& codec, const OutputParams& out, const Tile& t,
                               int64_t matrix, float tile_amax, bool columnwise) {
  if constexpr (Codec::kBlock == kWholeTile) {
    return codec.whole_param();
  } else if constexpr (Codec::kBlock == kSquareTile) {
    const BlockDecision decision = codec.decide(tile_amax);
    if (threadIdx.x == 0) {
      const int64_t index =
          matrix * out.scale_matrix_entries +
          (columnwise ? t.k_tile * out.scale_row_length + t.row0 / 128
                      : (t.row0 / 128) * out.scale_row_length + t.k_tile);
      Codec::store(out, index, decision.stored);
    }
    return decision.param;
  } else {
    return 0.0f;
  }
}

// Waits for the runs whose chunk maxima the caller's 1x128 column blocks
// take (code_columnwise): the warps of its column half (warp % 2) whose
// chunks lie in its 128-token block, each having left its chunk's maxima
// in the stage. A named barrier of their own (1 to 4), so that each
// block's warps go on to code as soon as they have exchanged, where a CTA
// barrier would hold the sixteen warps of a 256-token tile for the
// slowest.
template <int kTm>
__device__ __forceinline__ void sync_block_runs() {
  constexpr int kChunks = kLongBlockChunks<kTm>;
  const int warp = static_cast<int>(threadIdx.x) / 32;  // its runs' chunk: warp / 2
  asm volatile("bar.sync %0, %1;" ::"r"(1 + warp / 2 / kChunks * 2 + warp % 2), "n"(kChunks * 32)
               : "memory");
}

// An output under row scales (GG_BLOCK_ROWWISE): the fp32 scales of
// `count` consecutive output rows from row `first` (the tile's tokens, or
// its K columns for the columnwise output), each from its max (`maxima`,
// the amax launch's row maxima), into `params` for the writers, 1 past
// `valid`; `stores`: the tile holds the rows' first elements (its first
// K-tile, or its group's first m-tile) and stores them. Every thread calls
// it.
template <int kTm>
__device__ void fill_line_params(const QuantizeParams& p, const OutputParams& out, bool columnwise,
                                 const uint32_t* maxima, const Tile& t, int64_t matrix, int count,
                                 int valid, int64_t first, bool stores, float* params) {
  for (int i = static_cast<int>(threadIdx.x); i < count; i += kThreadsOf<kTm>) {
    float scale = 1.0f;
    if (i < valid) {
      const int64_t entry = row_scale_entry(out, columnwise, p.stacked, matrix, t.g, first + i);
      scale = fmt::fp8_scale_from_amax(fmt::bits_float(maxima[entry]), out.dtype);
      if (stores) reinterpret_cast<float*>(out.block_scales)[entry] = scale;
    }
    params[i] = scale;
  }
}

// Codes one tile from its stage. Every thread calls it (it has barriers).
// Inlined: as a call it would take the tile descriptor through the stack.
template <gg_dtype kIn, int kTm>
__device__ __forceinline__ void code_tile(const QuantizeParams& p, const Tile& t, uint4* tile,
                                          CodeStage<kTm>* stage, bool need_tile_amax) {
  const int64_t matrix = p.stacked ? t.g : 0;
  const bool columnwise = p.columnwise.data != nullptr;
  const bool long_blocks = columnwise && p.columnwise.scaling == GG_BLOCK_1X128;
  const bool column_params = p.column_maxima != nullptr;
  const bool row_params = p.row_maxima != nullptr;
  if (column_params) {
    fill_line_params<kTm>(p, p.columnwise, true, p.column_maxima, t, matrix, kTk, t.cols, t.k0,
                          t.row0 == 0, stage->line_scales.columns);
  }
  ColumnRun<kIn, kTm> run;
  if (columnwise || need_tile_amax) run.load(tile, t);
  if (long_blocks) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      stage->chunk_amax[run.chunk][2 * run.pair + h] = max(run.amax_bits(h, 0), run.amax_bits(h, 1));
    }
  }
  if (need_tile_amax) {
    const uint32_t warp = warp_max(max(max(run.amax_bits(0, 0), run.amax_bits(0, 1)),
                                       max(run.amax_bits(1, 0), run.amax_bits(1, 1))));
    if (threadIdx.x % 32 == 0) stage->warp_amax[threadIdx.x / 32] = warp;
  }
  if (need_tile_amax || column_params) {
    __syncthreads();
  } else if (long_blocks) {
    sync_block_runs<kTm>();
  }
  float tile_amax = 0.0f;
  if (need_tile_amax) {
    uint32_t all = 0;
    for (int w = 0; w < kWarpsOf<kTm>; ++w) all = max(all, stage->warp_amax[w]);
    tile_amax = fmt::bits_float(all);
  }
  if (columnwise) {
    with_codec(p.columnwise, outer_scale(p.columnwise, p, t.g), [&](const auto& codec) {
      using Codec = std::decay_t<decltype(codec)>;
      const TileContext ctx{matrix, tile_param_of(codec, p.columnwise, t, matrix, tile_amax, true),
                            nullptr, stage->line_scales.columns};
      if constexpr (Codec::kBlock == kWholeTile) {
        if (column_params) {
          code_columnwise<kIn, kTm, Codec, true>(p, p.columnwise, t, run, stage, codec, ctx);
          return;
        }
      }
      code_columnwise<kIn, kTm>(p, p.columnwise, t, run, stage, codec, ctx);
    });
  }
  if (p.rowwise.data != nullptr) {
    if (row_params) {
      if (long_blocks) __syncthreads();  // the column blocks' maxima are read
      fill_line_params<kTm>(p, p.rowwise, false, p.row_maxima, t, matrix, kTm, t.rows, t.token0,
                            t.k_tile == 0, stage->line_scales.rows);
      __syncthreads();
    }
    with_codec(p.rowwise, outer_scale(p.rowwise, p, t.g), [&](const auto& codec) {
      using Codec = std::decay_t<decltype(codec)>;
      const TileContext ctx{matrix, tile_param_of(codec, p.rowwise, t, matrix, tile_amax, false),
                            stage->line_scales.rows};
      if constexpr (Codec::kBlock == kWholeTile) {
        if (t.mixed_groups || row_params) {
          write_rowwise<kIn, kTm, Codec, false, true>(p.rowwise, t, tile, codec, ctx);
          return;
        }
      }
      write_rowwise<kIn, kTm>(p.rowwise, t, tile, codec, ctx);
    });
  }
}

// code_tile where the columnwise codes are the rowwise ones
// (columnwise_codes_are_rowwise): the rowwise writer codes every element
// once and keeps its codes; the columnwise code rows are those transposed.
template <gg_dtype kIn, int kTm>
__device__ __forceinline__ void code_tile_shared(const QuantizeParams& p, const Tile& t,
                                                 uint4* tile, CodeStage<kTm>* stage) {
  const TileContext ctx{p.stacked ? t.g : 0, outer_scale(p.rowwise, p, t.g),
                        stage->line_scales.rows};
  const auto write = [&](auto codec) {
    using Codec = decltype(codec);
    if (t.mixed_groups) {
      write_rowwise<kIn, kTm, Codec, true, true>(p.rowwise, t, tile, codec, ctx);
    } else {
      write_rowwise<kIn, kTm, Codec, true>(p.rowwise, t, tile, codec, ctx);
    }
  };
  if (p.rowwise.dtype == GG_DTYPE_E4M3) {
    write(Fp8Whole<GG_DTYPE_E4M3>{{}, ctx.tile_param});
  } else {
    write(Fp8Whole<GG_DTYPE_E5M2>{{}, ctx.tile_param});
  }
  __syncthreads();  // the kept codes are in
  transpose_row_codes<kIn, kTm>(t, tile, stage);
}

}  // namespace gg::quantize

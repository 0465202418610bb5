// Grouped quantize on the GPU: ragged [M, K] or stacked [G, N, K] input to
// fp8 (tensor or group scale, 1x128, 128x128), mxfp8 and nvfp4, rowwise and
// columnwise from one read of each input tile. sm_80+ CUDA C++; meant to run
// at memory bandwidth, so the per-element work is a few instructions.
//
// Work is cut into tiles of TM tokens x 128 K-elements that never cross a
// group: group g's tiles start at its first token, so a columnwise block
// (16, 32 or 128 tokens, restarting at every group start) always lies inside
// one tile, and so does a 128x128 block. TM is 128 when an output needs
// 128-token blocks, else 32. No metadata kernel and no table in global
// memory: every CTA of the persistent grid scans the device sizes itself,
// 128 groups at a time (the clamped extents by gg::clamp_group, the tile
// prefix, the columnwise first-block prefix as the reference's first_block
// sums it), then takes the tiles of that chunk that fall to it (tile t to
// CTA t mod grid) and finds each tile's group by a binary search in shared
// memory.
//
// A tile is loaded with 16-byte vector loads (scalar ones at ragged edges)
// into shared memory as fp32, 128 floats a row with the 16-byte chunks of a
// row permuted (chunk q at q ^ ((q >> 2) & 7)), so that both walks below are
// free of bank conflicts (tile_io.cuh). At TM = 32 the next tile's input is
// copied by cp.async into a staging buffer while the current one is coded;
// at TM = 128 a thread issues four loads before it uses one. Each output is then written by a tile writer
// templated on its format's codec (tile_codecs.cuh), so the inner loops are
// straight code: the fp8 elements go through the hardware conversion, e2m1
// through a comparison ladder (element_encoders.h), both bit-identical to
// the reference rules.
//   rowwise:    a thread takes 16 consecutive K elements of one token (four
//               16-byte smem reads), takes the block amax over the 1, 2 or 8
//               threads of a block by warp shuffles, decides the block scale
//               (formats/block_quant.h) and stores 16 (fp8) or 8 (e2m1)
//               bytes in one vector store.
//   columnwise: lanes walk consecutive K columns. Threads first take the
//               amax of a block of one column (of half a 1x128 block, two
//               halves combined in a second step), decide its scale and
//               leave the element parameter in shared memory; then a thread
//               codes 16 tokens of a column, aligned in absolute token
//               position, and stores them as one vector. Only the stores at
//               a group's edges fall back to words and bytes, and e2m1 bytes
//               shared with another group (odd group starts) are set
//               nibble-wise with atomics so neighbours and untouched tokens
//               keep their bits, as in the reference.
// A 128x128 block takes the tile's amax, reduced while the tile loads.
//
// Formats whose scale comes from an amax (fp8 tensor/group scale, the nvfp4
// tensor scale) or a requested amax output take a first launch over tiles of
// 128 tokens, a plain streaming read: every thread keeps a running max of the
// fp32 bits of |x| (the order amax_accumulate uses) and the CTA merges it
// with atomicMax into the group's word in the workspace only when its next
// tile belongs to another group, and into the tensor word once at the end,
// so the result is deterministic. The quantize launch reads them; its CTA 0
// writes the amax output, the fp32 scales and the flags, and its last CTA to
// finish (a counter in the workspace) zeroes the words and the counter, so
// the next call (or graph replay) starts clean without a memset launch.
#include <cuda_runtime.h>
#include <stdint.h>

#include "common/groups.h"
#include "formats/block_quant.h"
#include "formats/codecs.h"
#include "kernels/quantize/grouped_quantize.h"
#include "kernels/quantize/tile_codecs.cuh"
#include "kernels/quantize/tile_io.cuh"
#include "kernels/tile_scheduler.h"

namespace gg::quantize {
namespace {

constexpr int kWarps = kThreads / 32;
constexpr int kChunk = 128;  // groups per scan of the sizes

enum class Pass { kAmax, kQuantize };

// ---- the per-CTA group table ----

struct GroupChunk {
  int64_t start[kChunk];
  int64_t size[kChunk];
  int64_t tile_end[kChunk];     // global tile index one past the group's last tile
  int64_t first_block[kChunk];  // columnwise: the group's first block column
  int64_t partials[kWarps];
  // Rows (capped), tiles and columnwise blocks of the groups before the
  // chunk: kept here, not in registers, while the chunk's tiles run.
  int64_t rows_before;
  int64_t tiles_before;
  int64_t blocks_before;
};

// Inclusive sum over the CTA; every thread calls it.
__device__ int64_t block_inclusive_sum(int64_t value, int64_t* partials, int64_t* total) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    const int64_t below = __shfl_up_sync(0xffffffffu, value, d);
    if (lane >= d) value += below;
  }
  if (lane == 31) partials[warp] = value;
  __syncthreads();
  int64_t before = 0;
  int64_t sum = 0;
  for (int w = 0; w < kWarps; ++w) {
    if (w < warp) before += partials[w];
    sum += partials[w];
  }
  __syncthreads();
  *total = sum;
  return value + before;
}

__host__ __device__ inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
__host__ __device__ inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

__device__ uint32_t warp_max(uint32_t v) {
#pragma unroll
  for (int d = 16; d > 0; d /= 2) v = max(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}

__device__ float amax_of(const uint32_t* amax_bits, int32_t g) {
  return fmt::bits_float(amax_bits[g]);
}

// The fp32 scale of group g of one output (1 where it has none), from the
// amax words: the reference's outer_scale_from_amax.
__device__ float outer_scale(const OutputParams& out, const QuantizeParams& p, int32_t g) {
  if (out.extent == GG_SCALE_NONE) return 1.0f;
  const float amax = amax_of(p.amax_bits, out.extent == GG_SCALE_GROUP ? g : p.groups);
  if (out.scaling == GG_BLOCK_NV16) return fmt::nvfp4_tensor_scale(amax);
  return fmt::fp8_scale_from_amax(amax, out.dtype);
}

// Codes x[0..15] into words, elements before `split` under parameter p0,
// the others under p1.
template <class Codec>
__device__ void encode16(const Codec& codec, const float* x, float p0, float p1, int split,
                         uint32_t* words) {
  constexpr int kBits = Codec::kBits;
#pragma unroll
  for (int w = 0; w < kBits * kPerThread / 32; ++w) words[w] = 0;
#pragma unroll
  for (int i = 0; i < kPerThread; i += 2) {
    const uint32_t pair =
        codec.encode2(x[i], i < split ? p0 : p1, x[i + 1], i + 1 < split ? p0 : p1);
    const int bit = i * kBits;
    words[bit / 32] |= pair << (bit % 32);
  }
}

// ---- the tile writers ----

// Per-tile facts every writer needs.
struct TileContext {
  int64_t matrix;    // stacked matrix index (0 when ragged)
  float tile_param;  // kWholeTile / kSquareTile codecs: the element parameter
};

// The rowwise output of a tile: output rows = tokens, blocks along K.
template <int TM, class Codec>
__device__ void write_rowwise(const QuantizeParams& p, const OutputParams& out, const Tile& t,
                              const float* tile, const Codec& codec, const TileContext& ctx) {
  constexpr int kThreadsPerRow = kTk / kPerThread;  // 8
#pragma unroll 1
  for (int it = 0; it < TM * kThreadsPerRow / kThreads; ++it) {
    const int job = static_cast<int>(threadIdx.x) + it * kThreads;
    const int r = job / kThreadsPerRow;
    const int j = job % kThreadsPerRow;  // lanes 8m .. 8m+7 share a row
    const int c0 = j * kPerThread;
    float x[kPerThread];
#pragma unroll
    for (int i = 0; i < kPerThread; i += 4) {
      const float4 v = *reinterpret_cast<const float4*>(tile + tile_index(r, c0 + i));
      x[i] = v.x;
      x[i + 1] = v.y;
      x[i + 2] = v.z;
      x[i + 3] = v.w;
    }
    float param = ctx.tile_param;
    if constexpr (Codec::kBlock > 0) {
      uint32_t amax = 0;
#pragma unroll
      for (int i = 0; i < kPerThread; ++i) amax = max(amax, abs_bits(x[i]));
      // The other threads of the block are the lanes j ^ 1, 2, 4.
#pragma unroll
      for (int d = 1; d < Codec::kBlock / kPerThread; d *= 2) {
        amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, d));
      }
      const BlockDecision decision = codec.decide(fmt::bits_float(amax));
      param = decision.param;
      if (r < t.rows && c0 < t.cols && j % (Codec::kBlock / kPerThread) == 0) {
        const int64_t index = ctx.matrix * out.scale_matrix_entries +
                              (t.token0 + r) * out.scale_row_length + (t.k0 + c0) / Codec::kBlock;
        Codec::store(out, index, decision.stored);
      }
    }
    if (r >= t.rows || c0 >= t.cols) continue;
    uint32_t words[Codec::kBits * kPerThread / 32];
    encode16(codec, x, param, param, kPerThread, words);
    const int valid_cols = t.cols - c0;
    const uint32_t valid = valid_cols >= kPerThread ? 0xFFFFu : (1u << valid_cols) - 1u;
    store16<Codec::kBits>(out.data,
                          ctx.matrix * out.matrix_stride + (t.token0 + r) * out.row_stride + t.k0 + c0,
                          words, valid);
  }
}

// Shared-memory scratch of the columnwise writer, past the tile.
template <int TM>
struct ColumnScratch {
  uint32_t half_amax[TM / 64 > 0 ? TM / 64 : 1][kTk];  // amaxes of 64-token halves (1x128)
  float param[TM / 16][kTk];  // a block's element parameter, by block row
};

// The columnwise output of a tile: output rows = K, columns = tokens, blocks
// along tokens from the group start.
template <int TM, class Codec>
__device__ void write_columnwise(const QuantizeParams& p, const OutputParams& out, const Tile& t,
                                 const float* tile, ColumnScratch<TM>* scratch, const Codec& codec,
                                 const TileContext& ctx) {
  constexpr int kBlock = Codec::kBlock;
  if constexpr (kBlock > 0) {
    // Block amaxes, one column per lane, decided at once; 1x128 blocks
    // are taken in two halves of 64 tokens, merged in a second step.
    constexpr int kSpan = kBlock > 64 ? 64 : kBlock;
    for (int job = threadIdx.x; job < kTk * (TM / kSpan); job += kThreads) {
      const int k = job % kTk;
      const int s = job / kTk;
      uint32_t amax = 0;
#pragma unroll 8
      for (int i = 0; i < kSpan; ++i) amax = max(amax, abs_bits(tile[tile_index(s * kSpan + i, k)]));
      if constexpr (kSpan == kBlock) {
        const BlockDecision decision = codec.decide(fmt::bits_float(amax));
        scratch->param[s][k] = decision.param;
        if (k < t.cols && s * kBlock < t.rows) {
          const int64_t column = (p.stacked ? 0 : t.first_block) + t.row0 / kBlock + s;
          Codec::store(out,
                       ctx.matrix * out.scale_matrix_entries +
                           (t.k0 + k) * out.scale_row_length + column,
                       decision.stored);
        }
      } else {
        scratch->half_amax[s][k] = amax;
      }
    }
    if constexpr (kSpan != kBlock) {
      __syncthreads();
      constexpr int kHalves = kBlock / kSpan;
      for (int job = threadIdx.x; job < kTk * (TM / kBlock); job += kThreads) {
        const int k = job % kTk;
        const int b = job / kTk;
        uint32_t amax = 0;
#pragma unroll
        for (int h = 0; h < kHalves; ++h) amax = max(amax, scratch->half_amax[b * kHalves + h][k]);
        const BlockDecision decision = codec.decide(fmt::bits_float(amax));
        scratch->param[b][k] = decision.param;
        if (k < t.cols && b * kBlock < t.rows) {
          const int64_t column = (p.stacked ? 0 : t.first_block) + t.row0 / kBlock + b;
          Codec::store(out,
                       ctx.matrix * out.scale_matrix_entries + (t.k0 + k) * out.scale_row_length +
                           column,
                       decision.stored);
        }
      }
    }
    __syncthreads();
  }
  // Codes: 16 tokens of one column per thread, aligned in absolute token
  // position, so the stores are aligned vectors but at the group's edges.
  const int offset = static_cast<int>(t.token0 % kPerThread);
  const int chunks = (offset + t.rows + kPerThread - 1) / kPerThread;
  for (int job = threadIdx.x; job < kTk * chunks; job += kThreads) {
    const int k = job % kTk;
    const int chunk = job / kTk;
    if (k >= t.cols) continue;
    const int r0 = chunk * kPerThread - offset;  // tile row of the first token
    float x[kPerThread];
    uint32_t valid = 0;
    float p0 = ctx.tile_param;
    float p1 = ctx.tile_param;
    int boundary = TM;
    if constexpr (kBlock > 0) {
      // 16 tokens span at most two blocks.
      const int b0 = (r0 > 0 ? r0 : 0) / kBlock;
      boundary = (b0 + 1) * kBlock;
      p0 = scratch->param[b0][k];
      p1 = boundary < t.rows ? scratch->param[b0 + 1][k] : p0;
    }
#pragma unroll
    for (int i = 0; i < kPerThread; ++i) {
      const int r = r0 + i;
      const bool live = r >= 0 && r < t.rows;
      x[i] = live ? tile[tile_index(r, k)] : 0.0f;
      valid |= live ? 1u << i : 0u;
    }
    uint32_t words[Codec::kBits * kPerThread / 32];
    encode16(codec, x, p0, p1, boundary - r0, words);
    store16<Codec::kBits>(out.data,
                          ctx.matrix * out.matrix_stride + (t.k0 + k) * out.row_stride +
                              (t.token0 - offset) + chunk * kPerThread,
                          words, valid);
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

// ---- the two passes over one tile ----

// 64-bit quotient and remainder, by 32-bit division when both fit.
__device__ void divide(int64_t a, int64_t b, int64_t* q, int64_t* r) {
  if (((a | b) >> 32) == 0) {
    const uint32_t q32 = static_cast<uint32_t>(a) / static_cast<uint32_t>(b);
    *q = q32;
    *r = a - static_cast<int64_t>(q32) * b;
  } else {
    *q = a / b;
    *r = a % b;
  }
}

template <int TM, gg_dtype kIn>
__device__ uint32_t amax_tile(const QuantizeParams& p, const Tile& t, int64_t input_base) {
  constexpr int kVec = kIn == GG_DTYPE_FP32 ? 4 : 8;
  uint32_t amax = 0;
  for_each_slot<TM, kIn, 4>(p, t, input_base, [&](int, int, const float* x) {
#pragma unroll
    for (int i = 0; i < kVec; ++i) amax = max(amax, abs_bits(x[i]));
  });
  return amax;
}

// Merges the CTA's running amax into group g's word (every thread calls it).
__device__ void flush_group_amax(const QuantizeParams& p, int32_t g, uint32_t* amax,
                                 uint32_t* reduce) {
  const uint32_t warp = warp_max(*amax);
  *amax = 0;
  if (threadIdx.x % 32 == 0) reduce[threadIdx.x / 32] = warp;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t all = 0;
    for (int w = 0; w < kWarps; ++w) all = max(all, reduce[w]);
    if (all != 0) atomicMax(p.amax_bits + g, all);  // the words start at 0
  }
  __syncthreads();
}

// Tile `index` of the chunk of `count` groups from group `base`: its group
// is the first whose tile_end exceeds `index`.
template <int TM>
__device__ Tile tile_at(const GroupChunk& chunk, int count, int64_t base, int64_t index,
                        int64_t tiles_k, int64_t cols) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (chunk.tile_end[mid] > index) hi = mid; else lo = mid + 1;
  }
  const int64_t group_tiles = ceil_div(chunk.size[lo], TM) * tiles_k;
  const int64_t local = index - (chunk.tile_end[lo] - group_tiles);
  Tile t;
  t.g = static_cast<int32_t>(base + lo);
  int64_t m_tile = 0;
  divide(local, tiles_k, &m_tile, &t.k_tile);
  t.row0 = m_tile * TM;
  t.token0 = chunk.start[lo] + t.row0;
  t.rows = static_cast<int>(min64(TM, chunk.size[lo] - t.row0));
  t.k0 = t.k_tile * kTk;
  t.cols = static_cast<int>(min64(kTk, cols - t.k0));
  t.first_block = chunk.first_block[lo];
  return t;
}

// CTAs per SM the register allocation must allow: four (64 registers a
// thread), three for the quantize pass at TM = 128, whose 72 KB of shared
// memory admit no more.
template <int TM, Pass kPass>
__global__ void __launch_bounds__(kThreads, kPass == Pass::kQuantize && TM == 128 ? 3 : 4)
    quantize_kernel(const __grid_constant__ QuantizeParams p) {
  extern __shared__ float4 dynamic_smem[];  // the tile, then the columnwise scratch
  float* tile = reinterpret_cast<float*>(dynamic_smem);
  auto* scratch = reinterpret_cast<ColumnScratch<TM>*>(tile + TM * kTk);
  constexpr bool kStaged = TM == 32;
  uint4* stage = reinterpret_cast<uint4*>(scratch + 1);
  __shared__ GroupChunk chunk;
  __shared__ uint32_t reduce[kWarps];

  const int64_t tiles_k = (p.cols + kTk - 1) / kTk;
  const int col_block = p.columnwise.data != nullptr && p.columnwise.block > 0 &&
                                p.columnwise.scaling != GG_BLOCK_128X128
                            ? p.columnwise.block
                            : 0;
  const bool square_any = p.rowwise.scaling == GG_BLOCK_128X128 && p.rowwise.data != nullptr;
  const bool need_tile_amax =
      square_any || (p.columnwise.data != nullptr && p.columnwise.scaling == GG_BLOCK_128X128);
  const bool lead = blockIdx.x == 0;
  if (threadIdx.x == 0) {
    chunk.rows_before = 0;
    chunk.tiles_before = 0;
    chunk.blocks_before = 0;
  }
  __syncthreads();
  // The amax pass: this thread's running max for group `amax_group`, and
  // for the tensor.
  uint32_t group_amax = 0, tensor_amax = 0;
  int32_t amax_group = -1;

  for (int64_t base = 0; base < p.groups; base += kChunk) {
    // The chunk's group table, as the reference's read_groups builds it.
    const int64_t rows_before = chunk.rows_before;
    const int64_t tiles_before = chunk.tiles_before;
    const int64_t blocks_before = chunk.blocks_before;
    uint32_t flags = 0;
    const int64_t g = base + threadIdx.x;
    const bool live = threadIdx.x < kChunk && g < p.groups;
    GroupExtent extent{0, 0};
    int64_t counted = 0;
    int64_t raw_size = 0;
    if (live) {
      raw_size = p.stacked ? p.rows : load_index(p.sizes, p.index_type, g);
      counted = counted_size(raw_size, p.rows);
    }
    int64_t rows_total = 0;
    const int64_t rows_inclusive = block_inclusive_sum(counted, chunk.partials, &rows_total);
    if (live) {
      if (p.stacked) {
        extent = GroupExtent{0, p.rows};
      } else {
        const bool has_offsets = p.offsets != nullptr;
        const int64_t raw_offset = has_offsets ? load_index(p.offsets, p.index_type, g) : 0;
        const int64_t previous_end = capped_sum(rows_before, rows_inclusive - counted, p.rows);
        extent = clamp_group(raw_size, has_offsets, raw_offset, previous_end, p.rows, &flags);
      }
    }
    const int64_t tiles = ceil_div(extent.size, TM) * tiles_k;
    int64_t tiles_total = 0;
    const int64_t tiles_inclusive = block_inclusive_sum(tiles, chunk.partials, &tiles_total);
    const int64_t blocks = col_block > 0 ? ceil_div(extent.size, col_block) : 0;
    int64_t blocks_total = 0;
    const int64_t blocks_inclusive = block_inclusive_sum(blocks, chunk.partials, &blocks_total);
    if (threadIdx.x < kChunk) {
      chunk.start[threadIdx.x] = extent.start;
      chunk.size[threadIdx.x] = extent.size;
      chunk.tile_end[threadIdx.x] = tiles_before + tiles_inclusive;
      chunk.first_block[threadIdx.x] = blocks_before + blocks_inclusive - blocks;
    }
    if (kPass == Pass::kQuantize && lead && live) {
      // Per-group outputs that need no tile: amax and the fp32 scales.
      const int32_t group = static_cast<int32_t>(g);
      if (p.amax != nullptr) p.amax[group] = amax_of(p.amax_bits, group);
      const OutputParams* outs[2] = {&p.rowwise, &p.columnwise};
      for (const OutputParams* out : outs) {
        if (out->data == nullptr || out->extent == GG_SCALE_NONE) continue;
        if (out->extent == GG_SCALE_GROUP) out->scale[group] = outer_scale(*out, p, group);
        if (out->extent == GG_SCALE_TENSOR && group == 0) out->scale[0] = outer_scale(*out, p, 0);
      }
    }
    if (kPass == Pass::kQuantize && lead && flags != 0) atomicOr(p.flags, flags);
    __syncthreads();
    if (threadIdx.x == 0) {  // every thread has read them above
      chunk.rows_before = capped_sum(rows_before, rows_total, p.rows);
      chunk.tiles_before = tiles_before + tiles_total;
      chunk.blocks_before = blocks_before + blocks_total;
    }

    // This CTA's tiles of the chunk.
    const int count = static_cast<int>(min64(kChunk, p.groups - base));
    // The quantize pass has no tile to write when only amax was asked for.
    const bool writes = p.rowwise.data != nullptr || p.columnwise.data != nullptr;
    const int64_t chunk_end = tiles_before + (kPass == Pass::kAmax || writes ? tiles_total : 0);
    int64_t first = tiles_before + (static_cast<int64_t>(blockIdx.x) - tiles_before % gridDim.x +
                                    gridDim.x) % gridDim.x;
    bool staged = false;  // the tile `index` is in the staging buffer
    for (int64_t index = first; index < chunk_end; index += gridDim.x) {
      const Tile t = tile_at<TM>(chunk, count, base, index, tiles_k, p.cols);
      const int64_t input_base = input_base_of(p, t);

      if constexpr (kPass == Pass::kAmax) {
        if (t.g != amax_group) {  // the same for the whole CTA
          if (amax_group >= 0) flush_group_amax(p, amax_group, &group_amax, reduce);
          amax_group = t.g;
        }
        uint32_t a = 0;
        switch (p.input_type) {
          case GG_DTYPE_BF16: a = amax_tile<TM, GG_DTYPE_BF16>(p, t, input_base); break;
          case GG_DTYPE_FP16: a = amax_tile<TM, GG_DTYPE_FP16>(p, t, input_base); break;
          default: a = amax_tile<TM, GG_DTYPE_FP32>(p, t, input_base); break;
        }
        group_amax = max(group_amax, a);
        tensor_amax = max(tensor_amax, a);
      } else {
        uint32_t a = 0;
        if constexpr (kStaged) {
          if (!staged) stage_any<TM>(p, t, stage);
          switch (p.input_type) {
            case GG_DTYPE_BF16: a = unstage_tile<TM, GG_DTYPE_BF16>(p, t, stage, tile); break;
            case GG_DTYPE_FP16: a = unstage_tile<TM, GG_DTYPE_FP16>(p, t, stage, tile); break;
            default: a = unstage_tile<TM, GG_DTYPE_FP32>(p, t, stage, tile); break;
          }
        } else {
          switch (p.input_type) {
            case GG_DTYPE_BF16: a = load_tile<TM, GG_DTYPE_BF16>(p, t, input_base, tile); break;
            case GG_DTYPE_FP16: a = load_tile<TM, GG_DTYPE_FP16>(p, t, input_base, tile); break;
            default: a = load_tile<TM, GG_DTYPE_FP32>(p, t, input_base, tile); break;
          }
        }
        if (need_tile_amax) {
          a = warp_max(a);
          if (threadIdx.x % 32 == 0) reduce[threadIdx.x / 32] = a;
        }
        __syncthreads();
        float tile_amax = 0.0f;
        if (need_tile_amax) {
          uint32_t all = 0;
          for (int w = 0; w < kWarps; ++w) all = max(all, reduce[w]);
          tile_amax = fmt::bits_float(all);
        }
        if constexpr (kStaged) {
          // The next tile of the chunk streams in while this one is coded.
          const int64_t next = index + gridDim.x;
          staged = next < chunk_end;
          if (staged) stage_any<TM>(p, tile_at<TM>(chunk, count, base, next, tiles_k, p.cols), stage);
        }
        const int64_t matrix = p.stacked ? t.g : 0;
        if (p.rowwise.data != nullptr) {
          with_codec(p.rowwise, outer_scale(p.rowwise, p, t.g), [&](const auto& codec) {
            const TileContext ctx{matrix,
                                  tile_param_of(codec, p.rowwise, t, matrix, tile_amax, false)};
            write_rowwise<TM>(p, p.rowwise, t, tile, codec, ctx);
          });
        }
        if (p.columnwise.data != nullptr) {
          with_codec(p.columnwise, outer_scale(p.columnwise, p, t.g), [&](const auto& codec) {
            const TileContext ctx{matrix,
                                  tile_param_of(codec, p.columnwise, t, matrix, tile_amax, true)};
            write_columnwise<TM>(p, p.columnwise, t, tile, scratch, codec, ctx);
          });
        }
        __syncthreads();  // the tile, the scratch and `reduce` are rewritten next
      }
    }
    __syncthreads();  // the chunk table is rewritten next
  }

  if constexpr (kPass == Pass::kAmax) {
    if (amax_group >= 0) flush_group_amax(p, amax_group, &group_amax, reduce);
    const uint32_t warp = warp_max(tensor_amax);
    if (threadIdx.x % 32 == 0 && warp != 0) atomicMax(p.amax_bits + p.groups, warp);
    return;
  }
  if (!p.amax_pass) return;
  // The last CTA out zeroes the amax words and the counter for the next call.
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(p.done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int64_t g = threadIdx.x; g <= p.groups; g += kThreads) p.amax_bits[g] = 0;
  if (threadIdx.x == 0) *p.done = 0;
}

template <int TM, Pass kPass>
cudaError_t launch(const QuantizeParams& params, int64_t max_tiles, int sm_count,
                   cudaStream_t stream) {
  const auto kernel = quantize_kernel<TM, kPass>;
  const size_t smem = kPass == Pass::kQuantize
                          ? static_cast<size_t>(TM) * kTk * sizeof(float) +
                                sizeof(ColumnScratch<TM>) + (TM == 32 ? kStageBytes : 0)
                          : 0;
  cudaError_t error =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           static_cast<int>(smem));
  if (error != cudaSuccess) return error;
  int per_sm = 0;
  error = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, smem);
  if (error != cudaSuccess) return error;
  const int64_t resident = static_cast<int64_t>(sm_count) * (per_sm > 0 ? per_sm : 1);
  const int64_t grid = max64(1, min64(resident, max_tiles));
  kernel<<<static_cast<unsigned>(grid), kThreads, smem, stream>>>(params);
  return cudaGetLastError();
}

}  // namespace

int tile_rows(const QuantizeParams& p) {
  const bool rowwise_square = p.rowwise.data != nullptr && p.rowwise.scaling == GG_BLOCK_128X128;
  const bool columnwise_long = p.columnwise.data != nullptr && p.columnwise.block == 128;
  return rowwise_square || columnwise_long ? 128 : 32;
}

int64_t max_tiles(const QuantizeParams& p, int tm) {
  const int64_t tiles_k = ceil_div(p.cols, kTk);
  if (p.stacked) return p.groups * ceil_div(p.rows, tm) * tiles_k;
  // Prefix-sum groups hold at most one partial tile each; groups placed by
  // offsets may each span all M rows.
  const int64_t m_tiles = p.offsets == nullptr ? ragged_block_capacity(p.rows, tm, p.groups)
                                               : p.groups * ceil_div(p.rows, tm);
  return m_tiles * tiles_k;
}

cudaError_t launch_grouped_quantize(const QuantizeParams& params, int sm_count,
                                    cudaStream_t stream) {
  const int tm = tile_rows(params);
  const int64_t bound = max_tiles(params, tm);
  if (params.amax_pass) {
    // The amax pass takes 128-token tiles whatever the outputs: eight
    // 16-byte loads a thread in flight, and a quarter of the tile lookups.
    const cudaError_t error =
        launch<128, Pass::kAmax>(params, max_tiles(params, 128), sm_count, stream);
    if (error != cudaSuccess) return error;
  }
  return tm == 128 ? launch<128, Pass::kQuantize>(params, bound, sm_count, stream)
                   : launch<32, Pass::kQuantize>(params, bound, sm_count, stream);
}

}  // namespace gg::quantize

// Grouped quantize on the GPU: ragged [M, K] or stacked [G, N, K] input to
// fp8 (tensor or group scale, 1x128, 128x128), mxfp8 and nvfp4, rowwise and
// columnwise from one read of each input tile. sm_80+ CUDA C++; memory-bound.
//
// Work is cut into tiles of TM tokens x 128 K-elements that never cross a
// group: group g's tiles start at its first token, so a columnwise block
// (16, 32 or 128 tokens, restarting at every group start) always lies inside
// one tile, and so does a 128x128 block. TM is 128 when an output needs
// 128-token blocks, else 32. No metadata kernel and no table in global
// memory: every CTA of the persistent grid scans the device sizes itself,
// 256 groups at a time (the clamped extents by gg::clamp_group, the tile
// prefix, the columnwise first-block prefix as the reference's first_block
// sums it), then takes the tiles of that chunk that fall to it (tile t to
// CTA t mod grid) and finds each tile's group by a binary search in shared
// memory. Any G works; reading G sizes per CTA is a few KB of L2 traffic.
//
// A tile is loaded once (16-byte vectors when aligned) into shared memory as
// fp32, then each requested output is written from it: first the block
// scales (one thread per block, conflict-free shared-memory walks), then the
// codes, four fp8 or eight e2m1 elements per thread in 4-byte words whose
// positions are aligned in the output, so both the rowwise [.., K] and the
// transposed columnwise [K, ..] stores are coalesced words; only the words at
// a group's edges fall back to bytes, and e2m1 bytes shared with another
// group (odd group starts, columnwise) are set nibble-wise with atomics so
// neighbours and untouched tokens keep their bits, as in the reference.
// Every decision is the formats/block_quant.h function the CPU reference
// calls, on the same fp32 values, so the bits agree.
//
// Formats whose scale comes from an amax (fp8 tensor/group scale, the nvfp4
// tensor scale) or a requested amax output take a first launch over the same
// tiles: atomicMax on the fp32 bits of |x| (the order amax_accumulate uses,
// so the result is deterministic) into per-group words and a tensor word in
// the workspace. The quantize launch reads them; its CTA 0 writes the amax
// output, the fp32 scales and the flags, and its last CTA to finish (a
// counter in the workspace) zeroes the words and the counter, so the next
// call (or graph replay) starts clean without a memset launch.
#include <cuda_runtime.h>
#include <stdint.h>

#include "common/groups.h"
#include "formats/block_quant.h"
#include "formats/codecs.h"
#include "kernels/quantize/grouped_quantize.h"
#include "kernels/tile_scheduler.h"

namespace gg::quantize {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kTk = kTileCols;
constexpr int kPitch = kTk + 1;  // shared-memory row pitch in floats: columns walk banks
constexpr int kMaxBlocksPerTile = 128 * kTk / 16;

enum class Pass { kAmax, kQuantize };

// ---- the per-CTA group table ----

struct GroupChunk {
  int64_t start[kThreads];
  int64_t size[kThreads];
  int64_t tile_end[kThreads];     // global tile index one past the group's last tile
  int64_t first_block[kThreads];  // columnwise: the group's first block column
  int64_t partials[kWarps];
  int count;
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

__device__ float load_float(const void* base, gg_dtype type, int64_t index) {
  switch (type) {
    case GG_DTYPE_BF16:
      return fmt::bf16_to_float(static_cast<const uint16_t*>(base)[index]);
    case GG_DTYPE_FP16:
      return fmt::fp16_to_float(static_cast<const uint16_t*>(base)[index]);
    default:
      return static_cast<const float*>(base)[index];
  }
}

// Four consecutive input elements of one row; those at or past `valid` read
// as 0 (which no amax notices).
__device__ void load4(const void* base, gg_dtype type, int64_t index, int valid, float out[4]) {
  const int bytes = type == GG_DTYPE_FP32 ? 4 : 2;
  const char* address = static_cast<const char*>(base) + index * bytes;
  if (valid >= 4 && reinterpret_cast<uintptr_t>(address) % (4 * bytes) == 0) {
    if (bytes == 4) {
      const float4 v = *reinterpret_cast<const float4*>(address);
      out[0] = v.x;
      out[1] = v.y;
      out[2] = v.z;
      out[3] = v.w;
    } else {
      const uint2 v = *reinterpret_cast<const uint2*>(address);
      const uint16_t h[4] = {static_cast<uint16_t>(v.x), static_cast<uint16_t>(v.x >> 16),
                             static_cast<uint16_t>(v.y), static_cast<uint16_t>(v.y >> 16)};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        out[i] = type == GG_DTYPE_BF16 ? fmt::bf16_to_float(h[i]) : fmt::fp16_to_float(h[i]);
      }
    }
    return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) out[i] = i < valid ? load_float(base, type, index + i) : 0.0f;
}

__host__ __device__ inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
__host__ __device__ inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

__device__ uint32_t abs_bits(float x) { return fmt::float_bits(x) & ~fmt::kF32SignBit; }

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

// ---- stores ----

// ORs `nibble` into the element at byte `byte`, half `high`, leaving the
// other half to whoever owns it: the word-wide atomics cannot tear it.
__device__ void set_nibble(uint8_t* byte, bool high, uint32_t nibble) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(byte);
  unsigned int* word = reinterpret_cast<unsigned int*>(address & ~uintptr_t{3});
  const unsigned shift = static_cast<unsigned>((address & 3u) * 8u + (high ? 4u : 0u));
  atomicAnd(word, ~(0xFu << shift));
  atomicOr(word, (nibble & 0xFu) << shift);
}

// Stores the codes of `count` (4 fp8 or 8 e2m1) consecutive output elements
// from element `first` (even for e2m1), packed little-endian in `codes`;
// `valid` has a bit per element that is this thread's to write.
__device__ void store_codes(uint8_t* data, gg_dtype dtype, int64_t first, uint32_t codes,
                            uint32_t valid) {
  const bool e2m1 = dtype == GG_DTYPE_E2M1;
  const uint32_t all = e2m1 ? 0xFFu : 0xFu;
  uint8_t* bytes = data + (e2m1 ? first / 2 : first);
  if (valid == all && reinterpret_cast<uintptr_t>(bytes) % 4 == 0) {
    *reinterpret_cast<uint32_t*>(bytes) = codes;
    return;
  }
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    const uint8_t byte = static_cast<uint8_t>(codes >> (8 * b));
    if (!e2m1) {
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

// ---- block decisions ----

// The scale a block of amax `amax` gets, as the word the codes need, and its
// store into the scale matrix (fp32 for 1x128 and 128x128, else one byte).
__device__ uint32_t decide_block(const OutputParams& out, float amax, float outer) {
  switch (out.scaling) {
    case GG_BLOCK_MX32:
      return fmt::mx_block_scale(amax, out.dtype);
    case GG_BLOCK_NV16:
      return fmt::nvfp4_block_scale(amax, outer);
    case GG_BLOCK_1X128:
    case GG_BLOCK_128X128:
      return fmt::float_bits(fmt::fp8_scale_from_amax(amax, out.dtype));
    case GG_BLOCK_NONE:
      break;
  }
  return fmt::float_bits(outer);
}

__device__ void store_block_scale(const OutputParams& out, int64_t index, uint32_t scale) {
  if (out.scaling == GG_BLOCK_1X128 || out.scaling == GG_BLOCK_128X128) {
    reinterpret_cast<float*>(out.block_scales)[index] = fmt::bits_float(scale);
  } else {
    out.block_scales[index] = static_cast<uint8_t>(scale);
  }
}

__device__ uint32_t code_of(const OutputParams& out, float x, uint32_t scale, float outer) {
  switch (out.scaling) {
    case GG_BLOCK_MX32:
      return fmt::mx_quantize_element(x, static_cast<uint8_t>(scale), out.dtype);
    case GG_BLOCK_NV16:
      return fmt::nvfp4_quantize_element(x, static_cast<uint8_t>(scale), outer);
    default:
      return fmt::fp8_quantize_element(x, fmt::bits_float(scale), out.dtype);
  }
}

// ---- one tile ----

struct Tile {
  int32_t g;
  int64_t token0;     // first token (absolute row of the input matrix)
  int64_t row0;       // first token relative to the group start
  int rows;           // valid tokens
  int64_t k0;         // first K element
  int cols;           // valid K elements
  int64_t k_tile;     // k0 / 128
  int64_t first_block;  // columnwise: the group's first block column (ragged)
};

// The rowwise output of a tile: output rows = tokens, blocks along K.
template <int TM>
__device__ void write_rowwise(const QuantizeParams& p, const OutputParams& out, const Tile& t,
                              const float* tile, uint32_t* block_word, float tile_amax) {
  const float outer = outer_scale(out, p, t.g);
  const int64_t matrix = p.stacked ? t.g : 0;
  const bool square = out.scaling == GG_BLOCK_128X128;
  const int bs = out.block;
  // Block scales.
  if (square) {
    if (threadIdx.x == 0) {
      const uint32_t s = decide_block(out, tile_amax, outer);
      block_word[0] = s;
      const int64_t index =
          matrix * out.scale_matrix_entries + (t.row0 / 128) * out.scale_row_length + t.k_tile;
      store_block_scale(out, index, s);
    }
  } else if (bs > 0) {
    const int per_row = kTk / bs;
    for (int job = threadIdx.x; job < TM * per_row; job += kThreads) {
      const int r = job % TM;  // consecutive threads: consecutive rows, distinct banks
      const int b = job / TM;
      if (r >= t.rows || b * bs >= t.cols) continue;
      float amax = 0.0f;
      for (int i = 0; i < bs; ++i) amax = fmt::amax_accumulate(amax, tile[r * kPitch + b * bs + i]);
      const uint32_t s = decide_block(out, amax, outer);
      block_word[r * per_row + b] = s;
      const int64_t index = matrix * out.scale_matrix_entries +
                            (t.token0 + r) * out.scale_row_length + t.k0 / bs + b;
      store_block_scale(out, index, s);
    }
  }
  __syncthreads();
  // Codes: `vec` consecutive K elements per thread, threads along K first.
  const int vec = out.dtype == GG_DTYPE_E2M1 ? 8 : 4;
  const int bits = out.dtype == GG_DTYPE_E2M1 ? 4 : 8;
  const int chunks = kTk / vec;
  const uint32_t outer_word = fmt::float_bits(outer);
  for (int job = threadIdx.x; job < TM * chunks; job += kThreads) {
    const int r = job / chunks;
    const int c = (job % chunks) * vec;
    if (r >= t.rows || c >= t.cols) continue;
    const uint32_t scale =
        square ? block_word[0] : (bs > 0 ? block_word[r * (kTk / bs) + c / bs] : outer_word);
    uint32_t codes = 0;
    uint32_t valid = 0;
    for (int i = 0; i < vec; ++i) {
      if (c + i >= t.cols) break;
      codes |= code_of(out, tile[r * kPitch + c + i], scale, outer) << (bits * i);
      valid |= 1u << i;
    }
    const int64_t first =
        matrix * out.matrix_stride + (t.token0 + r) * out.row_stride + t.k0 + c;
    store_codes(out.data, out.dtype, first, codes, valid);
  }
  __syncthreads();
}

// The columnwise output of a tile: output rows = K, columns = tokens, blocks
// along tokens from the group start.
template <int TM>
__device__ void write_columnwise(const QuantizeParams& p, const OutputParams& out, const Tile& t,
                                 const float* tile, uint32_t* block_word, float tile_amax) {
  const float outer = outer_scale(out, p, t.g);
  const int64_t matrix = p.stacked ? t.g : 0;
  const bool square = out.scaling == GG_BLOCK_128X128;
  const int bs = out.block;
  if (square) {
    if (threadIdx.x == 0) {
      const uint32_t s = decide_block(out, tile_amax, outer);
      block_word[0] = s;
      const int64_t index =
          matrix * out.scale_matrix_entries + t.k_tile * out.scale_row_length + t.row0 / 128;
      store_block_scale(out, index, s);
    }
  } else if (bs > 0) {
    const int per_col = TM / bs;
    for (int job = threadIdx.x; job < kTk * per_col; job += kThreads) {
      const int k = job % kTk;  // consecutive threads: consecutive columns
      const int b = job / kTk;
      if (k >= t.cols || b * bs >= t.rows) continue;
      float amax = 0.0f;
      for (int i = 0; i < bs; ++i) amax = fmt::amax_accumulate(amax, tile[(b * bs + i) * kPitch + k]);
      const uint32_t s = decide_block(out, amax, outer);
      block_word[b * kTk + k] = s;
      const int64_t column = (p.stacked ? 0 : t.first_block) + t.row0 / bs + b;
      const int64_t index =
          matrix * out.scale_matrix_entries + (t.k0 + k) * out.scale_row_length + column;
      store_block_scale(out, index, s);
    }
  }
  __syncthreads();
  // Codes: chunks of `vec` tokens aligned in absolute token position, so the
  // stores are aligned words but at the group's edges.
  const int vec = out.dtype == GG_DTYPE_E2M1 ? 8 : 4;
  const int bits = out.dtype == GG_DTYPE_E2M1 ? 4 : 8;
  const int64_t aligned0 = t.token0 - t.token0 % vec;
  const int chunks = static_cast<int>((t.token0 + t.rows - aligned0 + vec - 1) / vec);
  const uint32_t outer_word = fmt::float_bits(outer);
  for (int job = threadIdx.x; job < kTk * chunks; job += kThreads) {
    const int k = job / chunks;
    const int64_t first_token = aligned0 + static_cast<int64_t>(job % chunks) * vec;
    if (k >= t.cols) continue;
    uint32_t codes = 0;
    uint32_t valid = 0;
    for (int i = 0; i < vec; ++i) {
      const int r = static_cast<int>(first_token + i - t.token0);
      if (r < 0 || r >= t.rows) continue;
      const uint32_t scale =
          square ? block_word[0] : (bs > 0 ? block_word[(r / bs) * kTk + k] : outer_word);
      codes |= code_of(out, tile[r * kPitch + k], scale, outer) << (bits * i);
      valid |= 1u << i;
    }
    const int64_t first = matrix * out.matrix_stride + (t.k0 + k) * out.row_stride + first_token;
    store_codes(out.data, out.dtype, first, codes, valid);
  }
  __syncthreads();
}

// Largest |x| of the tile, over the CTA (every thread gets it).
__device__ float tile_amax_of(const float* tile, const Tile& t, int TM, uint32_t* reduce) {
  uint32_t amax = 0;
  for (int e = threadIdx.x; e < TM * kTk; e += kThreads) {
    const int r = e / kTk;
    const int c = e % kTk;
    if (r < t.rows && c < t.cols) amax = max(amax, abs_bits(tile[r * kPitch + c]));
  }
  for (int d = 16; d > 0; d /= 2) amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, d));
  if (threadIdx.x % 32 == 0) reduce[threadIdx.x / 32] = amax;
  __syncthreads();
  uint32_t all = 0;
  for (int w = 0; w < kWarps; ++w) all = max(all, reduce[w]);
  __syncthreads();
  return fmt::bits_float(all);
}

template <int TM, Pass kPass>
__global__ void __launch_bounds__(kThreads)
    quantize_kernel(const __grid_constant__ QuantizeParams p) {
  extern __shared__ float tile[];  // [TM][kPitch] in the quantize pass
  __shared__ GroupChunk chunk;
  __shared__ uint32_t block_word[kMaxBlocksPerTile];
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
  uint32_t flags = 0;
  int64_t rows_before = 0, tiles_before = 0, blocks_before = 0;

  for (int64_t base = 0; base < p.groups; base += kThreads) {
    // The chunk's group table, as the reference's read_groups builds it.
    const int64_t g = base + threadIdx.x;
    const bool live = g < p.groups;
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
    chunk.start[threadIdx.x] = extent.start;
    chunk.size[threadIdx.x] = extent.size;
    chunk.tile_end[threadIdx.x] = tiles_before + tiles_inclusive;
    chunk.first_block[threadIdx.x] = blocks_before + blocks_inclusive - blocks;
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
    __syncthreads();

    // This CTA's tiles of the chunk.
    const int count = static_cast<int>(min64(kThreads, p.groups - base));
    // The quantize pass has no tile to write when only amax was asked for.
    const bool writes = p.rowwise.data != nullptr || p.columnwise.data != nullptr;
    const int64_t chunk_end = tiles_before + (kPass == Pass::kAmax || writes ? tiles_total : 0);
    int64_t first = tiles_before + (static_cast<int64_t>(blockIdx.x) - tiles_before % gridDim.x +
                                    gridDim.x) % gridDim.x;
    for (int64_t index = first; index < chunk_end; index += gridDim.x) {
      // First group of the chunk whose tile_end exceeds `index`.
      int lo = 0, hi = count - 1;
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (chunk.tile_end[mid] > index) hi = mid; else lo = mid + 1;
      }
      const int64_t group_tiles = ceil_div(chunk.size[lo], TM) * tiles_k;
      const int64_t local = index - (chunk.tile_end[lo] - group_tiles);
      Tile t;
      t.g = static_cast<int32_t>(base + lo);
      t.row0 = (local / tiles_k) * TM;
      t.k_tile = local % tiles_k;
      t.token0 = chunk.start[lo] + t.row0;
      t.rows = static_cast<int>(min64(TM, chunk.size[lo] - t.row0));
      t.k0 = t.k_tile * kTk;
      t.cols = static_cast<int>(min64(kTk, p.cols - t.k0));
      t.first_block = chunk.first_block[lo];
      const int64_t input_base = (p.stacked ? t.g * p.input_matrix_stride : 0) + t.k0;

      if constexpr (kPass == Pass::kAmax) {
        uint32_t amax = 0;
        for (int job = threadIdx.x; job < TM * (kTk / 4); job += kThreads) {
          const int r = job / (kTk / 4);
          const int c = (job % (kTk / 4)) * 4;
          if (r >= t.rows || c >= t.cols) continue;
          float x[4];
          load4(p.input, p.input_type, input_base + (t.token0 + r) * p.input_stride + c,
                t.cols - c, x);
#pragma unroll
          for (int i = 0; i < 4; ++i) amax = max(amax, abs_bits(x[i]));
        }
        for (int d = 16; d > 0; d /= 2) amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, d));
        if (threadIdx.x % 32 == 0) reduce[threadIdx.x / 32] = amax;
        __syncthreads();
        if (threadIdx.x == 0) {
          uint32_t all = 0;
          for (int w = 0; w < kWarps; ++w) all = max(all, reduce[w]);
          if (all != 0) {  // the words start at 0
            atomicMax(p.amax_bits + t.g, all);
            atomicMax(p.amax_bits + p.groups, all);
          }
        }
        __syncthreads();
      } else {
      for (int job = threadIdx.x; job < TM * (kTk / 4); job += kThreads) {
        const int r = job / (kTk / 4);
        const int c = (job % (kTk / 4)) * 4;
        float x[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (r < t.rows && c < t.cols) {
          load4(p.input, p.input_type, input_base + (t.token0 + r) * p.input_stride + c,
                t.cols - c, x);
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) tile[r * kPitch + c + i] = x[i];
      }
      __syncthreads();
      const float tile_amax = need_tile_amax ? tile_amax_of(tile, t, TM, reduce) : 0.0f;
      if (p.rowwise.data != nullptr) {
        write_rowwise<TM>(p, p.rowwise, t, tile, block_word, tile_amax);
      }
      if (p.columnwise.data != nullptr) {
        write_columnwise<TM>(p, p.columnwise, t, tile, block_word, tile_amax);
      }
      }
    }
    rows_before = capped_sum(rows_before, rows_total, p.rows);
    tiles_before += tiles_total;
    blocks_before += blocks_total;
    __syncthreads();  // the chunk table is rewritten next
  }

  if (kPass != Pass::kQuantize) return;
  if (lead && flags != 0) atomicOr(p.flags, flags);
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
  const size_t smem =
      kPass == Pass::kQuantize ? static_cast<size_t>(TM) * kPitch * sizeof(float) : 0;
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
    const cudaError_t error = tm == 128
                                  ? launch<128, Pass::kAmax>(params, bound, sm_count, stream)
                                  : launch<32, Pass::kAmax>(params, bound, sm_count, stream);
    if (error != cudaSuccess) return error;
  }
  return tm == 128 ? launch<128, Pass::kQuantize>(params, bound, sm_count, stream)
                   : launch<32, Pass::kQuantize>(params, bound, sm_count, stream);
}

}  // namespace gg::quantize

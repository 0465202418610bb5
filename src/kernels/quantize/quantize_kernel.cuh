// Grouped quantize on the GPU: ragged [M, K] or stacked [G, N, K] input to
// fp8 (tensor or group scale, 1x128, 128x128), mxfp8 and nvfp4, rowwise and
// columnwise from one read of each input tile. sm_80+ CUDA C++, meant to run
// at memory bandwidth: per element a few instructions, and the next tile's
// input always in flight.
//
// Work is cut into tiles of kTm tokens x 128 K-elements that never cross a
// group, coded by CTAs of 2 kTm threads; kTm is 64, 128 or 256, one instance
// each, as the plan picks from the average group (short groups keep every
// thread on their rows, long ones write longer columnwise runs;
// plan/quantize_plan.h). Group g's tiles start at its first token, so every
// columnwise block (16, 32 or 128 tokens, restarting at every group start; the
// plan gives 1x128 columnwise blocks kTm = 128 or 256) and every 128x128 block
// (only with kTm = 128) lies inside one tile. No metadata kernel and no table
// in global memory: every CTA of the persistent grid scans the device sizes
// itself, 128 groups at a time (CUB block scans of the clamped extents by
// gg::clamp_group, the tile prefix and the columnwise first-block prefix as
// the reference's first_block sums it), then takes the tiles of that chunk
// that fall to it (tile t to CTA t mod grid) and finds each tile's group by a
// binary search in shared memory. Where no output's codes depend on the groups
// (codes_ignore_groups, plan/quantize_plan.h), or fp8 outputs under group
// scales take each row's own (group_scales_by_row), the quantize launch (and
// the amax launch, when only the tensor's amax is needed) takes its tiles from
// each chunk's rows as one span instead: windows of kTm rows on multiples of
// kTm, cut to the chunk's rows, so only a chunk's first and last tiles are
// partial or start off 16 bytes. Under row scales a tile within one group
// codes under its group's scale, as before; a tile whose rows cross groups
// looks up each row's in the chunk's table of scales (fill_row_scales) and
// codes with a rowwise writer instance of its own (kRowParams), so that the
// tiles of one group keep the loop without the per-row load. Where only a
// columnwise output's blocks along tokens depend on the groups
// (groups_only_restart_column_blocks), a chunk whose non-empty groups all
// start on the blocks counted from its first row (groups padded to the
// block) has its rows taken as one group, by the same per-group tiles: its
// first entry becomes that group, the others empty; the test is a barrier's
// OR over the chunk's scanned extents, so it follows the sizes of every
// replay.
//
// Where both outputs are fp8 under one whole scale, every element has one
// code for both, and a second instance of the quantize launch codes it
// once: the rowwise codes, transposed in shared memory, are the columnwise
// ones (tile_writers.cuh, code_tile_shared).
//
// A CTA's tiles stream through two shared-memory stages: tile i + 1 is
// copied by cp.async (rows of raw input words in 128-byte panels, zero-filled
// past the group's end, tile_io.cuh) while tile i is coded
// (tile_writers.cuh), so loads stay in flight through the coding.
//
// Formats whose scale comes from an amax (fp8 tensor/group scale, the nvfp4
// tensor scale) or a requested amax output take a first launch over the
// same tiles, a plain streaming read: every thread keeps a running max of
// the magnitudes and the CTA merges it with atomicMax into the group's word
// in the workspace only when its next tile belongs to another group, and
// into the tensor word once at the end, so the result is deterministic.
// Where the rows lie back to back in memory (contiguous, 16-byte aligned)
// it reads them as streams of 16-byte chunks (amax_stream) instead of
// tiles, with no descriptor to work out between a thread's batches of
// loads: all the groups' rows as one stream, read from the last row back,
// where only the tensor's word is needed (needs_tensor_amax_only, whatever
// the quantize launch's tiles), else each group's rows in pieces of a few
// batches, whose warps merge their maxima into the group's word by
// atomicMax, no barrier (0.55-0.72x the launch's time where it took tiles
// under random routing on an H200). On sm_90+ the quantize launch is the
// amax launch's programmatic dependent: its CTAs take each SM as the amax
// CTAs leave it, and wait for the whole amax launch (griddepcontrol.wait)
// before their first read. It reads the maxima; its CTA 0 writes the amax
// output, the fp32 scales and the flags.
// Outputs under row scales (fp8 with an fp32 scale per output row,
// GG_BLOCK_ROWWISE) need each row's max, and a row spans every K-tile of a
// token (rowwise) or every m-tile of a group's K column (columnwise): the
// amax launch then takes per-group tiles, and each tile merges its rows'
// maxima (shuffles across a row's lanes) and its columns' (each thread's
// column chunk is the same in every batch; the warps merge them in shared
// memory) into the workspace's row maxima by atomicMax (amax_tile_lines).
// The quantize launch turns a row's max into its scale for the writers'
// per-row and per-column parameters, and the tile that holds the row's
// first elements stores it (tile_writers.cuh, fill_line_params); empty
// groups' columnwise rows, which no tile holds, take scale 1 from the CTA
// of their number.
// The maxima's words are zeroed by a memset before the amax launch: a
// workspace may be shared with other launches (GEMMs write their own
// records there), so the words cannot be left zeroed by the last run.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include <cub/block/block_scan.cuh>

#include "common/groups.h"
#include "formats/block_quant.h"
#include "formats/codecs.h"
#include "kernels/quantize/grouped_quantize.h"
#include "kernels/quantize/tile_io.cuh"
#include "kernels/quantize/tile_writers.cuh"
#include "kernels/tile_scheduler.h"
#include "plan/quantize_plan.h"

namespace gg::quantize {
namespace {

constexpr int kChunk = 128;   // groups per scan of the sizes
constexpr int kStages = 2;    // tiles a CTA holds: the one coded, the one arriving
// The quantize pass's tile descriptors lie in a ring, tile i in slot i mod
// kRingSlots. A descriptor is worked out on one thread (a binary search and
// a division) while the rest of its warp's share of the tile, and then the
// CTA at the tile's barriers, wait. Span launches have them worked out
// kTileBatch at a time, a lane of warp 0 each, a batch ahead: one such wait
// every kTileBatch tiles. Their tiles code each element once, and under row
// scales each descriptor searches the chunk's groups for its first row, so
// the wait is a large part of a tile: fp8 under group scales ran 0.98-1.07x
// as fast with batches on an H200 (1.03-1.07x under random routing up to
// 65536 rows), a tensor scale 0.99-1.01x. Per-group tiles have thread 0
// work out tile i + 2's while tile i is coded: batches gained 1.09-1.14x
// where their tiles are half empty but lost up to 0.93x elsewhere.
constexpr int kTileBatch = 8;
constexpr int kRingSlots = 2 * kTileBatch;
constexpr int kAmaxBatch = 8;  // the amax pass: 16-byte loads in flight before any is used
// Batches of a group's piece of an amax stream: 8 ran 1.00-1.04x as fast
// as 4, and 4 0.99-1.04x as fast as 2, under random routing on an H200.
constexpr int kPieceBatches = 8;
// Stages start 128-byte aligned (ColumnRun addresses the swizzle by address
// bits); the dynamic shared memory is asked for with this much slack.
constexpr int kStageAlignment = 128;

// The amax launch in two instances: the plain one, and one that also
// gathers the row maxima of outputs under row scales (amax_tile_lines).
// The quantize launch in two: the general one, and one for outputs whose
// columnwise codes are the rowwise ones (columnwise_codes_are_rowwise).
// Each rarer instance holds only its path, so that the common one's code
// is what it would be without it.
enum class Pass { kAmax, kQuantize, kQuantizeSharedCodes, kAmaxLines };
__host__ __device__ constexpr bool quantizes(Pass pass) {
  return pass == Pass::kQuantize || pass == Pass::kQuantizeSharedCodes;
}

template <int kTm>
using Scan = cub::BlockScan<int64_t, kThreadsOf<kTm>, cub::BLOCK_SCAN_WARP_SCANS>;

// ---- the per-CTA group table ----

struct GroupChunk {
  int64_t start[kChunk];
  int64_t size[kChunk];
  int64_t tile_end[kChunk];     // global tile index one past the group's last tile
  int64_t first_block[kChunk];  // columnwise: the group's first block column
  float row_scale[kChunk];      // row scales: the group's rowwise fp32 scale
  // Rows (capped), tiles and columnwise blocks of the groups before the
  // chunk: kept here, not in registers, while the chunk's tiles run.
  int64_t rows_before;
  int64_t tiles_before;
  int64_t blocks_before;
};

__host__ __device__ inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
__host__ __device__ inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// ---- the amax pass over one tile ----

template <gg_dtype kIn, int kTm>
__device__ typename InputType<kIn>::Mag amax_tile(const QuantizeParams& p, const Tile& t,
                                                  int64_t input_base) {
  using Shape = TileShape<kIn>;
  using In = InputType<kIn>;
  constexpr int kThreads = kThreadsOf<kTm>;
  static_assert(kTm * Shape::kRowChunks % (kAmaxBatch * kThreads) == 0, "whole batches");
  typename In::Mag m = In::zero();
#pragma unroll 1
  for (int first = 0; first < kTm * Shape::kRowChunks / kThreads; first += kAmaxBatch) {
    uint4 v[kAmaxBatch];
#pragma unroll
    for (int i = 0; i < kAmaxBatch; ++i) {
      const int job = static_cast<int>(threadIdx.x) + (first + i) * kThreads;
      v[i] = load_chunk<kIn>(p, t, input_base, job / Shape::kRowChunks,
                             (job % Shape::kRowChunks) * Shape::kVec);
    }
#pragma unroll
    for (int i = 0; i < kAmaxBatch; ++i) m = In::max(m, chunk_magnitude<kIn>(v[i]));
  }
  return m;
}

// amax_tile where outputs are under row scales: also each row's max
// (rowwise) and each K column's over the tile's rows (columnwise), merged
// into the row maxima (QuantizeParams). A row's chunks are kRowChunks
// consecutive jobs of one batch (16 or 32 lanes of a warp), maxed by
// shuffles; a thread's column chunk is the same in every batch (kThreads is
// a multiple of kRowChunks), so it keeps its columns' running maxima, which
// the warps merge in `columns` (kTk words of shared memory, zero between
// tiles) and thread k into column k's word once a tile. Run by an amax
// launch of its own (Pass::kAmaxLines), so that the plain one keeps its
// registers. Every thread calls it (it has barriers).
template <gg_dtype kIn, int kTm>
__device__ typename InputType<kIn>::Mag amax_tile_lines(const QuantizeParams& p, const Tile& t,
                                                        int64_t input_base, uint32_t* columns) {
  using Shape = TileShape<kIn>;
  using In = InputType<kIn>;
  using Mag = typename In::Mag;
  constexpr int kThreads = kThreadsOf<kTm>;
  constexpr int kRowChunks = Shape::kRowChunks;
  constexpr int kPairs = Shape::kPairsPerVec;
  static_assert(kThreads % kRowChunks == 0 && 32 % kRowChunks == 0,
                "a row's chunks in one warp, a thread's column chunk fixed");
  const int64_t matrix = p.stacked ? t.g : 0;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  Mag m = In::zero();
  Mag column[kPairs];
#pragma unroll
  for (int j = 0; j < kPairs; ++j) column[j] = In::zero();
#pragma unroll 1
  for (int first = 0; first < kTm * kRowChunks / kThreads; first += kAmaxBatch) {
    uint4 v[kAmaxBatch];
#pragma unroll
    for (int i = 0; i < kAmaxBatch; ++i) {
      const int job = static_cast<int>(threadIdx.x) + (first + i) * kThreads;
      v[i] = load_chunk<kIn>(p, t, input_base, job / kRowChunks, (job % kRowChunks) * Shape::kVec);
    }
#pragma unroll
    for (int i = 0; i < kAmaxBatch; ++i) {
      typename In::Pair pairs[kPairs];
      memcpy(pairs, &v[i], sizeof v[i]);
      Mag chunk = In::zero();
#pragma unroll
      for (int j = 0; j < kPairs; ++j) {
        const Mag magnitude = In::magnitude(pairs[j]);
        column[j] = In::max(column[j], magnitude);
        chunk = In::max(chunk, magnitude);
      }
      m = In::max(m, chunk);
      if (p.row_maxima != nullptr) {
        uint32_t bits = max_bits<kIn>(chunk);
#pragma unroll
        for (int d = kRowChunks / 2; d > 0; d /= 2) {
          bits = max(bits, __shfl_xor_sync(0xffffffffu, bits, d));
        }
        const int r = (static_cast<int>(threadIdx.x) + (first + i) * kThreads) / kRowChunks;
        if (lane % kRowChunks == 0 && r < t.rows && bits != 0) {  // the words start at 0
          atomicMax(p.row_maxima + row_scale_entry(p.rowwise, false, p.stacked, matrix, t.g,
                                                   t.token0 + r),
                    bits);
        }
      }
    }
  }
  if (p.column_maxima != nullptr) {
    const int c = static_cast<int>(threadIdx.x) % kRowChunks * Shape::kVec;  // first column
#pragma unroll
    for (int j = 0; j < kPairs; ++j) {
      uint32_t low = In::low_bits(column[j]);
      uint32_t high = In::high_bits(column[j]);
#pragma unroll
      for (int d = kRowChunks; d < 32; d *= 2) {  // the warp's lanes of this column chunk
        low = max(low, __shfl_xor_sync(0xffffffffu, low, d));
        high = max(high, __shfl_xor_sync(0xffffffffu, high, d));
      }
      if (lane < kRowChunks) {
        if (low != 0) atomicMax(columns + c + 2 * j, low);
        if (high != 0) atomicMax(columns + c + 2 * j + 1, high);
      }
    }
    __syncthreads();
    for (int k = static_cast<int>(threadIdx.x); k < kTk; k += kThreads) {
      const uint32_t bits = columns[k];
      if (bits != 0 && k < t.cols) {
        atomicMax(p.column_maxima +
                      row_scale_entry(p.columnwise, true, p.stacked, matrix, t.g, t.k0 + k),
                  bits);
      }
      columns[k] = 0;
    }
    __syncthreads();
  }
  return m;
}

// Chunks of 16 bytes in one batch of the amax pass: kAmaxBatch a thread.
template <int kTm>
constexpr int64_t kBatchChunks = int64_t{kThreadsOf<kTm>} * kAmaxBatch;

// The amax pass over input that lies back to back in memory: the 16-byte
// chunks [0, count) from `chunks` as a stream, in batches of kAmaxBatch a
// thread, batches `batch`, batch + step, ... counted from the end. No tile
// descriptor between batches: a thread's next loads follow its last ones
// after a few instructions, where a tile's took its descriptor's
// arithmetic first. Last chunk first, so that what the stream leaves in L2
// is the rows the quantize launch reads first: on an H200 a tensor scale's
// fp8 ran 1.09-1.10x as fast on Qwen3-30B-A3B at 16384 rows (64 MB of
// input, L2 50 MB), 1.01-1.02x on larger inputs.
template <gg_dtype kIn, int kTm>
__device__ typename InputType<kIn>::Mag amax_stream(const uint4* chunks, int64_t count,
                                                    int64_t batch, int64_t step) {
  using In = InputType<kIn>;
  constexpr int kThreads = kThreadsOf<kTm>;
  typename In::Mag m = In::zero();
  const int64_t batches = (count + kBatchChunks<kTm> - 1) / kBatchChunks<kTm>;
#pragma unroll 1
  for (; batch < batches; batch += step) {
    const int64_t first = (batches - 1 - batch) * kBatchChunks<kTm> + threadIdx.x;
    uint4 v[kAmaxBatch];
#pragma unroll
    for (int i = 0; i < kAmaxBatch; ++i) {
      const int64_t index = first + i * kThreads;
      v[i] = index < count ? __ldg(chunks + index) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kAmaxBatch; ++i) m = In::max(m, chunk_magnitude<kIn>(v[i]));
  }
  return m;
}

// Merges the CTA's running amax into group g's word (every thread calls it).
template <int kTm>
__device__ void flush_group_amax(const QuantizeParams& p, int32_t g, uint32_t* amax,
                                 uint32_t* reduce) {
  const uint32_t warp = warp_max(*amax);
  *amax = 0;
  if (threadIdx.x % 32 == 0) reduce[threadIdx.x / 32] = warp;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t all = 0;
    for (int w = 0; w < kWarpsOf<kTm>; ++w) all = max(all, reduce[w]);
    if (all != 0) atomicMax(p.amax_bits + g, all);  // the words start at 0
  }
  __syncthreads();
}

// ---- the group table and the tiles ----

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

// The chunk's group (of `count`) that tile `index` belongs to: the first
// whose tile_end exceeds it.
__device__ inline int group_of_tile(const GroupChunk& chunk, int count, int64_t index) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (chunk.tile_end[mid] > index) hi = mid; else lo = mid + 1;
  }
  return lo;
}

// Tile `index` of the chunk of `count` groups from group `base`.
template <int kTm>
__device__ Tile tile_at(const GroupChunk& chunk, int count, int64_t base, int64_t index,
                        int64_t tiles_k, int64_t cols) {
  const int lo = group_of_tile(chunk, count, index);
  const int64_t group_tiles = ceil_div(chunk.size[lo], kTm) * tiles_k;
  const int64_t local = index - (chunk.tile_end[lo] - group_tiles);
  Tile t;
  t.g = static_cast<int32_t>(base + lo);
  int64_t m_tile = 0;
  divide(local, tiles_k, &m_tile, &t.k_tile);
  t.row0 = m_tile * kTm;
  t.token0 = chunk.start[lo] + t.row0;
  t.rows = static_cast<int>(min64(kTm, chunk.size[lo] - t.row0));
  t.k0 = t.k_tile * kTk;
  t.cols = static_cast<int>(min64(kTk, cols - t.k0));
  t.first_block = chunk.first_block[lo];
  t.mixed_groups = false;
  return t;
}

// A piece of a group's rows for the amax stream: its 16-byte chunks
// [first, first + count) of the input.
struct StreamPiece {
  int32_t g;
  int64_t first;
  int64_t count;
};

// The input's 16-byte chunks of `rows` rows of `cols` elements (whole
// chunks: the stream's rows are 16-byte multiples).
template <gg_dtype kIn>
__device__ int64_t chunks_of_rows(int64_t rows, int64_t cols) {
  return rows * cols / TileShape<kIn>::kVec;
}

// Piece `index` of the chunk of `count` groups from group `base`, where
// the tiles of the table are each group's pieces of kPieceBatches batches.
template <gg_dtype kIn, int kTm>
__device__ StreamPiece piece_at(const GroupChunk& chunk, int count, int64_t base, int64_t index,
                                int64_t cols) {
  constexpr int64_t kPieceChunks = kBatchChunks<kTm> * kPieceBatches;
  const int lo = group_of_tile(chunk, count, index);
  const int64_t group_chunks = chunks_of_rows<kIn>(chunk.size[lo], cols);
  const int64_t local = index - (chunk.tile_end[lo] - ceil_div(group_chunks, kPieceChunks));
  StreamPiece piece;
  piece.g = static_cast<int32_t>(base + lo);
  piece.first = chunks_of_rows<kIn>(chunk.start[lo], cols) + local * kPieceChunks;
  piece.count = min64(kPieceChunks, group_chunks - local * kPieceChunks);
  return piece;
}

// The first of the chunk's groups [from, count) that ends past `token`:
// the group holding it, where the groups lie back to back (prefix sums).
__device__ inline int group_holding(const GroupChunk& chunk, int from, int count, int64_t token) {
  int lo = from, hi = count - 1;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    if (chunk.start[mid] + chunk.size[mid] > token) hi = mid; else lo = mid + 1;
  }
  return lo;
}

// Tile `index` of the span of the chunk's rows [lo, hi): the windows of
// kTm rows from the one holding lo, each cut to the span (tiles on window
// boundaries, so that only a span's first and last rows start off them).
// With row scales, t.g is the group of the tile's first row, and
// t.mixed_groups says whether its rows cross into a later group.
template <int kTm>
__device__ Tile span_tile_at(const GroupChunk& chunk, int count, int64_t base, bool row_scales,
                             int64_t lo, int64_t hi, int64_t index, int64_t tiles_k,
                             int64_t cols) {
  Tile t;
  int64_t window = 0;
  divide(index, tiles_k, &window, &t.k_tile);
  const int64_t window_start = (lo / kTm + window) * kTm;
  t.token0 = max64(window_start, lo);
  t.rows = static_cast<int>(min64(window_start + kTm, hi) - t.token0);
  t.g = static_cast<int32_t>(base);
  t.mixed_groups = false;
  if (row_scales) {
    const int first = group_holding(chunk, 0, count, t.token0);
    t.g = static_cast<int32_t>(base + first);
    t.mixed_groups = chunk.start[first] + chunk.size[first] < t.token0 + t.rows;
  }
  t.row0 = 0;  // read only by blocks along tokens, which spans never have
  t.k0 = t.k_tile * kTk;
  t.cols = static_cast<int>(min64(kTk, cols - t.k0));
  t.first_block = 0;
  return t;
}

// The fp32 scale of each row of span tile t whose rows cross groups, by its
// group's, from the chunk's table (groups from `base`, `count` of them);
// 1 past the tile's rows. Every thread calls it.
template <int kTm>
__device__ void fill_row_scales(const GroupChunk& chunk, int64_t base, int count, const Tile& t,
                                CodeStage<kTm>* stage) {
  const int first = static_cast<int>(t.g - base);
  for (int r = static_cast<int>(threadIdx.x); r < kTm; r += kThreadsOf<kTm>) {
    stage->line_scales.rows[r] =
        r < t.rows ? chunk.row_scale[group_holding(chunk, first, count, t.token0 + r)] : 1.0f;
  }
}

// Element index of the tile's (token 0, k0) in the input.
__device__ inline int64_t input_base_of(const QuantizeParams& p, const Tile& t) {
  return (p.stacked ? t.g * p.input_matrix_stride : 0) + t.k0;
}

// CTAs per SM the register allocation must allow, as if tiles were 128
// tokens high (a CTA of 2 kTm threads counts kTm / 128 of them): two (128
// registers a thread) for 16-bit input, whose two stages and code stage
// take 82 KB of shared memory a 128-token tile; one for fp32 input (146
// KB); four for the amax pass, two where it gathers row maxima (whose
// running column maxima and row shuffles spilled at 64 registers).
template <gg_dtype kIn, Pass kPass, int kTm>
constexpr int min_blocks() {
  const int per_128 = kPass == Pass::kAmax        ? 4
                      : kPass == Pass::kAmaxLines ? 2
                                                  : (kIn == GG_DTYPE_FP32 ? 1 : 2);
  return per_128 * 128 / kTm > 0 ? per_128 * 128 / kTm : 1;
}

template <gg_dtype kIn, Pass kPass, int kTm>
__global__ void __launch_bounds__(kThreadsOf<kTm>, (min_blocks<kIn, kPass, kTm>()))
    quantize_kernel(const __grid_constant__ QuantizeParams p) {
  using Shape = TileShape<kIn>;
  constexpr int kThreads = kThreadsOf<kTm>;
  static_assert(kThreads >= kChunk, "a thread per group of a chunk");
  extern __shared__ uint4 dynamic_smem[];  // the stages, then the code stage
  // Aligned by an offset from the array, not through an integer cast, so
  // that the compiler still knows every pointer into the stages and the code
  // stage is a shared-memory address: shared loads and stores (LDS, STS)
  // rather than generic ones, which wait on the long scoreboard.
  const uint32_t raw_address = static_cast<uint32_t>(__cvta_generic_to_shared(dynamic_smem));
  uint4* stages = dynamic_smem + (kStageAlignment - raw_address % kStageAlignment) %
                                     kStageAlignment / sizeof(uint4);
  CodeStage<kTm>* code_stage =
      reinterpret_cast<CodeStage<kTm>*>(stages + kStages * Shape::template kTileBytes<kTm> / 16);
  __shared__ GroupChunk chunk;
  __shared__ typename Scan<kTm>::TempStorage scan_storage;
  __shared__ uint32_t reduce[kWarpsOf<kTm>];
  __shared__ Tile tile_ring[kRingSlots];  // the quantize pass: descriptors of the next tiles
  static_assert(sizeof(GroupChunk) + sizeof(typename Scan<kTm>::TempStorage) +
                        sizeof(reduce) + sizeof(tile_ring) + 16 <=
                    kQuantizeStaticSmem,
                "quantize_plan.h's static shared memory");

  const int64_t tiles_k = (p.cols + kTk - 1) / kTk;
  const int col_block = p.columnwise.data != nullptr && p.columnwise.block > 0 &&
                                p.columnwise.scaling != GG_BLOCK_128X128
                            ? p.columnwise.block
                            : 0;
  const bool need_tile_amax =
      (p.rowwise.data != nullptr && p.rowwise.scaling == GG_BLOCK_128X128) ||
      (p.columnwise.data != nullptr && p.columnwise.scaling == GG_BLOCK_128X128);
  const bool lead = blockIdx.x == 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (!quantizes(kPass)) {
    cudaTriggerProgrammaticLaunchCompletion();  // the quantize launch may start (launch)
  } else if (p.dependent_launch) {
    cudaGridDependencySynchronize();  // the amax launch is done, its maxima visible
  }
#endif
  if (threadIdx.x == 0) {
    chunk.rows_before = 0;
    chunk.tiles_before = 0;
    chunk.blocks_before = 0;
  }
  __syncthreads();
  // The amax pass: this thread's running magnitudes for group `amax_group`,
  // and for the tensor.
  using Mag = typename InputType<kIn>::Mag;
  Mag group_amax = InputType<kIn>::zero(), tensor_amax = InputType<kIn>::zero();
  int32_t amax_group = -1;
  // Each chunk's rows as one span (QuantizeParams::span); the amax launch's
  // where it needs only the tensor's word (amax_span). span_tiles_before:
  // the span tiles of the chunks before, the same in every thread.
  const bool spans = quantizes(kPass) ? p.span : p.amax_span;
  int64_t span_tiles_before = 0;
  // The amax launch reads rows that lie back to back in memory (contiguous,
  // 16-byte aligned) as streams (amax_stream): as spans, all the chunks'
  // rows as one, after the chunks' scans have counted them; else each
  // group's rows in pieces of kPieceBatches batches, a piece a CTA (the
  // table's tiles are then pieces).
  const bool streams = kPass == Pass::kAmax && p.aligned_input && !p.stacked &&
                       p.input_stride == p.cols;
  // The amax launch under row scales: its tiles' column maxima, merged in
  // its dynamic shared memory (amax_tile_lines).
  uint32_t* columns = reinterpret_cast<uint32_t*>(dynamic_smem);
  if (kPass == Pass::kAmaxLines && p.column_maxima != nullptr) {
    for (int k = static_cast<int>(threadIdx.x); k < kTk; k += kThreads) columns[k] = 0;
  }
  const bool group_pieces = streams && !spans;

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
    int64_t rows_inclusive = 0, rows_total = 0;
    Scan<kTm>(scan_storage).InclusiveSum(counted, rows_inclusive, rows_total);
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
    // Where every non-empty group starts on the columnwise blocks counted
    // from the chunk's first row, each group but the chunk's last non-empty
    // one holds whole blocks, so the blocks of the chunk's rows taken as one
    // group are the groups' blocks: the chunk's first entry becomes that
    // group and the others empty, and its tiles run across the groups' ends
    // (padded groups; uniform routing's 64-row groups under 128-token
    // tiles). The test is the barrier before the scan storage is reused.
    const bool off_grid = live && extent.size > 0 && col_block > 0 &&
                          (extent.start - rows_before) % col_block != 0;
    const bool as_one = !__syncthreads_or(off_grid) && quantizes(kPass) &&
                        p.aligned_groups_as_one && col_block > 0 && kTm % col_block == 0;
    if (as_one) {
      const int64_t rows_end = capped_sum(rows_before, rows_total, p.rows);
      extent = threadIdx.x == 0 ? GroupExtent{rows_before, rows_end - rows_before}
                                : GroupExtent{0, 0};
    }
    const int64_t tiles =
        group_pieces
            ? ceil_div(chunks_of_rows<kIn>(extent.size, p.cols), kBatchChunks<kTm> * kPieceBatches)
            : ceil_div(extent.size, kTm) * tiles_k;
    const int64_t blocks = col_block > 0 ? ceil_div(extent.size, col_block) : 0;
    int64_t tiles_inclusive = 0, tiles_total = 0, blocks_inclusive = 0, blocks_total = 0;
    Scan<kTm>(scan_storage).InclusiveSum(tiles, tiles_inclusive, tiles_total);
    __syncthreads();
    Scan<kTm>(scan_storage).InclusiveSum(blocks, blocks_inclusive, blocks_total);
    if (threadIdx.x < kChunk) {
      chunk.start[threadIdx.x] = extent.start;
      chunk.size[threadIdx.x] = extent.size;
      chunk.tile_end[threadIdx.x] = tiles_before + tiles_inclusive;
      chunk.first_block[threadIdx.x] = blocks_before + blocks_inclusive - blocks;
    }
    if (quantizes(kPass) && p.row_scales && threadIdx.x < kChunk) {
      chunk.row_scale[threadIdx.x] =
          live ? outer_scale(p.rowwise, p, static_cast<int32_t>(g)) : 1.0f;
    }
    if (quantizes(kPass) && lead && live) {
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
    if (quantizes(kPass) && lead && flags != 0) atomicOr(p.flags, flags);
    __syncthreads();
    if (quantizes(kPass) && p.column_maxima != nullptr && !p.stacked && p.rows > 0) {
      // An empty group's columnwise rows (amax 0: scale 1), which no tile
      // holds, as the reference writes them: by the CTA of its number.
      for (int i = 0; i < static_cast<int>(min64(kChunk, p.groups - base)); ++i) {
        if (chunk.size[i] != 0 || (base + i) % gridDim.x != blockIdx.x) continue;
        for (int64_t k = threadIdx.x; k < p.cols; k += kThreads) {
          reinterpret_cast<float*>(p.columnwise.block_scales)[row_scale_entry(
              p.columnwise, true, false, 0, base + i, k)] = 1.0f;
        }
      }
    }
    if (threadIdx.x == 0) {  // every thread has read them above
      chunk.rows_before = capped_sum(rows_before, rows_total, p.rows);
      chunk.tiles_before = tiles_before + tiles_total;
      chunk.blocks_before = blocks_before + blocks_total;
    }

    // The tiles of the table: the chunk's `count` groups from group `base`,
    // tiles [table_first, table_first + table_tiles); as a span, the windows
    // of kTm rows that meet the chunk's rows [span_lo, span_hi).
    // A merged chunk is searched as a table of one on 64- and 128-token
    // tiles, whose descriptors come often (the empty entries' search cost
    // up to 6% there). On 256-token tiles the table keeps its entries:
    // there a count that depends on the merge cost 1-5% under uniform
    // routing, whose tiles it does not change (on an H200).
    const int count =
        kTm <= 128 && as_one ? 1 : static_cast<int>(min64(kChunk, p.groups - base));
    int64_t table_first = tiles_before, table_tiles = tiles_total;
    const int64_t span_lo = rows_before;
    const int64_t span_hi = capped_sum(rows_before, rows_total, p.rows);
    if (spans) {
      const int64_t windows = span_hi > span_lo ? ceil_div(span_hi, kTm) - span_lo / kTm : 0;
      table_first = span_tiles_before;
      table_tiles = windows * tiles_k;
      span_tiles_before += table_tiles;
    }
    // This CTA's tiles of the table: first, first + grid, ...
    // The quantize pass has no tile to write when only amax was asked for.
    const bool writes = p.rowwise.data != nullptr || p.columnwise.data != nullptr;
    const int64_t chunk_end = table_first + (!quantizes(kPass) || writes ? table_tiles : 0);
    const int64_t first = table_first + (static_cast<int64_t>(blockIdx.x) -
                                         table_first % gridDim.x + gridDim.x) % gridDim.x;
    const auto tile_of = [&](int64_t i) {
      const int64_t index = first + i * gridDim.x;
      return spans ? span_tile_at<kTm>(chunk, count, base, quantizes(kPass) && p.row_scales,
                                          span_lo, span_hi, index - table_first, tiles_k, p.cols)
                      : tile_at<kTm>(chunk, count, base, index, tiles_k, p.cols);
    };
    const int64_t mine = first < chunk_end ? (chunk_end - first + gridDim.x - 1) / gridDim.x : 0;
    // Descriptors `batch` at a time, `ahead` tiles before their tile.
    const int batch = spans ? kTileBatch : 1;
    const int ahead = spans ? kTileBatch : 2;
    if (quantizes(kPass) && threadIdx.x < min64(mine, ahead)) {
      tile_ring[threadIdx.x] = tile_of(threadIdx.x);
    }
    __syncthreads();

    if constexpr (!quantizes(kPass)) {
      const uint4* input_chunks = static_cast<const uint4*>(p.input);
      for (int64_t i = 0; group_pieces && i < mine; ++i) {
        // Each warp merges its max into the group's word: no barrier.
        const StreamPiece piece = piece_at<kIn, kTm>(chunk, count, base, first + i * gridDim.x,
                                                     p.cols);
        const Mag m = amax_stream<kIn, kTm>(input_chunks + piece.first, piece.count, 0, 1);
        tensor_amax = InputType<kIn>::max(tensor_amax, m);
        const uint32_t bits = warp_max(max_bits<kIn>(m));
        if (threadIdx.x % 32 == 0 && bits != 0) atomicMax(p.amax_bits + piece.g, bits);
      }
      for (int64_t i = 0; !streams && i < mine; ++i) {
        const Tile t = tile_of(i);
        if (!spans && t.g != amax_group) {  // the same for the whole CTA
          if (amax_group >= 0) {
            uint32_t bits = max_bits<kIn>(group_amax);
            flush_group_amax<kTm>(p, amax_group, &bits, reduce);
            group_amax = InputType<kIn>::zero();
          }
          amax_group = t.g;
        }
        Mag m;
        if constexpr (kPass == Pass::kAmaxLines) {
          m = amax_tile_lines<kIn, kTm>(p, t, input_base_of(p, t), columns);
        } else {
          m = amax_tile<kIn, kTm>(p, t, input_base_of(p, t));
        }
        group_amax = InputType<kIn>::max(group_amax, m);
        tensor_amax = InputType<kIn>::max(tensor_amax, m);
      }
    } else {
      const auto stage = [&](int64_t i) {
        return stages + (i % kStages) * (Shape::template kTileBytes<kTm> / 16);
      };
      // Tile i's descriptor is in tile_ring[slot(i)]. At the first tile of
      // each batch, the batch's lanes of warp 0 write the descriptors of the
      // tiles `ahead` on, over those of tiles already coded; every thread
      // reads them at least a tile later.
      static_assert((kRingSlots & (kRingSlots - 1)) == 0, "i mod kRingSlots as i's low bits");
      const auto slot = [](int64_t i) { return static_cast<int>(i & (kRingSlots - 1)); };
      if (mine > 0) fill_tile<kIn, kTm>(p, tile_ring[0], input_base_of(p, tile_ring[0]), stage(0));
      cp_async_commit();
      for (int64_t i = 0; i < mine; ++i) {
        if (i + 1 < mine) {  // the next tile streams in while this one is coded
          const Tile& next = tile_ring[slot(i + 1)];
          fill_tile<kIn, kTm>(p, next, input_base_of(p, next), stage(i + 1));
        }
        cp_async_commit();
        cp_async_wait<1>();
        __syncthreads();  // the tile is in; the code stage is free again
        const Tile t = tile_ring[slot(i)];
        if ((i & (batch - 1)) == 0 && threadIdx.x < batch) {
          const int64_t later = i + ahead + threadIdx.x;
          if (later < mine) tile_ring[slot(later)] = tile_of(later);
        }
        if (t.mixed_groups) {
          fill_row_scales<kTm>(chunk, base, count, t, code_stage);
          __syncthreads();  // the rows' scales are in
        }
        if constexpr (kPass == Pass::kQuantizeSharedCodes) {
          code_tile_shared<kIn, kTm>(p, t, stage(i), code_stage);
        } else {
          code_tile<kIn, kTm>(p, t, stage(i), code_stage, need_tile_amax);
        }
        __syncthreads();  // the codes are staged; the tile's stage is free again
        if (p.columnwise.data != nullptr) {
          const int64_t matrix = p.stacked ? t.g : 0;
          constexpr bool kShared = kPass == Pass::kQuantizeSharedCodes;  // fp8, no block scales
          if (!kShared && p.columnwise.dtype == GG_DTYPE_E2M1) {
            copy_out_columnwise<4, kTm>(p.columnwise, t, matrix, code_stage);
          } else {
            copy_out_columnwise<8, kTm>(p.columnwise, t, matrix, code_stage);
          }
          if (!kShared && (p.columnwise.scaling == GG_BLOCK_MX32 ||
                           p.columnwise.scaling == GG_BLOCK_NV16)) {
            copy_out_column_scales(p, t, matrix, code_stage);
          }
        }
      }
    }
    __syncthreads();  // the chunk table is rewritten next
  }

  if constexpr (!quantizes(kPass)) {
    if (streams && spans) {  // the rows of every chunk: [0, rows_before)
      const Mag m = amax_stream<kIn, kTm>(static_cast<const uint4*>(p.input),
                                          chunks_of_rows<kIn>(chunk.rows_before, p.cols),
                                          blockIdx.x, gridDim.x);
      tensor_amax = InputType<kIn>::max(tensor_amax, m);
    }
    if (amax_group >= 0) {
      uint32_t bits = max_bits<kIn>(group_amax);
      flush_group_amax<kTm>(p, amax_group, &bits, reduce);
    }
    const uint32_t warp = warp_max(max_bits<kIn>(tensor_amax));
    if (threadIdx.x % 32 == 0 && warp != 0) atomicMax(p.amax_bits + p.groups, warp);
  }
}

template <gg_dtype kIn, Pass kPass, int kTm>
cudaError_t launch(const QuantizeParams& params, int64_t max_tiles, int sm_count,
                   cudaStream_t stream) {
  const auto kernel = quantize_kernel<kIn, kPass, kTm>;
  constexpr int kThreads = kThreadsOf<kTm>;
  constexpr int64_t kSmem = quantize_dynamic_smem_bytes(TileShape<kIn>::kBytes, kTm);
  static_assert(kStageAlignment + kStages * TileShape<kIn>::template kTileBytes<kTm> +
                        sizeof(CodeStage<kTm>) ==
                    kSmem,
                "quantize_plan.h's layout");
  const size_t smem = quantizes(kPass)                  ? static_cast<size_t>(kSmem)
                      : params.column_maxima != nullptr ? kTk * sizeof(uint32_t)
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
  // After the amax launch, the quantize launch's CTAs take each SM as the
  // amax CTAs leave it, instead of after the last of them: a programmatic
  // dependent, which waits for the amax launch before its first read.
  cudaLaunchAttribute after_amax{};
  after_amax.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  after_amax.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(grid));
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = &after_amax;
  config.numAttrs = quantizes(kPass) && params.dependent_launch ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, params);
}

}  // namespace

template <gg_dtype kIn, int kTm>
cudaError_t launch_passes(const QuantizeParams& params, int sm_count, cudaStream_t stream) {
  const int64_t bound = max_tiles(params);
  if (params.amax_pass) {
    cudaError_t error = cudaMemsetAsync(params.amax_bits, 0, params.scratch_bytes, stream);
    if (error != cudaSuccess) return error;
    error = params.row_maxima != nullptr || params.column_maxima != nullptr
                ? launch<kIn, Pass::kAmaxLines, kTm>(params, bound, sm_count, stream)
                : launch<kIn, Pass::kAmax, kTm>(params, bound, sm_count, stream);
    if (error != cudaSuccess) return error;
  }
  if (columnwise_codes_are_rowwise(params)) {
    return launch<kIn, Pass::kQuantizeSharedCodes, kTm>(params, bound, sm_count, stream);
  }
  return launch<kIn, Pass::kQuantize, kTm>(params, bound, sm_count, stream);
}

}  // namespace gg::quantize

// Portable grouped GEMM kernel, sm_80 and later (mma.sync tensor cores).
//
// Plan. A persistent grid walks the output tiles of all groups (the order is
// tile_scheduler.h's). Per tile, each warp finds the tile's group from the
// records the metadata kernel wrote (ragged-M: a 32-ary warp search over
// the m-tile prefix; ragged-K: a division) and derives the bounds of both
// operands and of the output. The mainloop is a kStages-deep cp.async ring
// over block_k-deep slices of the contraction: while the tensor cores work on
// slice s, the copies of slice s + kStages - 1 are in flight. Each slice is
// block_k / 16 rounds of ldmatrix (operand_tile.cuh, laid out as
// operand_layout.h explains) and m16n8k16 mma.sync (mma_layout.h) into fp32
// accumulators; the epilogue (epilogue.cuh) stores from registers.
//
// Quantized operands (kLhsDecoded, kRhsDecoded) take the same mainloop on
// bf16 tensor cores: their slices are decoded into the stage instead of
// copied (decoded_tile.cuh), their fp32 tensor or group scales multiply
// alpha, and rowwise scales are applied per output row and column.
//
// Ragged-K contracts over a group's tokens, which start anywhere: slices begin
// at the start rounded down to a 16-byte chunk, copies stop at the group's
// end (zero-fill), and in the first slice the tokens before the start are
// zeroed in the fragments of both operands, since either may hold a NaN there.
//
// Barriers: one per slice (after the wait, before the slot of slice s - 1 is
// refilled: every warp has finished reading it) and one after the last slice
// (before the next tile's first copies land). The epilogue does not touch
// shared memory. Every loop bound is uniform across the CTA, so all threads
// reach every barrier, including tiles with no slices (an empty ragged-K group).
#pragma once

#include <cuda/std/type_traits>
#include <stdint.h>

#include "kernels/portable/decoded_tile.cuh"
#include "kernels/portable/epilogue.cuh"
#include "kernels/portable/gemm_params.h"
#include "kernels/portable/mma_layout.h"
#include "kernels/portable/operand_layout.h"
#include "kernels/portable/operand_tile.cuh"
#include "kernels/portable/sm80_ptx.cuh"
#include "kernels/tile_scheduler.h"
#include "kernels/unused_rows.cuh"
#include "plan/plan.h"

namespace gg::portable {

// The group holding global m-tile `m_tile`: the first g in [lo, groups) with
// tile_end > m_tile, for an m-tile below the total. All 32 lanes call it.
__device__ __forceinline__ int64_t find_group(const GroupRecord* records, int32_t groups,
                                              int64_t lo, int64_t m_tile, int lane) {
  SearchRange range{lo, groups};
  while (range.hi - range.lo > 1) {
    const bool past = records[search_probe(range, lane)].tile_end > m_tile;
    const int ballot = static_cast<int>(__ballot_sync(0xffffffffu, past));
    range = search_narrow(range, __ffs(ballot) - 1);
  }
  return range.lo;
}

__device__ __forceinline__ int element_bytes(gg_dtype type) {
  return type == GG_DTYPE_FP32 ? 4 : 2;
}

// One tile's work: both operands' bounds, the contraction slices, the output.
template <class LhsSource, class RhsSource, class Output>
struct TileTask {
  LhsSource lhs;
  RhsSource rhs;
  int64_t depth_first;  // depth of the first slice
  int64_t slices;
  int64_t zero_before;  // depths below this in the first slice read as zero
  Output out;
};

template <PortableTile kTile, class T, Major kLhsMajor, Major kRhsMajor, bool kLhsDecoded = false,
          bool kRhsDecoded = false>
struct PortableGemm {
  static constexpr TileConfig kConfig = tile_config(kTile);
  static constexpr int kThreads = 32 * kConfig.warps_m * kConfig.warps_n;
  static constexpr int kBlockM = kConfig.block_m;
  static constexpr int kBlockN = kConfig.block_n;
  static constexpr int kBlockK = kConfig.block_k;
  static constexpr int kStages = kConfig.stages;
  static constexpr int kWarpRows = kBlockM / kConfig.warps_m;
  static constexpr int kWarpCols = kBlockN / kConfig.warps_n;
  static constexpr int kFragsM = kWarpRows / 16;  // 16-row lhs blocks per warp
  static constexpr int kFragsN = kWarpCols / 16;  // 16-column rhs blocks (two mma each)
  static constexpr bool kQuantized = kLhsDecoded || kRhsDecoded;
  using LhsTile = cuda::std::conditional_t<kLhsDecoded, DecodedTile<kBlockM, kBlockK, kLhsMajor>,
                                           OperandTile<T, kBlockM, kBlockK, kLhsMajor>>;
  using RhsTile = cuda::std::conditional_t<kRhsDecoded, DecodedTile<kBlockN, kBlockK, kRhsMajor>,
                                           OperandTile<T, kBlockN, kBlockK, kRhsMajor>>;
  using Output = cuda::std::conditional_t<kQuantized, ScaledOutputTile, OutputTile>;
  using LhsSource = typename LhsTile::Source;
  using RhsSource = typename RhsTile::Source;
  using Task = TileTask<LhsSource, RhsSource, Output>;
  static constexpr int kStageBytes = LhsTile::kBytes + RhsTile::kBytes;
  static constexpr int kSmemBytes = kStageBytes * kStages;

  static_assert(kWarpRows % 16 == 0 && kWarpCols % 16 == 0, "warp tiles are 16x16 blocks");
  static_assert(kStages >= 2, "the ring needs a slot to fill while one is read");

  using Accumulators = float[kFragsM][2 * kFragsN][4];

  // alpha_g, times both operands' fp32 tensor or group scales when quantized.
  static __device__ __forceinline__ float alpha_of(const GemmParams& p, int64_t g) {
    const float alpha = p.alpha_per_group != nullptr ? p.alpha_per_group[g] : p.alpha;
    if constexpr (kQuantized) {
      return alpha * fp32_scale(p.lhs_quant, g) * fp32_scale(p.rhs_quant, g);
    } else {
      return alpha;
    }
  }

  // A tile's output; with quantized operands, with the rowwise scales of
  // lhs group lhs_group (0 for ragged-M: its rows are the output's own) and
  // rhs group g.
  static __device__ __forceinline__ Output output_of(const OutputTile& out, const GemmParams& p,
                                                     int64_t lhs_group, int64_t g) {
    if constexpr (kQuantized) {
      return ScaledOutputTile{out, rowwise_scales(p.lhs_quant, lhs_group),
                              p.lhs_quant.scale_row_length, rowwise_scales(p.rhs_quant, g),
                              p.rhs_quant.scale_row_length};
    } else {
      return out;
    }
  }

  static __device__ __forceinline__ float beta_of(const GemmParams& p, int64_t g) {
    return p.beta_per_group != nullptr ? p.beta_per_group[g] : p.beta;
  }

  // Group g's matrix of an operand: stacked `group_stride` elements apart
  // from `base`, or pointer g of an array of G pointers.
  template <class Tile>
  static __device__ __forceinline__ const typename Tile::Element* group_matrix(
      const void* base, bool pointers, int64_t group_stride, int64_t g, const QuantOperand& q) {
    using E = typename Tile::Element;
    if (pointers) return static_cast<const E* const*>(base)[g];
    if constexpr (Tile::kDecoded) {
      return static_cast<const E*>(base) + g * group_stride * element_bits(q.dtype) / 8;
    } else {
      return static_cast<const E*>(base) + g * group_stride;
    }
  }

  // The sources are built in place inside the Task (not returned by helper
  // functions): the 16-bit instances then compile to the same SASS as
  // before quantized operands existed, spills included.

  // ragged-M: rows of one group's m-tile against that group's rhs, over all K.
  static __device__ Task ragged_m_task(const GemmParams& p, int64_t tile, int64_t tiles_n,
                                       int64_t* group_hint, int lane) {
    const MTileIndex index = split_ragged_m(tile, tiles_n);
    const int64_t g = find_group(p.records, p.groups, *group_hint, index.m_tile, lane);
    *group_hint = g;  // a CTA's m-tiles only grow, and so do their groups
    const GroupRecord group = p.records[g];
    const int64_t row_begin = m_tile_first_row(group, index.m_tile, kBlockM);
    const int64_t row_end = group.start + group.size;
    const int64_t col_begin = index.n_tile * kBlockN;
    const auto* rhs =
        group_matrix<RhsTile>(p.rhs, p.rhs_pointers, p.rhs_group_stride, g, p.rhs_quant);
    const void* bias = p.bias == nullptr ? nullptr
                                         : static_cast<const char*>(p.bias) +
                                               g * p.bias_stride * element_bytes(p.bias_type);
    const auto* lhs = static_cast<const typename LhsTile::Element*>(p.lhs);
    // lhs rows are the output's (absolute) rows; rhs rows its columns.
    return Task{
        LhsSource{lhs, OperandExtent{p.lhs_stride, row_begin, row_end, 0, p.depth},
                  LhsTile::format(p.lhs_quant, g, group)},
        RhsSource{rhs, OperandExtent{p.rhs_stride, col_begin, p.out_cols, 0, p.depth},
                  RhsTile::format(p.rhs_quant, g, group)},
        0,
        ceil_div(p.depth, kBlockK),
        0,
        output_of(OutputTile{p.out, p.out_type, p.out_stride, row_begin, row_end, col_begin,
                             p.out_cols, alpha_of(p, g), beta_of(p, g), bias, p.bias_type},
                  p, 0, g)};
  }

  // ragged-K: one (m, n) tile of group g's output, contracted over its tokens.
  static __device__ Task ragged_k_task(const GemmParams& p, int64_t tile, int64_t tiles_m,
                                       int64_t tiles_n) {
    const KTileIndex index = split_ragged_k(tile, tiles_m, tiles_n);
    const int64_t g = index.group;
    const GroupRecord group = p.records[g];
    const int64_t depth_end = group.start + group.size;
    const DepthSlices slices = ragged_k_slices(group.start, group.size, LhsTile::kChunk, kBlockK);
    const int64_t row_begin = index.m_tile * kBlockM;
    const int64_t col_begin = index.n_tile * kBlockN;
    void* out = p.out_pointers ? static_cast<void* const*>(p.out)[g]
                               : static_cast<char*>(p.out) +
                                     g * p.out_group_stride * element_bytes(p.out_type);
    const auto* lhs = static_cast<const typename LhsTile::Element*>(p.lhs);
    const auto* rhs = static_cast<const typename RhsTile::Element*>(p.rhs);
    return Task{
        LhsSource{lhs, OperandExtent{p.lhs_stride, row_begin, p.out_rows, group.start, depth_end},
                  LhsTile::format(p.lhs_quant, g, group)},
        RhsSource{rhs, OperandExtent{p.rhs_stride, col_begin, p.out_cols, group.start, depth_end},
                  RhsTile::format(p.rhs_quant, g, group)},
        slices.first,
        slices.count,
        group.start,
        output_of(OutputTile{out, p.out_type, p.out_stride, row_begin, p.out_rows, col_begin,
                             p.out_cols, alpha_of(p, g), beta_of(p, g), nullptr, p.bias_type},
                  p, g, g)};
  }

  static __device__ __forceinline__ void copy_slice(const Task& task, int64_t slice,
                                                    uint32_t stage, int thread) {
    const int64_t depth0 = task.depth_first + slice * kBlockK;
    LhsTile::template copy<kThreads>(task.lhs, depth0, stage, thread);
    RhsTile::template copy<kThreads>(task.rhs, depth0, stage + LhsTile::kBytes, thread);
  }

  // mma over one slice in shared memory; `mask` zeroes depths before
  // task.zero_before (first slice of a ragged-K group only).
  static __device__ __forceinline__ void compute_slice(const Task& task, uint32_t stage,
                                                       bool mask, int warp_row0, int warp_col0,
                                                       int lane, Accumulators& acc) {
    const uint32_t lhs_stage = stage;
    const uint32_t rhs_stage = stage + LhsTile::kBytes;
#pragma unroll
    for (int k = 0; k < kBlockK; k += 16) {
      uint32_t a[kFragsM][4];
      uint32_t b[kFragsN][4];
#pragma unroll
      for (int i = 0; i < kFragsM; ++i) {
        LhsTile::load_block(lhs_stage, warp_row0 + 16 * i, k, lane, a[i]);
      }
#pragma unroll
      for (int j = 0; j < kFragsN; ++j) {
        RhsTile::load_block(rhs_stage, warp_col0 + 16 * j, k, lane, b[j]);
      }
      if (mask) {
        const int64_t depth = task.depth_first + k;
#pragma unroll
        for (int i = 0; i < kFragsM; ++i) mask_depth_before(a[i], depth, task.zero_before, lane);
#pragma unroll
        for (int j = 0; j < kFragsN; ++j) mask_depth_before(b[j], depth, task.zero_before, lane);
      }
      // 8-column block n is half n % 2 of rhs block n / 2.
#pragma unroll
      for (int i = 0; i < kFragsM; ++i) {
#pragma unroll
        for (int n = 0; n < 2 * kFragsN; ++n) {
          mma_16816<T>(acc[i][n], a[i], b[n / 2][rhs_register(n % 2, 0)],
                       b[n / 2][rhs_register(n % 2, 1)]);
        }
      }
    }
  }

  static __device__ __forceinline__ void mainloop(const Task& task, uint32_t smem,
                                                  int thread, int warp_row0, int warp_col0,
                                                  int lane, Accumulators& acc) {
    // Prologue: slices 0 .. kStages - 2 into slots 0 .. kStages - 2. Every
    // step commits a group, empty or not, so the wait count below holds.
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) {
      if (s < task.slices) copy_slice(task, s, smem + s * kStageBytes, thread);
      cp_async_commit();
    }
    int read_slot = 0;
    int write_slot = kStages - 1;
    for (int64_t slice = 0; slice < task.slices; ++slice) {
      // Groups committed so far: kStages - 1 + slice; slice `slice` is group
      // number slice + 1, so at most kStages - 2 may still be in flight.
      cp_async_wait<kStages - 2>();
      __syncthreads();
      const int64_t next = slice + kStages - 1;
      if (next < task.slices) copy_slice(task, next, smem + write_slot * kStageBytes, thread);
      cp_async_commit();
      compute_slice(task, smem + read_slot * kStageBytes,
                    slice == 0 && task.depth_first < task.zero_before, warp_row0, warp_col0, lane,
                    acc);
      read_slot = read_slot + 1 == kStages ? 0 : read_slot + 1;
      write_slot = write_slot + 1 == kStages ? 0 : write_slot + 1;
    }
    cp_async_wait<0>();
    __syncthreads();
  }

  static __device__ __forceinline__ void run(const GemmParams& p) {
    extern __shared__ __align__(16) unsigned char shared_memory[];
    const uint32_t smem = shared_address(shared_memory);
    const int thread = static_cast<int>(threadIdx.x);
    const int lane = thread % 32;
    const int warp = thread / 32;
    const int warp_row0 = warp / kConfig.warps_n * kWarpRows;
    const int warp_col0 = warp % kConfig.warps_n * kWarpCols;

    const bool ragged_m = p.op == GG_OP_RAGGED_M;
    const int64_t tiles_n = ceil_div(p.out_cols, kBlockN);
    const int64_t tiles_m = ragged_m ? *p.total_m_tiles : ceil_div(p.out_rows, kBlockM);
    const int64_t tiles = ragged_m ? tiles_m * tiles_n : tiles_m * tiles_n * p.groups;
    if constexpr (kLhsDecoded || kRhsDecoded) {  // the decode tables, before any copy
      if constexpr (kLhsDecoded) LhsTile::template fill_values<kThreads>(p.lhs_quant, thread);
      if constexpr (kRhsDecoded) RhsTile::template fill_values<kThreads>(p.rhs_quant, thread);
      __syncthreads();
    }
    int64_t group_hint = 0;
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      const Task task = ragged_m ? ragged_m_task(p, tile, tiles_n, &group_hint, lane)
                                 : ragged_k_task(p, tile, tiles_m, tiles_n);
      Accumulators acc = {};
      mainloop(task, smem, thread, warp_row0, warp_col0, lane, acc);
      store_tile(acc, task.out, warp_row0, warp_col0, lane);
    }
    if (p.zero_rows_end > 0) {
      const GroupRecord& last = p.records[p.groups - 1];
      zero_rows(p.out, p.out_type, p.out_stride, p.out_cols, last.start + last.size,
                p.zero_rows_end, int64_t{blockIdx.x} * kThreads + thread,
                int64_t{gridDim.x} * kThreads);
    }
  }
};

template <PortableTile kTile, class T, Major kLhsMajor, Major kRhsMajor, bool kLhsDecoded = false,
          bool kRhsDecoded = false>
__global__ void __launch_bounds__(PortableGemm<kTile, T, kLhsMajor, kRhsMajor>::kThreads,
                                  kLhsDecoded || kRhsDecoded ? kQuantizedMinCtasPerSm
                                                             : tile_config(kTile).min_ctas_per_sm)
    portable_gemm_kernel(const __grid_constant__ GemmParams params) {
  PortableGemm<kTile, T, kLhsMajor, kRhsMajor, kLhsDecoded, kRhsDecoded>::run(params);
}

}  // namespace gg::portable

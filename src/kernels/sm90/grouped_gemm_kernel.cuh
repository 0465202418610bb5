// The Hopper grouped GEMM kernel, fp32 accumulate, one launch per op:
//   ragged-M  out[g rows] = alpha_g * lhs[g rows] * op(rhs[g]) + beta_g * out[g rows] + bias[g]
//   ragged-K  out[g]      = alpha_g * lhs[g rows]^T * rhs[g rows] + beta_g * out[g]
// Operands bf16/fp16, or fp8 (e4m3 / e5m2) with their fp32 tensor, group or
// rowwise scales applied to the accumulators in the epilogue, or fp32 block
// scales promoted every k-step, or MX32 e8m0 block scales of both operands
// (mxfp8) promoted every 32-deep wgmma. Contraction
// steps are counted in bytes: a k-step is 128 bytes of each operand row (64
// 16-bit or 128 fp8 elements), so the TMA boxes, the 128-byte swizzle, the
// smem descriptors and the stages are one layout for every element type, and
// an element type is the wgmma instruction (k16 or k32, 32 bytes each) plus
// the epilogue's scales. fp8 wgmma reads K-major operands only. Quantized
// operands with block scales (MX, NV) or weights with bf16 activations are
// decoded by the consumers into bf16 tiles from their codes, which TMA
// brings into a raw area of the stage (decode_stage.cuh), and run bf16
// wgmmas. The instances are compiled by element family in
// sm90_gemm_16bit.cu, sm90_gemm_fp8.cu, sm90_gemm_fp8_mx.cu and
// sm90_gemm_decoded.cu; the host
// side (maps, plan, dispatch) is sm90_gemm.cu.
//
// Plan of the kernel. A persistent grid (one CTA per SM) of 3 warpgroups;
// for ragged-K with long groups, clusters of two CTAs that share each B tile
// (see grouped_gemm_kernel's kCluster).
// Every CTA first builds the group table from the device sizes
// (group_table.cuh), then takes tiles c, c + grid, ... of BM x BN outputs.
// Ragged-M numbers its tiles group after group, and within a group in bands
// of m-tiles that walk the n-tiles together (tile_order.h), so CTAs running
// together share the group's weights and lhs rows in L2; ragged-K numbers
// them group after group over the static [P/BM, Q/BN] grid of each group's
// output.
//   - Warpgroup 0 is the producer: one thread issues TMA loads of the A and B
//     tiles of each 128-byte k-step into a ring of shared-memory stages, each
//     guarded by a "full" mbarrier (TMA bytes landed) and an "empty" mbarrier
//     (every consumer warp done reading). An operand whose contraction dim is
//     contiguous is loaded K-major in one box; one whose M/N dim is contiguous
//     is loaded MN-major as 64-wide boxes and read by wgmma transposed.
//     Out-of-bounds elements read as zero (TMA), so K and N tails need no code.
//     Per-expert weights (a device array of G pointers) load through a map of
//     their own, which a small kernel writes just before (expert_maps.h).
//   - Warpgroups 1 and 2 are consumers: each owns 64 rows of a 128-row tile
//     (or, in a 64-row tile, the 64 rows and half its columns: the tiles of
//     short ragged-M groups, and in the 128 x 256 instance those of groups
//     of at most 64 rows, which so cost half the wgmma work) and
//     runs wgmma m64nNk16, keeping one wgmma group in flight while releasing the
//     stage of the one before. The epilogue (epilogue.cuh) applies alpha,
//     beta and bias in fp32 and leaves through TMA stores from a staging
//     buffer, draining while the warpgroup starts its next tile; a block that
//     ends inside its group uses masked stores from registers, so no write
//     ever leaves a group or the output. Ragged-K outputs are stored
//     evict-first in L2, so that they do not push out the operands. Ragged-K
//     128 x 256 tiles of a few whole k-steps (groups averaging 128-511
//     tokens) store their two blocks in turn, one under the other's wgmmas.
//   - Ragged-M reads lhs rows of the next group inside its last tile; they
//     only feed output rows that are never stored. Ragged-K contracts over a
//     group's tokens, so the tokens of the next group inside the last k-step
//     must count as zero. Where both operands hold tokens as rows (the usual
//     wgrad), a group that does not start 16-byte aligned and fill whole
//     k-steps loads through maps of its own that start at its first token
//     and end at its last (token_maps.h), written by a small kernel just
//     before, and TMA fills the rows past the end with zeros. Otherwise (a
//     K-major operand, whose boxes must start 16-byte aligned) a group's
//     k-steps begin at its first token rounded down to 8, and the consumers
//     zero the tokens outside the group in shared memory (both operands,
//     since the neighbours' data may hold anything) before the wgmma reads
//     the stage. Group starts need no alignment either way. A step issues
//     only the 32-byte wgmma slices that hold group tokens: a group of a few
//     tokens costs one wgmma per tile, not four. Decoded operands with
//     block scales along the tokens (MX/NV) instead start a group's
//     k-steps at its first token, so that a step holds whole blocks: their
//     boxes start at the 16-byte chunk holding it, 16 bytes wider, and the
//     consumers decode each row's codes from that shift (decoded_steps.h),
//     zeroing those past the group.
//   - fp8 with 1 x 128 blocks along the tokens (the fp8 weight gradient)
//     runs its k-steps on the same aligned windows as other K-major
//     operands, 128 tokens from the group's first rounded down to 16. A
//     block (128 tokens from the group's first) then starts `s` = start %
//     16 tokens into a window: the window's first s tokens end the block
//     before. The consumers split them off the lhs tile's first 16 tokens
//     into a tile of their own (split_window_chunk: the block before's
//     tokens there, this block's in place), and a window's wgmmas are the
//     split-off tile's one 32-deep wgmma into the block before's sums,
//     which are then promoted times its scales, and the window's four into
//     this block's. The rhs needs no split: the lhs's zeros keep each
//     product to its block (the lhs is the one that may hold e5m2
//     infinities; the rhs, e4m3, holds none), and the tokens outside the
//     group are zeroed in both.
// Shared memory: the stages, the split-off tiles (fp8 token blocks), the
// staging buffer (64 rows x BN 16-bit values per consumer), the mbarriers,
// the group table (plan.h sizes it).
// Register budget (setmaxnreg): producer 40, consumers 232; with MX blocks
// 48 and 224, the producer warpgroup's other warps writing the scales.
#pragma once

#include <cuda.h>
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "common/groups.h"
#include "kernels/portable/operand_decode.h"
#include "kernels/sm90/decode_stage.cuh"
#include "kernels/sm90/epilogue.cuh"
#include "kernels/group_table.cuh"
#include "kernels/sm90/sm90_primitives.cuh"
#include "kernels/sm90/step_scales.h"
#include "kernels/sm90/tile_order.h"
#include "kernels/sm90/wgmma.h"
#include "kernels/unused_rows.cuh"
#include "plan/plan.h"

namespace gg::sm90 {

constexpr int kStepBytes = 128;  // of each operand row per k-step
constexpr int kThreads = 384;
constexpr int kConsumerThreads = 256;
constexpr int kBoxBytes = 64 * 128;  // one 64 x 64 16-bit TMA box

// Contraction elements of one k-step: 64 16-bit or 128 fp8 elements.
template <typename T>
constexpr int kStepK = kStepBytes / OperandTypes<T>::kBytes;

// The layout of one tile shape. A 128-row tile gives each consumer 64 rows of
// all BN columns; a 64-row tile gives each the 64 rows and half the columns.
template <Sm90Tile kShape, Sm90Decode kDecode>
struct Config {
  static constexpr Sm90TileConfig kTile = sm90_tile_config(kShape, kDecode);
  static_assert(kTile.block_k * 2 == kStepBytes, "the plan's stages hold 128-byte k-steps");
  static constexpr int kBlockM = kTile.block_m;
  static constexpr int kBlockN = kTile.block_n;
  static constexpr bool kSplitN = kBlockM == 64;
  static constexpr int kConsumerN = kSplitN ? kBlockN / 2 : kBlockN;  // columns per consumer
  static constexpr int kStages = kTile.stages;
  static constexpr int kAStageBytes = kBlockM * kStepBytes;
  static constexpr int kBStageBytes = kBlockN * kStepBytes;
  // Decoded operands' raw codes, after the two bf16 tiles (decode_stage.cuh).
  static constexpr int kARawBytes = kBlockM * kTile.raw_row_bytes_a;
  static constexpr int kBRawBytes = kBlockN * kTile.raw_row_bytes_b;
  // fp8 token blocks: a window's row and column scales (TokenScaleFeed);
  // fp8 MX blocks: the step's fp32 scales (MxScaleWriter); after the tiles
  // and raw codes.
  static constexpr int kScaleBytes = kTile.scale_bytes;
  // Where each part of a stage starts: the A and B tiles, then the raw codes.
  static constexpr int kARawOffset = kAStageBytes + kBStageBytes;
  static constexpr int kBRawOffset = kARawOffset + kARawBytes;
  static constexpr int kBTileOffset = kAStageBytes;
  static constexpr int kScaleOffset = kBRawOffset + kBRawBytes;
  static constexpr int kStageBytes = kScaleOffset + kScaleBytes;
  static_assert(kStageBytes == sm90_stage_bytes(kTile), "plan.h's stage");
  static_assert(kBTileOffset % 1024 == 0, "B's tile starts 1024-byte aligned");
  // fp8 token blocks: each consumer's split-off lhs tile (64 rows of 128
  // bytes), after the stages.
  static constexpr size_t kSplitOffset = size_t(kStages) * kStageBytes;
  static constexpr size_t kStagingOffset = kSplitOffset + kTile.split_bytes;
  static constexpr size_t kStagingBytes = sm90_staging_bytes(kTile) / 2;  // per consumer
  static constexpr size_t kBarrierOffset = kStagingOffset + 2 * kStagingBytes;
  static constexpr size_t kTableOffset = kBarrierOffset + 2 * kStages * sizeof(uint64_t);
  static_assert(kStageBytes % 1024 == 0 && kTile.split_bytes % 1024 == 0 &&
                    kStagingOffset % 1024 == 0 &&
                    kStagingBytes % 1024 == 0,
                "TMA 128-byte swizzled boxes start 1024-byte aligned");
  static_assert(kStagingBytes == 64 * kConsumerN * 2, "a consumer's 64 rows in 16-bit values");
  static size_t smem_bytes(int groups) { return sm90_smem_bytes(kTile, groups); }
  static_assert(kTableOffset + 1024 == sm90_smem_bytes(kTile, 0) - 4, "plan.h's layout");
};

// The stage layout of an instance (plan.h's Sm90Decode): its operand
// types', but for fp8 blocks along a ragged-K group's tokens.
template <gg_op kOp, typename T>
constexpr Sm90Decode kStageLayout = OperandTypes<T>::kBlockScaled && kOp == GG_OP_RAGGED_K
                                        ? Sm90Decode::kFp8Tokens
                                        : OperandTypes<T>::kDecode;

struct Params {
  CUtensorMap a_map;  // 3-D: {inner, outer, group}
  CUtensorMap b_map;
  const CUtensorMap* b_maps;  // per-expert rhs (ragged-M): group g's map (expert_maps.h); else null
  // Ragged-K with both operands MN-major: [G] lhs maps, then [G] rhs maps,
  // each over its group's tokens (token_maps.h); else null.
  const CUtensorMap* token_maps;
  OutputParams out;
  const void* sizes;
  const void* offsets;
  gg_index_type index_type;
  int64_t rows_capacity;  // M of the ragged operands
  int out_rows;           // ragged-K: P (ragged-M rows come from the group table)
  int k_dim;              // ragged-M: K (ragged-K contracts over group sizes)
  int groups;
  int64_t zero_rows_end;  // GG_GEMM_ZERO_UNUSED_ROWS: M (unused_rows.cuh); else 0
  uint32_t* flags;
  // fp8 and decoded operands: their fp32 tensor, group or rowwise scales,
  // applied to the accumulators in the epilogue, and decoded operands'
  // element types and block scales (16-bit operands: the defaults).
  portable::QuantOperand lhs_quant;
  portable::QuantOperand rhs_quant;
};

// Where one output tile's operands come from and where it goes.
struct Tile {
  int group;
  int a_mn;     // first A row (ragged-M: token; ragged-K: p)
  int b_mn;     // first B column (n or q)
  int b_group;  // B's third TMA coordinate (ragged-M: g; ragged-K: 0)
  int k0;       // first contraction index (ragged-K: the group's first token, rounded
                // down to 16 bytes so TMA boxes start 16-byte aligned; decoded
                // operands: the first token itself)
  int k_steps;
  int k_first;  // contraction elements of the first step before the group (ragged-K)
  int k_last;   // contraction elements in the last step that belong to the group
  int rows;     // valid output rows from a_mn
  bool own_maps;  // ragged-K: loads through the group's token maps (token_maps.h)
};

// Tiles are numbered in units of kCluster m-tiles x one n-tile: a cluster
// of two CTAs (ragged-K only) takes a unit, each CTA the m-tile of its rank,
// both reading the unit's B tile. An output of an odd number of m-tiles
// leaves the last unit's second CTA with no rows: it runs the unit's k-steps
// (its peer needs its half of B) and stores nothing.
// kTokenMaps (ragged-K): a group that ends inside a k-step or starts off a
// 16-byte boundary loads through its own maps (token_maps.h), whose token 0
// is its first. kDecodedTokens (ragged-K, decoded operands with block scales
// along the tokens): a group's k-steps start at its first token (k0), each
// operand's boxes at the 16-byte chunk of codes holding it (decoded_steps.h).
template <gg_op kOp, int kBlockM, int kBlockN, int kBlockK, int kCluster, bool kTokenMaps,
          bool kDecodedTokens>
struct TileMap {
  static constexpr int kChunkK = kBlockK / 8;  // elements of 16 bytes
  static_assert(kCluster == 1 || kOp == GG_OP_RAGGED_K, "ragged-M tiles are not paired");
  const Params& p;
  GroupTable table;
  int n_tiles;
  int rank;  // this CTA's m-tile of each unit

  // Ragged-K: units of one group's output.
  __device__ int units_per_group() const {
    constexpr int kUnitRows = kBlockM * kCluster;
    return (p.out_rows + kUnitRows - 1) / kUnitRows * n_tiles;
  }

  __device__ int count() const {
    if constexpr (kOp == GG_OP_RAGGED_M) return table.tile_prefix[p.groups] * n_tiles;
    return p.groups * units_per_group();
  }

  __device__ Tile at(int unit) const {
    Tile t;
    if constexpr (kOp == GG_OP_RAGGED_M) {
      // Group g owns tiles [tile_prefix[g], tile_prefix[g + 1]) * n_tiles.
      const int g = find_group(table.tile_prefix, p.groups, unit / n_tiles);
      const int first_m_tile = table.tile_prefix[g];
      const TileInGroup in_group = tile_in_group(unit - first_m_tile * n_tiles,
                                                 table.tile_prefix[g + 1] - first_m_tile, n_tiles);
      t.group = g;
      t.a_mn = table.start[g] + in_group.m_tile * kBlockM;
      t.rows = min(kBlockM, table.start[g] + table.rows[g] - t.a_mn);
      t.b_mn = in_group.n_tile * kBlockN;
      t.b_group = p.b_maps != nullptr ? 0 : g;  // per-expert maps hold one matrix
      t.k0 = 0;
      t.k_steps = (p.k_dim + kBlockK - 1) / kBlockK;
      t.k_first = 0;
      t.k_last = kBlockK;
      t.own_maps = false;
    } else {
      const int g = unit / units_per_group();
      const int r = unit - g * units_per_group();
      t.group = g;
      t.a_mn = ((r / n_tiles) * kCluster + rank) * kBlockM;
      t.rows = min(kBlockM, p.out_rows - t.a_mn);
      t.b_mn = (r % n_tiles) * kBlockN;
      t.b_group = 0;
      // A group whose tokens start 16-byte aligned and fill whole k-steps
      // loads through the operand's map, reading nothing outside it, and
      // needs no fence for maps of its own (uniform lists of 64-token
      // multiples ran up to 4% slower through token maps). Any other group
      // loads through its token maps where there are some. Without them
      // (K-major operands: a TMA box must start 16-byte aligned in global
      // memory), its k-steps start at the aligned token before the group,
      // and the tokens before its start and past its end are zeroed.
      t.own_maps =
          kTokenMaps && ((table.start[g] & (kChunkK - 1)) != 0 || table.rows[g] % kBlockK != 0);
      const int start = t.own_maps ? 0 : table.start[g];
      const int end = start + table.rows[g];
      t.k0 = kDecodedTokens ? start : start & ~(kChunkK - 1);
      t.k_first = start - t.k0;
      t.k_steps = table.rows[g] == 0 ? 0 : (end - t.k0 + kBlockK - 1) / kBlockK;
      t.k_last = end - t.k0 - (t.k_steps - 1) * kBlockK;
    }
    return t;
  }
};

// One box into `smem`, or with kMulticast into `smem`'s offset in both CTAs
// of the cluster, each of whose `full` barriers receives its bytes.
template <bool kMulticast>
__device__ __forceinline__ void load_box(const CUtensorMap* map, uint8_t* smem,
                                         const int32_t (&coords)[3], uint64_t* full) {
  if constexpr (kMulticast) {
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem, map,
                                    coords, full, uint16_t{0b11});
  } else {
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem, map,
                                    coords, full);
  }
}

// One operand tile of kRows x 128 bytes of K into `smem`: a single K-major box, or
// kRows / 64 MN-major boxes of 64 x 64.
template <bool kKMajor, int kRows, bool kMulticast = false>
__device__ __forceinline__ void load_operand(const CUtensorMap* map, uint8_t* smem, int mn, int k,
                                             int group, uint64_t* full) {
  if constexpr (kKMajor) {
    load_box<kMulticast>(map, smem, {k, mn, group}, full);
  } else {
#pragma unroll
    for (int box = 0; box < kRows / 64; ++box) {
      load_box<kMulticast>(map, smem + box * kBoxBytes, {mn + 64 * box, k, group}, full);
    }
  }
}

// Zeroes the contraction elements in [k_lo, k_hi) but outside [k_begin,
// k_end) of an operand tile, run by the 256 consumer threads. [k_lo, k_hi)
// are the 32-byte slices the wgmma will read; slices outside it are skipped
// and need no zeros. K-major rows hold 8 16-byte chunks of E elements,
// chunk c of row r stored at c ^ (r % 8) (the 128-byte swizzle); MN-major
// boxes (16-bit elements only) hold one 128-byte row per k.
template <bool kKMajor, int kRows, typename E>
__device__ __forceinline__ void zero_outside(uint8_t* tile, int k_lo, int k_hi, int k_begin,
                                             int k_end, int thread) {
  if constexpr (kKMajor) {
    constexpr int kChunkK = 16 / sizeof(E);
    for (int i = thread; i < kRows * 8; i += kConsumerThreads) {
      const int row = i / 8;
      const int chunk = i % 8;
      if (chunk * kChunkK >= k_hi || chunk * kChunkK + kChunkK <= k_lo) continue;
      if (chunk * kChunkK >= k_begin && chunk * kChunkK + kChunkK <= k_end) continue;
      // One 16-byte load and store, its bytes outside the group masked
      // (chunk_bytes_mask; a byte store an element had cost four times the
      // instructions).
      uint4* at = reinterpret_cast<uint4*>(tile + row * 128 + ((chunk ^ (row & 7)) * 16));
      const int first = (k_begin - chunk * kChunkK) * int(sizeof(E));
      const int end = (k_end - chunk * kChunkK) * int(sizeof(E));
      uint4 codes = *at;
      codes.x &= chunk_bytes_mask(0, first, end);
      codes.y &= chunk_bytes_mask(1, first, end);
      codes.z &= chunk_bytes_mask(2, first, end);
      codes.w &= chunk_bytes_mask(3, first, end);
      *at = codes;
    }
  } else {
    static_assert(sizeof(E) == 2, "MN-major operands are 16-bit");
    const int rows = k_hi - k_lo;
    for (int i = thread; i < (kRows / 64) * rows * 8; i += kConsumerThreads) {
      const int box = i / (rows * 8);
      const int k = k_lo + (i / 8) % rows;
      const int chunk = i % 8;
      if (k >= k_begin && k < k_end) continue;
      *reinterpret_cast<uint4*>(tile + box * kBoxBytes + k * 128 + chunk * 16) = make_uint4(0, 0, 0, 0);
    }
  }
}

template <bool kKMajor>
__device__ __forceinline__ uint64_t operand_desc(const uint8_t* tile) {
  return kKMajor ? kmajor_sw128_desc(tile) : mnmajor_sw128_desc(tile);
}

// Multiplies a consumer's 64 x kN block of accumulators by the fp32 scales
// of group g's fp8 operands (portable/operand_decode.h's QuantOperand, as
// the portable path reads them): the tensor or group scales of both, and
// rowwise scales, lhs's by output row (the output's own rows in ragged-M,
// group g's in ragged-K) and rhs's by output column. Done in registers
// before the epilogue, which then runs as for 16-bit operands. Accumulator
// i of a thread is row warp*16 + lane/4 + 8*((i/2)%2), column 8*(i/4) +
// 2*(lane%4) + i%2 of the block; no scale is read past `rows` or `cols`.
template <gg_op kOp, int kN>
__device__ __forceinline__ void scale_accumulators(const Params& p, int g, int64_t row0, int rows,
                                                   int col0, int thread, float (&acc)[kN / 2]) {
  using portable::QuantOperand;
  const auto rowwise = [](const QuantOperand& q, int group) -> const float* {
    if (q.scaling != GG_BLOCK_ROWWISE) return nullptr;
    return reinterpret_cast<const float*>(portable::group_scales(q, group));
  };
  const float both = portable::fp32_scale(p.lhs_quant, g) * portable::fp32_scale(p.rhs_quant, g);
  const float* row_scales = rowwise(p.lhs_quant, kOp == GG_OP_RAGGED_M ? 0 : g);
  const float* col_scales = rowwise(p.rhs_quant, g);
  const int lane = thread % 32;
  float row_factor[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = (thread / 32) * 16 + lane / 4 + 8 * half;
    row_factor[half] = both;
    if (row_scales != nullptr && r < rows) {
      row_factor[half] *= row_scales[(row0 + r) * p.lhs_quant.scale_row_length];
    }
  }
  // Column scales: a thread's columns 8 j + 2 (lane % 4) + {0, 1} of the
  // kN / 8 blocks j are those of the 8 lanes with its lane % 4. In passes
  // of 16 blocks, each of them loads the pairs of 2 blocks, all at once,
  // and the others take them by shuffle: 4 loads a thread a pass instead of
  // 32 (one round trip; the loads one by one had made rowwise products
  // 1.3x slower than tensor-scaled ones on an H100). Two blocks a lane keep
  // the 128 x 256 cluster instances from spilling.
  constexpr int kPassBlocks = 16;
  const int quad = lane % 4;
#pragma unroll
  for (int pass = 0; pass < kN / 8 / kPassBlocks; ++pass) {
    float owned[2][2] = {{1.0f, 1.0f}, {1.0f, 1.0f}};
    if (col_scales != nullptr) {
#pragma unroll
      for (int b = 0; b < 2; ++b) {
        const int c = col0 + (pass * kPassBlocks + (lane / 4) * 2 + b) * 8 + 2 * quad;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          owned[b][e] =
              c + e < p.out.cols ? col_scales[(c + e) * p.rhs_quant.scale_row_length] : 0.0f;
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kPassBlocks; ++j) {
      const int block = pass * kPassBlocks + j;
      float col_factor[2] = {1.0f, 1.0f};
      if (col_scales != nullptr) {  // the same for the whole warp
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          col_factor[e] = __shfl_sync(0xffffffffu, owned[j % 2][e], quad + 4 * (j / 2));
        }
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[block * 4 + i] *= row_factor[i / 2] * col_factor[i % 2];
    }
  }
}

// The fp32 block scales of a block-scaled fp8 tile's k-steps (ragged-M:
// step ks is k-block ks of both operands, step_scales.h): lhs 1 x 128
// blocks, one per token row and k-block, for this thread's rows r and r + 8
// of the block (0 past the tile's rows, which may lie past the operand's);
// rhs 128 x 128 blocks, one per 128 output columns and k-block, for the
// consumer's columns, which lie in one n-block (they start on a multiple of
// 128). The entries' addresses are found once a tile (a step's are the next
// word of each), and a step's scales load a step ahead, issued after the
// step's wgmmas: L2's latency is about a step's wgmmas, and issued before
// them the loads' address arithmetic had delayed every step's wgmmas.
struct StepScales {
  float row[2];
  float col;
};

template <int kN>
struct StepScaleFeed {
  const float* rows[2];  // this thread's rows' scales from k-block 0; null past the tile
  const float* col;      // the consumer's n-block's scales from k-block 0
  StepScales next;       // the next step's, once loaded

  __device__ __forceinline__ void begin_tile(const Params& p, const Tile& t, int first_row,
                                             int first_col, int thread) {
    static_assert(kN == 128, "a consumer's columns are one 128 x 128 block's");
    const float* lhs = static_cast<const float*>(p.lhs_quant.block_scales);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = first_row + (thread / 32) * 16 + (thread % 32) / 4 + 8 * half;
      rows[half] = r < t.rows ? lhs + lhs_step_scale_entry(p.lhs_quant, t.a_mn + r, 0) : nullptr;
    }
    col = reinterpret_cast<const float*>(portable::group_scales(p.rhs_quant, t.group)) +
          rhs_step_scale_entry(p.rhs_quant, first_col, 0);
    if (t.k_steps > 0) load(0);
  }

  __device__ __forceinline__ void load(int ks) {
#pragma unroll
    for (int half = 0; half < 2; ++half) next.row[half] = rows[half] ? rows[half][ks] : 0.0f;
    next.col = col[ks];
  }
};

// The fp32 block scales of fp8 token blocks (1 x 128 blocks of both
// operands along a ragged-K group's tokens: the weight gradient's columnwise
// copies), a window ahead, through the stage: window w's slot holds the
// group's token block w, block column first_block + w of every row of both
// (step_scales.h). Consumer thread i < kColumns loads column i's rhs scale
// of the tile's next block from global memory (L2), thread kColumns + r row
// r's lhs scale (0 past the tile's rows), and stores it into the stage's
// slot of scales (the columns', then the rows') when that window is
// prepared, before the consumers' barrier; the promotions of both
// consumers then read the slot. Each scale is loaded once a CTA a block (a column's or a
// row's scales lie a row of blocks apart, one to a 32-byte sector: loaded
// by every warp that needs them, they had kept the L1 pipe busy, and their
// latency in the consumers' registers had cost spills or stalls). A slot
// outlives its stage's release, since the block's promotion follows it
// (in the next window): only the consumers write it, as they prepare the
// window a ring of stages later, after both have passed a barrier since the
// promotions that read it.
template <int kRows, int kColumns>
struct TokenScaleFeed {
  static constexpr int kScales = kColumns + kRows;
  const float* scales = nullptr;  // this thread's scale row, from the group's first block
  float next = 0.0f;

  __device__ __forceinline__ void begin_tile(const Params& p, const Tile& t, int first_block,
                                             int thread) {
    const int col = t.b_mn + thread;
    const int row = thread - kColumns;
    if (thread < kColumns) {
      scales = col < p.out.cols ? static_cast<const float*>(p.rhs_quant.block_scales) +
                                      token_step_scale_entry(p.rhs_quant, col, first_block, 0)
                                : nullptr;
    } else {
      scales = thread < kScales && row < t.rows
                   ? static_cast<const float*>(p.lhs_quant.block_scales) +
                         token_step_scale_entry(p.lhs_quant, t.a_mn + row, first_block, 0)
                   : nullptr;
    }
    next = scales != nullptr && t.k_steps > 0 ? scales[0] : 0.0f;
  }

  // Stores the loaded step's scale into `slot`.
  __device__ __forceinline__ void store(float* slot, int thread) const {
    if (thread < kScales) slot[thread] = next;
  }

  // Loads block ks + 1's scale (of `blocks`): after the window's proxy
  // fence, which would otherwise wait for the load (the fence is a
  // MEMBAR.ALL.CTA).
  __device__ __forceinline__ void load_after(int ks, int blocks) {
    next = scales != nullptr && ks + 1 < blocks ? scales[ks + 1] : 0.0f;
  }
};

// A step's scales from its slot (TokenScaleFeed) for this consumer
// thread: the lhs scales of its rows r and r + 8 of the block, and the rhs
// scales of the tile's columns.
struct TokenStepScales {
  float row[2];
  const float* cols;  // the tile's column scales, from the consumer's first column
};

template <int kColumns>
__device__ __forceinline__ TokenStepScales token_step_scales(const float* slot, int first_row,
                                                             int thread) {
  TokenStepScales s;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    s.row[half] = slot[kColumns + first_row + (thread / 32) * 16 + (thread % 32) / 4 + 8 * half];
  }
  s.cols = slot;
  return s;
}

// acc += partial x the step's scales (acc zeroed before a tile's first
// step: no select an accumulator a step). Accumulator i of a thread lies at
// row (i/2)%2 of the two, in column pair i/4.
template <int kN>
__device__ __forceinline__ void promote(float (&acc)[kN], const float (&partial)[kN],
                                        const StepScales& s) {
  const float scale[2] = {s.row[0] * s.col, s.row[1] * s.col};
#pragma unroll
  for (int i = 0; i < kN; ++i) acc[i] = fmaf(partial[i], scale[(i / 2) % 2], acc[i]);
}

// acc += partial x the step's scales (the token path zeroes acc before a
// tile's first step: no select an accumulator a step).
template <int kN>
__device__ __forceinline__ void promote(float (&acc)[kN], const float (&partial)[kN],
                                        const TokenStepScales& s) {
  const int lane = static_cast<int>(threadIdx.x % 32);
#pragma unroll
  for (int j = 0; j < kN / 4; ++j) {
    // Columns 8 j + 2 (lane % 4) + {0, 1}: one 8-byte load, 4 addresses a warp.
    const float2 col = *reinterpret_cast<const float2*>(s.cols + 8 * j + 2 * (lane % 4));
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float scale = s.row[i / 2] * (i % 2 == 0 ? col.x : col.y);
      acc[j * 4 + i] = fmaf(partial[j * 4 + i], scale, acc[j * 4 + i]);
    }
  }
}

// The MX32 scales of an fp8 tile's k-steps (ragged-M, both operands' e8m0
// blocks along K, kSm90MxBlocksPerStep a step; step_scales.h), as fp32 in
// the stage's slot: [4][BN] for the tile's columns, then [4][BM] for its
// rows, 0 past the tile's rows, the output's columns and K's last block.
// Written by the producer warpgroup's threads 32-127, which the TMA thread
// leaves idle: each loads the codes of its rows or columns for a step,
// waits for the stage to be empty, stores their values and arrives on the
// stage's full barrier, which counts these arrivals beside the TMA bytes.
// The codes load before the wait, so their L2 latency passes while the
// ring is full, and the consumers only read a float a row and a pair of
// floats a column pair at each promotion (loaded by every consumer thread
// from global memory, the 32 column scales of its accumulators a block
// would cost 32 loads and their conversions).
template <int kBlockM, int kBlockN>
struct MxScaleWriter {
  static constexpr int kThreads = 96;
  static constexpr int kBlocks = kSm90MxBlocksPerStep;
  static constexpr int kEntries = kBlockN + kBlockM;  // the tile's columns, then its rows
  static constexpr int kPerThread = (kEntries + kThreads - 1) / kThreads;
  static_assert(kBlocks == 4, "a step's codes of an entry are one 32-bit word");
  const uint8_t* rows[kPerThread];  // each entry's scale row; null past the tile
  uint32_t codes[kPerThread];       // the step's codes of each entry, block j in byte j
  uint32_t present = 0;             // bit n * kBlocks + j: entry n's block j exists

  __device__ __forceinline__ void begin_tile(const Params& p, const Tile& t, int thread) {
#pragma unroll
    for (int n = 0; n < kPerThread; ++n) {
      const int e = thread + n * kThreads;
      const int col = t.b_mn + e;
      const int row = e - kBlockN;
      rows[n] = nullptr;
      if (e < kBlockN && col < p.out.cols) {
        rows[n] = portable::group_scales(p.rhs_quant, t.group) +
                  mx_step_scale_entry(p.rhs_quant, col, 0, 0);
      } else if (e >= kBlockN && e < kEntries && row < t.rows) {
        rows[n] = static_cast<const uint8_t*>(p.lhs_quant.block_scales) +
                  mx_step_scale_entry(p.lhs_quant, int64_t{t.a_mn} + row, 0, 0);
      }
    }
  }

  // Loads this thread's codes of k-step ks (`q`: either operand's, whose
  // scale rows have one length, ceil(K / 32)).
  __device__ __forceinline__ void load(const portable::QuantOperand& q, int ks) {
    present = 0;
#pragma unroll
    for (int n = 0; n < kPerThread; ++n) {
      codes[n] = 0;
#pragma unroll
      for (int j = 0; j < kBlocks; ++j) {
        const int64_t entry = mx_step_scale_entry(q, 0, ks, j);
        if (rows[n] != nullptr && entry >= 0) {
          codes[n] |= uint32_t{__ldg(rows[n] + entry)} << (8 * j);
          present |= 1u << (n * kBlocks + j);
        }
      }
    }
  }

  // Stores the loaded step's values into `slot`.
  __device__ __forceinline__ void store(float* slot, int thread) const {
#pragma unroll
    for (int n = 0; n < kPerThread; ++n) {
      const int e = thread + n * kThreads;
      if (e >= kEntries) break;
#pragma unroll
      for (int j = 0; j < kBlocks; ++j) {
        const uint8_t code = static_cast<uint8_t>(codes[n] >> (8 * j));
        const float value = (present >> (n * kBlocks + j) & 1u) != 0
                                ? portable::block_scale_value(GG_BLOCK_MX32, code)
                                : 0.0f;
        slot[e < kBlockN ? j * kBlockN + e : kBlocks * kBlockN + j * kBlockM + (e - kBlockN)] =
            value;
      }
    }
  }
};

// Block j's scales from an MX step's slot (MxScaleWriter) for this consumer
// thread: its rows r and r + 8 of the block from `first_row` of the tile,
// and the tile's columns from `first_col` (its first column's offset in
// the tile).
template <int kBlockM, int kBlockN>
__device__ __forceinline__ TokenStepScales mx_block_scales(const float* slot, int j, int first_row,
                                                           int first_col, int thread) {
  constexpr int kBlocks = kSm90MxBlocksPerStep;
  TokenStepScales s;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    s.row[half] = slot[kBlocks * kBlockN + j * kBlockM + first_row + (thread / 32) * 16 +
                       (thread % 32) / 4 + 8 * half];
  }
  s.cols = slot + j * kBlockN + first_col;
  return s;
}

// 128-byte chunks a box of the staging buffer (epilogue.cuh's StagingLayout).
template <bool kSparseK>
constexpr int kStagingChunks = kSparseK ? 2 : 1;

// kSparseK (ragged-K with groups of a few tokens): a step issues only the
// 32-byte wgmma slices that hold group tokens. The skipped slices are
// predicated off, which makes ptxas serialize the kernel's wgmmas: worth it
// only when steps are mostly empty, so it is an instance of its own.
// Its tiles are nearly all epilogue, and their blocks leave in boxes two
// 128-byte chunks wide (epilogue.cuh); the other instances' in one.
// kCluster 2 (ragged-K): clusters of two CTAs take units of two m-tiles
// (TileMap), each CTA loading half of the shared B tile into both (TMA
// multicast), so B crosses from L2 once per unit; a stage is free again when
// the consumers of both CTAs are done with it.
template <gg_op kOp, bool kSparseK, Sm90Tile kShape, int kCluster, typename T, bool kAKMajor,
          bool kBKMajor>
__global__ void __launch_bounds__(kThreads, 1) grouped_gemm_kernel(const __grid_constant__ Params p) {
  using Types = OperandTypes<T>;
  constexpr Sm90Decode kLayout = kStageLayout<kOp, T>;
  using Cfg = Config<kShape, kLayout>;
  // kDecodedTokens: both operands decoded along a ragged-K group's tokens,
  // k-steps from the group's first token, each operand's codes in its raw
  // area in boxes from the 16-byte chunk holding it (decoded_steps.h);
  // kTokenBlocks: fp8 with 1 x 128 blocks along them, k-steps on aligned
  // windows, each block split across two (the header says how).
  constexpr bool kDecodedTokens = kLayout == Sm90Decode::kTokens;
  constexpr bool kTokenBlocks = kLayout == Sm90Decode::kFp8Tokens;
  constexpr bool kTokenSteps = kDecodedTokens || kTokenBlocks;
  constexpr bool kDecodeA = kLayout == Sm90Decode::kBoth || kDecodedTokens;
  constexpr bool kDecodeB = kDecodeA || kLayout == Sm90Decode::kRhs;
  // kMxBlocks: fp8 with MX32 blocks along K (ragged-M), each 32-deep wgmma
  // promoted times both operands' block scales, which the producer
  // warpgroup's other warps write into each stage (MxScaleWriter).
  constexpr bool kMxBlocks = Types::kMxBlocks;
  // Registers a thread of each role (setmaxnreg), of the 168 x 384 the launch
  // gives the CTA: 40 x 128 + 232 x 256, or with MX blocks 48 x 128 + 224 x 256.
  constexpr int kProducerRegisters = kMxBlocks ? 48 : 40;
  constexpr int kConsumerRegisters = kMxBlocks ? 224 : 232;
  static_assert(!kDecodeB || ((kOp == GG_OP_RAGGED_M) != kDecodedTokens && kAKMajor &&
                              kBKMajor && kCluster == 1 && !kSparseK),
                "decoded operands: K-major, ragged-M or along tokens");
  static_assert(!kTokenBlocks || (kAKMajor && kBKMajor && kCluster == 1 && !kSparseK &&
                                  kShape == Sm90Tile::k128x128 &&
                                  Cfg::kScaleBytes >= (Cfg::kBlockM + Cfg::kBlockN) * 4 &&
                                  Cfg::kBlockM + Cfg::kBlockN <= kConsumerThreads &&
                                  Cfg::kTile.split_bytes == 2 * 64 * kStepBytes),
                "fp8 token blocks: K-major 128 x 128 tiles, a split-off tile a consumer");
  static_assert(!kMxBlocks || (kOp == GG_OP_RAGGED_M && kAKMajor && kBKMajor && kCluster == 1 &&
                               !kSparseK && kShape == Sm90Tile::k128x128 &&
                               Cfg::kScaleBytes == kSm90MxBlocksPerStep *
                                                       (Cfg::kBlockM + Cfg::kBlockN) * 4),
                "fp8 MX blocks: ragged-M, K-major, 128 x 128 tiles");
  // Contraction elements of a k-step and of one wgmma (a 32-byte slice).
  constexpr int kBlockK = kStepK<T>;
  constexpr int kSliceK = kBlockK / 4;
  // The storage of one element, for zeroing tokens outside a group.
  using Element = std::conditional_t<Types::kFp8, uint8_t, uint16_t>;
  constexpr int kBlockM = Cfg::kBlockM;
  constexpr int kBlockN = Cfg::kBlockN;
  static_assert(kCluster == 1 || (kCluster == 2 && !Cfg::kSplitN), "pairs of 128-row tiles");
  // The tile of a ragged-M group of at most 64 rows runs as a 64-row tile:
  // half the wgmma work for the same output. Only such groups: run so, the
  // last tile of a longer group also finishes early, and its CTA runs ahead
  // of the others that read the group's weights through L2 in step with it
  // (16384-token skewed lists lost 0.93-0.98x on an H200).
  constexpr bool kSplitShortGroups = kOp == GG_OP_RAGGED_M && kBlockM == 128 && kBlockN == 256;
  // Ragged-K operands with tokens as rows: the host writes every group's
  // token maps (p.token_maps), and a group that needs them loads through
  // them (TileMap), so no k-step reads another group's tokens.
  constexpr bool kTokenMaps = kOp == GG_OP_RAGGED_K && !kAKMajor && !kBKMajor;
  extern __shared__ uint8_t smem_raw[];
  // 1024-byte aligned by an offset from the array, not through an integer
  // cast, so the compiler still knows these are shared-memory addresses (and
  // uses shared-memory loads and stores rather than generic ones).
  const uint32_t raw_address = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  uint8_t* smem = smem_raw + ((1024 - raw_address % 1024) % 1024);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + Cfg::kBarrierOffset);
  uint64_t* empty = full + Cfg::kStages;
  const GroupTable table = group_table_at(smem + Cfg::kTableOffset, p.groups);
  const int rank = kCluster > 1 ? static_cast<int>(cuda::ptx::get_sreg_cluster_ctarank()) : 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      // The TMA thread's arrival, and with MX blocks each scale writer's.
      constexpr int kScaleWriters = kMxBlocks ? MxScaleWriter<kBlockM, kBlockN>::kThreads : 0;
      cuda::ptx::mbarrier_init(&full[s], 1 + kScaleWriters);
      // One arrival per consumer warp of every CTA that reads the stage's B.
      cuda::ptx::mbarrier_init(&empty[s], kCluster * kConsumerThreads / 32);
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  // Along tokens the table's prefix counts blocks of scales, not m-tiles:
  // tile_prefix[g] is the column of group g's first block (both operands'
  // blocks are one size: MX32, NV16, or 1 x 128, one fp8 k-step).
  const int prefix_block =
      kTokenBlocks     ? kBlockK
      : kDecodedTokens ? 1 << portable::decoded_block_shift(p.lhs_quant.scaling)
                       : kBlockM;
  const uint32_t flags = build_group_table<kThreads>(table, p.sizes, p.offsets, p.index_type,
                                                     p.groups, p.rows_capacity, prefix_block);
  if (blockIdx.x == 0 && threadIdx.x == 0 && flags != 0) atomicOr(p.flags, flags);
  if constexpr (kCluster > 1) {  // the peer's barriers are initialized before any TMA signals them
    cuda::ptx::barrier_cluster_arrive();
    cuda::ptx::barrier_cluster_wait();
  } else {
    __syncthreads();
  }

  const TileMap<kOp, kBlockM, kBlockN, kBlockK, kCluster, kTokenMaps, kDecodedTokens> tiles{
      p, table, (p.out.cols + kBlockN - 1) / kBlockN, rank};
  const int tile_count = tiles.count();
  const int first_unit = static_cast<int>(blockIdx.x) / kCluster;
  const int unit_stride = static_cast<int>(gridDim.x) / kCluster;

  if (threadIdx.x < 128) {
    release_registers<kProducerRegisters>();
    if (threadIdx.x == 0) {
      // Bytes of a row's codes in a k-step, for each decoded operand in the
      // raw area, and the bytes a stage receives (along tokens, boxes 16
      // bytes wider).
      [[maybe_unused]] const int raw_a = kDecodeA ? raw_step_bytes(p.lhs_quant.dtype) : 0;
      [[maybe_unused]] const int raw_b = kDecodeB ? raw_step_bytes(p.rhs_quant.dtype) : 0;
      constexpr int kBoxSlack = kDecodedTokens ? 16 : 0;
      const uint32_t stage_bytes = (kDecodeA ? kBlockM * (raw_a + kBoxSlack) : Cfg::kAStageBytes) +
                                   (kDecodeB ? kBlockN * (raw_b + kBoxSlack) : Cfg::kBStageBytes);
      int stage = 0;
      uint32_t phase = 0;
      int mapped_group = -1;  // the group whose own maps this thread has acquired
      // Token maps: acquired, and their descriptors prefetched into the TMA
      // unit, one tile ahead, while the tile before issues its loads (a CTA
      // may meet a new group at every tile).
      const auto take_token_maps = [&](int group) {
        if (group == mapped_group) return;
        const CUtensorMap* maps = p.token_maps + group;
        acquire_written_map(maps);
        acquire_written_map(maps + p.groups);
        prefetch_map(maps);
        prefetch_map(maps + p.groups);
        mapped_group = group;
      };
      for (int unit = first_unit; unit < tile_count; unit += unit_stride) {
        const Tile t = tiles.at(unit);
        const CUtensorMap* a_map = &p.a_map;
        const CUtensorMap* b_map = &p.b_map;
        if (t.own_maps) {
          a_map = p.token_maps + t.group;
          b_map = a_map + p.groups;
          take_token_maps(t.group);
        } else if (p.b_maps != nullptr) {
          b_map = p.b_maps + t.group;
          if (t.group != mapped_group) acquire_written_map(b_map);
          mapped_group = t.group;
        }
        // Along tokens: each operand's first box byte, at the chunk of
        // codes holding the group's first token.
        [[maybe_unused]] int a_origin = 0;
        [[maybe_unused]] int b_origin = 0;
        if constexpr (kDecodedTokens) {
          a_origin = int(token_box_origin(p.lhs_quant.dtype, t.k0) * raw_a / kBlockK);
          b_origin = int(token_box_origin(p.rhs_quant.dtype, t.k0) * raw_b / kBlockK);
        }
        for (int ks = 0; ks < t.k_steps; ++ks) {
          wait_barrier(&empty[stage], phase ^ 1);
          uint8_t* a_stage = smem + size_t(stage) * Cfg::kStageBytes;
          uint8_t* b_stage = a_stage + Cfg::kBTileOffset;
          cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                               cuda::ptx::space_shared, &full[stage],
                                               stage_bytes);
          const int k = t.k0 + ks * kBlockK;
          // Raw codes go to their area, addressed in bytes along K
          // (ragged-M: k0 is 0) or along the tokens from the origin.
          uint8_t* a_raw = a_stage + Cfg::kARawOffset;
          uint8_t* b_raw = a_stage + Cfg::kBRawOffset;
          if constexpr (kDecodeA) {
            load_box<false>(a_map, a_raw, {a_origin + ks * raw_a, t.a_mn, 0}, &full[stage]);
          } else {
            load_operand<kAKMajor, kBlockM>(a_map, a_stage, t.a_mn, k, 0, &full[stage]);
          }
          if constexpr (kDecodeB) {
            load_box<false>(b_map, b_raw, {b_origin + ks * raw_b, t.b_mn, t.b_group},
                            &full[stage]);
          } else if constexpr (kCluster == 1) {
            load_operand<kBKMajor, kBlockN>(b_map, b_stage, t.b_mn, k, t.b_group, &full[stage]);
          } else {  // this CTA's half of B, into both CTAs
            constexpr int kHalf = kBlockN / 2;
            load_operand<kBKMajor, kHalf, true>(b_map, b_stage + rank * (Cfg::kBStageBytes / 2),
                                                t.b_mn + rank * kHalf, k, t.b_group, &full[stage]);
          }
          if constexpr (kTokenMaps) {
            if (ks == 0 && unit + unit_stride < tile_count) {
              const Tile next = tiles.at(unit + unit_stride);
              if (next.own_maps) take_token_maps(next.group);
            }
          }
          if (++stage == Cfg::kStages) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
      // Work after this launch on the stream waits for it alone, so it does
      // not end before the map writer it may not have waited for.
      wait_for_map_writer();
    } else if constexpr (kMxBlocks) {
      if (threadIdx.x >= 32) {  // the scale writers, in step with the TMA thread's stages
        const int writer = static_cast<int>(threadIdx.x) - 32;
        MxScaleWriter<kBlockM, kBlockN> scales;
        int stage = 0;
        uint32_t phase = 0;
        for (int unit = first_unit; unit < tile_count; unit += unit_stride) {
          const Tile t = tiles.at(unit);
          scales.begin_tile(p, t, writer);
          for (int ks = 0; ks < t.k_steps; ++ks) {
            scales.load(p.lhs_quant, ks);
            wait_barrier(&empty[stage], phase ^ 1);
            scales.store(reinterpret_cast<float*>(smem + size_t(stage) * Cfg::kStageBytes +
                                                  Cfg::kScaleOffset),
                         writer);
            cuda::ptx::mbarrier_arrive(&full[stage]);
            if (++stage == Cfg::kStages) {
              stage = 0;
              phase ^= 1;
            }
          }
        }
      }
    }
  } else {
    claim_registers<kConsumerRegisters>();
    const int consumer = static_cast<int>(threadIdx.x) / 128 - 1;  // which 64 rows of the tile
    const int thread = static_cast<int>(threadIdx.x) % 128;
    // A warp is done with a stage: its arrival on the stage's empty barrier
    // in every CTA whose producer loads into it.
    const auto release = [&](int done_stage) {
      if (thread % 32 != 0) return;
      if constexpr (kCluster == 1) {
        cuda::ptx::mbarrier_arrive(&empty[done_stage]);
      } else {
#pragma unroll
        for (int r = 0; r < kCluster; ++r) arrive_cluster(&empty[done_stage], r);
      }
    };
    int stage = 0;
    uint32_t phase = 0;
    int mapped_group = -1;  // the per-expert output map this thread has acquired
    // Epilogues in turn: a consumer stores a tile's block only after the
    // other consumer has stored its block of the tile before, and hands the
    // turn back when done.
    // Otherwise the two finish a tile's wgmmas together and store together,
    // leaving the tensor cores idle; in turn, one stores while the other's
    // wgmmas have the tensor cores to themselves. Only for ragged-K 128 x 256
    // tiles of whole k-steps outside cluster pairs (groups averaging 128-511
    // tokens): there it gained 1.03-1.05x; sparse-K tiles are nearly all
    // epilogue, and longer tiles, which run at the power cap, read
    // 0.97-1.02x (on an H200).
    constexpr bool kEpiloguesInTurn =
        kOp == GG_OP_RAGGED_K && !kSparseK && kCluster == 1 && kShape == Sm90Tile::k128x256;
    if (kEpiloguesInTurn && consumer == 1) hand_turn(0);  // consumer 0 stores first
    // The accumulators of every tile, whichever layout: declared here, not
    // in run_tile, where ptxas gave the 128 x 256 instances a 592-byte stack
    // and spilled; a split tile uses the first half.
    float tile_acc[Cfg::kConsumerN / 2];
    // Block-scaled fp8: each k-step's products before their promotion.
    float tile_partial[Types::kBlockScaled ? Cfg::kConsumerN / 2 : 1];
    // One tile's mainloop and epilogue. `split` (a std::bool_constant): the
    // consumers share the tile's first 64 rows, each taking half its
    // columns, as in a 64-row tile; else each takes 64 rows of all BN.
    // Inlined at both calls, so no wgmma crosses a function boundary.
    const auto run_tile = [&](const Tile& t, auto split) __attribute__((always_inline)) {
      constexpr bool kSplit = decltype(split)::value;
      constexpr int kConsumerN = kSplit ? kBlockN / 2 : kBlockN;  // columns per consumer
      float (&acc)[kConsumerN / 2] = *reinterpret_cast<float(*)[kConsumerN / 2]>(tile_acc);
      // The consumer's first row of the tile and first output column.
      const int first_row = kSplit ? 0 : consumer * 64;
      const int first_col = t.b_mn + (kSplit ? consumer * kConsumerN : 0);
      // Block-scaled fp8: the wgmmas of one block into `partial`, promoted
      // after them: a k-step's 32-byte slices from `first`, `slices` of them
      // (a whole step of 1 x 128 blocks, one slice of an MX block).
      [[maybe_unused]] const auto block_wgmmas =
          [&](float (&partial)[kConsumerN / 2], uint64_t desc_a, uint64_t desc_b, int first,
              int slices) __attribute__((always_inline)) {
                fence_accumulators(partial);
                wgmma_fence();
#pragma unroll
                for (int k16 = first; k16 < first + slices; ++k16) {
                  wgmma<kConsumerN, T, 0, 0>(partial, advance_k16<true>(desc_a, k16),
                                             advance_k16<true>(desc_b, k16), k16 > first, 1);
                }
                wgmma_commit();
              };
      int previous_stage = -1;
      // Decoded operands: the block-scale codes of each step's chunks, each
      // thread's, loaded a step ahead (decode_stage.cuh).
      [[maybe_unused]] const int decoding_thread = static_cast<int>(threadIdx.x) - 128;
      [[maybe_unused]] StepDecoder<kBlockM, kConsumerThreads> a_decoder;
      [[maybe_unused]] StepDecoder<kBlockN, kConsumerThreads> b_decoder;
      // fp8 token blocks: the tile's row and column scales, a step ahead.
      [[maybe_unused]] TokenScaleFeed<kBlockM, kBlockN> token_scales;
      if constexpr (kTokenBlocks) {
        token_scales.begin_tile(p, t, table.tile_prefix[t.group], decoding_thread);
      }
      // Along tokens, depths count from the group's first token, each
      // decoded operand's codes `shift` elements into its boxes.
      [[maybe_unused]] const int depth_end = kTokenSteps ? table.rows[t.group] : p.k_dim;
      [[maybe_unused]] int a_shift = 0;
      [[maybe_unused]] int b_shift = 0;
      if constexpr (kDecodedTokens) {
        a_shift = t.k0 - int(token_box_origin(p.lhs_quant.dtype, t.k0));
        b_shift = t.k0 - int(token_box_origin(p.rhs_quant.dtype, t.k0));
      }
      [[maybe_unused]] const auto load_step_scales = [&](int depth) {
        if constexpr (kDecodeA) a_decoder.load_scales(p.lhs_quant, depth, depth_end, decoding_thread);
        b_decoder.load_scales(p.rhs_quant, depth, depth_end, decoding_thread);
      };
      if constexpr (kDecodeB) {
        if (t.k_steps > 0) {
          if constexpr (kDecodedTokens) {
            // Both operands' scale rows from the group's first block column.
            const int first_block = table.tile_prefix[t.group];
            a_decoder.begin_tile(p.lhs_quant, portable::group_scales(p.lhs_quant, 0) + first_block,
                                 t.a_mn, p.out_rows, decoding_thread);
            b_decoder.begin_tile(p.rhs_quant, portable::group_scales(p.rhs_quant, 0) + first_block,
                                 t.b_mn, p.out.cols, decoding_thread);
            load_step_scales(0);
          } else {
            if constexpr (kDecodeA) {
              // Only the group's rows: the others' products are never
              // stored, so they are zeros, undecoded (most of a decode tile's).
              a_decoder.begin_tile(p.lhs_quant, portable::group_scales(p.lhs_quant, 0), t.a_mn,
                                   int64_t{t.a_mn} + t.rows, decoding_thread);
            }
            b_decoder.begin_tile(p.rhs_quant, portable::group_scales(p.rhs_quant, t.group),
                                 t.b_mn, p.out.cols, decoding_thread);
            load_step_scales(t.k0);
          }
        }
      }
      if constexpr (kTokenBlocks) {
        // Windows of 128 tokens on 16-token boundaries; a block starts `s`
        // tokens into a window (the header says how it is split). Window w
        // runs the split-off tile's wgmma into block w - 1's sums (s > 0),
        // promotes them times block w - 1's scales (the slot of window
        // w - 1's stage, which only the consumers write, a ring of stages
        // later), then its own four wgmmas into block w's sums. Software
        // pipelined: those four run while the consumers prepare window
        // w + 1 (prepare_window), so the tensor cores do not wait on it.
        static_assert(!kSplit && kConsumerN == kBlockN, "each consumer 64 rows of the tile");
        float (&partial)[kConsumerN / 2] =
            *reinterpret_cast<float(*)[kConsumerN / 2]>(tile_partial);
        static_assert(kBlockK == 128, "windows of 128 fp8 tokens");
        const Fp8TokenWindows windows{t.k_first, depth_end};  // t.k_steps of them
        uint8_t* split_tile = smem + Cfg::kSplitOffset + consumer * 64 * kStepBytes;
        // Window w into stage `into`: the tokens outside the group zeroed in
        // both operands; this consumer's lhs rows split (window w > 0 of a
        // group off 16 tokens); the window's block scales into the slot (the
        // scales of block w); then the async-proxy fence for the wgmmas.
        const auto prepare_window = [&](int w, int into, uint32_t into_phase) {
          wait_barrier(&full[into], into_phase);
          uint8_t* base = smem + size_t(into) * Cfg::kStageBytes;
          const int k_begin = windows.k_begin(w);
          const int k_end = windows.k_end(w);
          if (k_begin > 0 || k_end < kBlockK) {
            zero_outside<true, kBlockM, uint8_t>(base, 0, kBlockK, k_begin, k_end, decoding_thread);
            zero_outside<true, kBlockN, uint8_t>(base + Cfg::kBTileOffset, 0, kBlockK, k_begin,
                                                 k_end, decoding_thread);
            if (windows.splits(w)) sync_consumers();  // the split reads chunks just zeroed
          }
          if (windows.splits(w) && thread < 64) {
            const int row = first_row + thread;
            uint4* chunk = reinterpret_cast<uint4*>(base + swizzled_chunk_offset(row, 0));
            const uint4 codes = *chunk;
            uint32_t before[4];
            uint32_t from[4];
            split_window_chunk({codes.x, codes.y, codes.z, codes.w}, windows.s, before, from);
            *chunk = make_uint4(from[0], from[1], from[2], from[3]);
            *reinterpret_cast<uint4*>(split_tile + swizzled_chunk_offset(thread, 0)) =
                make_uint4(before[0], before[1], before[2], before[3]);
            *reinterpret_cast<uint4*>(split_tile + swizzled_chunk_offset(thread, 1)) =
                make_uint4(0, 0, 0, 0);
          }
          token_scales.store(reinterpret_cast<float*>(base + Cfg::kScaleOffset), decoding_thread);
          cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
          token_scales.load_after(w, windows.blocks());
        };
        const auto block_scales = [&](int of_stage) {
          return token_step_scales<kBlockN>(
              reinterpret_cast<const float*>(smem + size_t(of_stage) * Cfg::kStageBytes +
                                             Cfg::kScaleOffset),
              first_row, thread);
        };
#pragma unroll
        for (int i = 0; i < kConsumerN / 2; ++i) acc[i] = 0.0f;
        if (t.k_steps > 0) {
          prepare_window(0, stage, phase);
          sync_consumers();
          __syncwarp();  // wgmma's .aligned forms need the warp converged again
        }
        int last_stage = stage;
        for (int w = 0; w < t.k_steps; ++w) {
          uint8_t* base = smem + size_t(stage) * Cfg::kStageBytes;
          const uint64_t desc_a = operand_desc<true>(base + first_row * 128);
          const uint64_t desc_b = operand_desc<true>(base + Cfg::kBTileOffset);
          if (w > 0) {
            if (windows.splits(w)) {  // block w - 1's last s tokens
              fence_accumulators(partial);
              wgmma_fence();
              wgmma<kConsumerN, T, 0, 0>(partial, operand_desc<true>(split_tile), desc_b, 1, 1);
              wgmma_commit();
              wgmma_wait<0>();
              fence_accumulators(partial);
            }
            promote(acc, partial, block_scales(last_stage));
          }
          block_wgmmas(partial, desc_a, desc_b, 0, kBlockK / kSliceK);
          const int next_stage = stage + 1 == Cfg::kStages ? 0 : stage + 1;
          const uint32_t next_phase = next_stage == 0 ? phase ^ 1 : phase;
          if (w + 1 < t.k_steps) prepare_window(w + 1, next_stage, next_phase);
          wgmma_wait<0>();
          fence_accumulators(partial);
          release(stage);
          last_stage = stage;
          stage = next_stage;
          phase = next_phase;
          if (w + 1 < t.k_steps) {
            sync_consumers();
            __syncwarp();
          }
        }
        if (windows.last_is_block()) promote(acc, partial, block_scales(last_stage));
      } else {
        // Block-scaled fp8: the steps' scales, each loaded a step ahead, and
        // the promoted accumulators, zeroed.
        [[maybe_unused]] StepScaleFeed<kConsumerN> step_scales;
        if constexpr (Types::kBlockScaled) {
          if constexpr (!kMxBlocks) step_scales.begin_tile(p, t, first_row, first_col, thread);
#pragma unroll
          for (int i = 0; i < kConsumerN / 2; ++i) acc[i] = 0.0f;
        }
        for (int ks = 0; ks < t.k_steps; ++ks) {
          wait_barrier(&full[stage], phase);
          uint8_t* a_stage = smem + size_t(stage) * Cfg::kStageBytes;
          uint8_t* b_stage = a_stage + Cfg::kBTileOffset;
          if constexpr (kDecodeB) {
            // The step's codes into the stage's bf16 tiles (decode_stage.cuh),
            // by both consumers: after the barrier, each one's wgmmas may read
            // every chunk of the tiles. The next step's scales load meanwhile.
            const int depth = (kDecodedTokens ? 0 : t.k0) + ks * kBlockK;
            if constexpr (kDecodeA) {
              a_decoder.template decode<kDecodedTokens>(p.lhs_quant, a_stage + Cfg::kARawOffset,
                                                        a_stage, depth, depth_end, a_shift,
                                                        decoding_thread);
            }
            b_decoder.template decode<kDecodedTokens>(p.rhs_quant, a_stage + Cfg::kBRawOffset,
                                                      b_stage, depth, depth_end, b_shift,
                                                      decoding_thread);
            if (ks + 1 < t.k_steps) load_step_scales(depth + kBlockK);
            cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
            sync_consumers();
            __syncwarp();  // wgmma's .aligned forms need the warp converged again
          }
          // The group's elements of this step, [k_begin, k_end), and the
          // 32-byte slices the step reads, [k_lo, k_hi): with kSparseK only
          // those holding group tokens (a group of a few tokens costs one wgmma
          // per step, not four). Their elements outside the group must be zero:
          // past a token map's end TMA fills them, and the decode of decoded
          // operands writes them; otherwise
          // (K-major operands) the consumers zero them here.
          const int k_begin = ks == 0 ? t.k_first : 0;
          const int k_end = ks == t.k_steps - 1 ? t.k_last : kBlockK;
          const int k_lo = kSparseK ? k_begin / kSliceK * kSliceK : 0;
          const int k_hi = kSparseK ? (k_end + kSliceK - 1) / kSliceK * kSliceK : kBlockK;
          if (kOp == GG_OP_RAGGED_K && !kTokenMaps && !kDecodeB &&
              (k_begin > k_lo || k_end < k_hi)) {
            const int zeroing_thread = static_cast<int>(threadIdx.x) - 128;
            zero_outside<kAKMajor, kBlockM, Element>(a_stage, k_lo, k_hi, k_begin, k_end,
                                                     zeroing_thread);
            zero_outside<kBKMajor, kBlockN, Element>(b_stage, k_lo, k_hi, k_begin, k_end,
                                                     zeroing_thread);
            cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
            sync_consumers();
            __syncwarp();  // wgmma's .aligned forms need the warp converged again
          }
          // This consumer's 64 rows of A and columns of B: rows 64 * consumer
          // of all columns, or (split) the first 64 rows and columns
          // kConsumerN * consumer (K-major rows of 128 bytes; MN-major boxes of 64).
          const int a_part = kSplit ? 0 : consumer;
          const int b_part = kSplit ? consumer : 0;
          const uint64_t desc_a =
              operand_desc<kAKMajor>(a_stage + a_part * (kAKMajor ? 64 * 128 : kBoxBytes));
          const uint64_t desc_b = operand_desc<kBKMajor>(
              b_stage + b_part * (kBKMajor ? kConsumerN * 128 : kConsumerN / 64 * kBoxBytes));
          if constexpr (kMxBlocks) {
            // Four 32-deep blocks of both operands' MX scales: each block's
            // wgmma goes to `partial`, promoted times the scales of its rows
            // and columns from the stage's slot (MxScaleWriter) once done;
            // the other consumer's wgmmas keep the tensor cores busy
            // meanwhile. The stage, slot included, is released after the last.
            // Rows past the tile's are never stored: a consumer with none of
            // them (a group of at most 64 rows) skips the step's wgmmas and
            // promotions, which set these kernels' pace. (Skipping the
            // promotions of each warp without rows spilled a register.)
            float (&partial)[kConsumerN / 2] =
                *reinterpret_cast<float(*)[kConsumerN / 2]>(tile_partial);
            const float* slot = reinterpret_cast<const float*>(a_stage + Cfg::kScaleOffset);
            if (first_row < t.rows) {
              // Not unrolled: each block's scales load after its wgmma, not
              // all of the step's at once beside the two sets of accumulators.
#pragma unroll 1
              for (int j = 0; j < kSm90MxBlocksPerStep; ++j) {
                block_wgmmas(partial, desc_a, desc_b, j, 1);
                wgmma_wait<0>();
                fence_accumulators(partial);
                promote(acc, partial,
                        mx_block_scales<kBlockM, kBlockN>(slot, j, first_row,
                                                          first_col - t.b_mn, thread));
              }
            }
            release(stage);
          } else if constexpr (Types::kBlockScaled) {
            // The step is one 128-deep block of both operands' scales: its
            // products go to `partial`, and are promoted into the accumulators
            // times the block's scales once the step's wgmmas are done (the
            // next step's scales' loads in flight meanwhile); the other
            // consumer's wgmmas keep the tensor cores busy in the wait.
            float (&partial)[kConsumerN / 2] =
                *reinterpret_cast<float(*)[kConsumerN / 2]>(tile_partial);
            const StepScales scales = step_scales.next;
            block_wgmmas(partial, desc_a, desc_b, 0, kBlockK / kSliceK);
            if (ks + 1 < t.k_steps) step_scales.load(ks + 1);
            wgmma_wait<0>();
            fence_accumulators(partial);
            release(stage);
            promote(acc, partial, scales);
          } else {
            fence_accumulators(acc);
            wgmma_fence();
#pragma unroll
            for (int k16 = 0; k16 < kBlockK / kSliceK; ++k16) {
              wgmma<kConsumerN, T, kAKMajor ? 0 : 1, kBKMajor ? 0 : 1>(
                  acc, advance_k16<kAKMajor>(desc_a, k16), advance_k16<kBKMajor>(desc_b, k16),
                  ks > 0 || k16 * kSliceK > k_lo, k16 * kSliceK >= k_lo && k16 * kSliceK < k_hi);
            }
            wgmma_commit();
            fence_accumulators(acc);
            // The wgmma group of the step before has now finished reading its stage.
            wgmma_wait<1>();
            if (previous_stage >= 0) release(previous_stage);
            previous_stage = stage;
          }
          if (++stage == Cfg::kStages) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      if (previous_stage >= 0) release(previous_stage);
      if (t.k_steps == 0) {
#pragma unroll
        for (int i = 0; i < kConsumerN / 2; ++i) acc[i] = 0.0f;
      }
      if (p.out.maps != nullptr && thread == 0 && t.group != mapped_group) {
        acquire_written_map(p.out.maps + t.group);  // thread 0 issues the block's TMA stores
        mapped_group = t.group;
      }
      if constexpr (Types::kScaled) {
        scale_accumulators<kOp, kConsumerN>(p, t.group, t.a_mn + first_row,
                                            min(64, t.rows - first_row), first_col, thread, acc);
      }
      if (kEpiloguesInTurn) wait_for_turn(consumer);
      store_block<kOp == GG_OP_RAGGED_K, kConsumerN, kStagingChunks<kSparseK>>(
          p.out, t.group, t.a_mn + first_row, min(64, t.rows - first_row), first_col, thread,
          warpgroup_barrier(consumer), smem + Cfg::kStagingOffset + consumer * Cfg::kStagingBytes,
          acc);
      if (kEpiloguesInTurn) hand_turn(1 - consumer);
    };
    for (int unit = first_unit; unit < tile_count; unit += unit_stride) {
      const Tile t = tiles.at(unit);
      __syncwarp();  // reconverge after the previous tile's masked epilogue
      if constexpr (kSplitShortGroups) {
        // The same for the whole CTA; the vote lets the compiler see it is
        // warp-uniform, so the wgmmas stay in convergent code (without it,
        // ptxas put a warp sync into every k-step).
        if (__all_sync(0xffffffffu, table.rows[t.group] <= 64)) {
          run_tile(t, std::true_type{});
        } else {
          run_tile(t, std::false_type{});
        }
      } else {
        run_tile(t, std::bool_constant<Cfg::kSplitN>{});
      }
    }
    if (kEpiloguesInTurn && consumer == 0) wait_for_turn(0);  // consumer 1's last hand-over
    if (p.zero_rows_end > 0) {
      const int last = p.groups - 1;
      zero_rows(p.out.data, p.out.dtype, p.out.ld, p.out.cols,
                table.start[last] + table.rows[last], p.zero_rows_end,
                int64_t{blockIdx.x} * kConsumerThreads + (threadIdx.x - 128),
                int64_t{gridDim.x} * kConsumerThreads);
    }
    drain_stores(thread);
  }
  if constexpr (kCluster > 1) {  // the peer's last arrivals on this CTA's barriers have landed
    cuda::ptx::barrier_cluster_arrive();
    cuda::ptx::barrier_cluster_wait();
  }
}


// One CTA per SM; with clusters of two, as many clusters as fit at once
// (a cluster's CTAs share a GPC, and GPCs need not have an even number of
// free SMs).
template <gg_op kOp, bool kSparseK, Sm90Tile kShape, int kCluster, typename T, bool kAKMajor,
          bool kBKMajor>
gg_status launch(Params& p, int groups, int sm_count, cudaStream_t stream) {
  const size_t smem = Config<kShape, kStageLayout<kOp, T>>::smem_bytes(groups);
  auto kernel = grouped_gemm_kernel<kOp, kSparseK, kShape, kCluster, T, kAKMajor, kBKMajor>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)) !=
      cudaSuccess) {
    return GG_STATUS_CUDA_ERROR;
  }
  cudaLaunchAttribute attrs[2]{};
  unsigned count = 0;
  if (p.token_maps != nullptr || p.b_maps != nullptr || p.out.maps != nullptr) {
    // After a map writer, the kernel may start while it runs (wait_for_map_writer).
    attrs[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if constexpr (kCluster > 1) {
    attrs[count].id = cudaLaunchAttributeClusterDimension;
    attrs[count].val.clusterDim.x = kCluster;
    attrs[count].val.clusterDim.y = 1;
    attrs[count++].val.clusterDim.z = 1;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(sm_count / kCluster * kCluster);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = count;
  if constexpr (kCluster > 1) {
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess || clusters < 1) {
      return GG_STATUS_CUDA_ERROR;
    }
    config.gridDim = dim3(clusters * kCluster);
  }
  return cudaLaunchKernelEx(&config, kernel, p) == cudaSuccess ? GG_STATUS_SUCCESS
                                                               : GG_STATUS_CUDA_ERROR;
}


// Which instance a launch runs: the plan's tile and mode, the operand majors.
struct Instance {
  gg_op op;
  Sm90Tile tile;
  bool sparse_k;
  int cluster;
  bool a_kmajor;
  bool b_kmajor;
};

// The instance of `which` for element types T and the given majors.
// Ragged-M lhs is always K-major ([M, K]); ragged-K outputs take 128-row
// tiles only, the sparse-K mode both widths, cluster pairs the wide one.
// Block-scaled fp8 and decoded operands are ragged-M on 128 x 128 and
// 64 x 256 tiles only (fp8 MX blocks on 128 x 128 alone), but for blocks
// along the tokens (fp8 1 x 128, or decoded): ragged-K on 128 x 128 tiles.
template <typename T, bool kAKMajor, bool kBKMajor>
gg_status launch_instance(Params& p, const Instance& which, int groups, int sm_count,
                          cudaStream_t stream) {
  // Tiles of 128 columns a consumer: block-scaled fp8 (a second set of
  // accumulators) and decoded operands (their raw codes' shared memory).
  constexpr bool kNarrowOnly =
      OperandTypes<T>::kBlockScaled || OperandTypes<T>::kDecode != Sm90Decode::kNone;
  if constexpr (OperandTypes<T>::kMxBlocks) {  // ragged-M, 128 x 128 only
    if (which.op != GG_OP_RAGGED_M || which.tile != Sm90Tile::k128x128 || !kAKMajor) {
      return GG_STATUS_INTERNAL_ERROR;
    }
    return launch<GG_OP_RAGGED_M, false, Sm90Tile::k128x128, 1, T, true, kBKMajor>(
        p, groups, sm_count, stream);
  } else if constexpr (OperandTypes<T>::kDecode == Sm90Decode::kTokens) {  // ragged-K only
    if (which.op != GG_OP_RAGGED_K || which.tile != Sm90Tile::k128x128 || which.sparse_k ||
        which.cluster != 1) {
      return GG_STATUS_INTERNAL_ERROR;
    }
    return launch<GG_OP_RAGGED_K, false, Sm90Tile::k128x128, 1, T, kAKMajor, kBKMajor>(
        p, groups, sm_count, stream);
  } else if (which.op == GG_OP_RAGGED_M) {
    if constexpr (kAKMajor) {
      switch (which.tile) {
        case Sm90Tile::k64x256:
          return launch<GG_OP_RAGGED_M, false, Sm90Tile::k64x256, 1, T, true, kBKMajor>(
              p, groups, sm_count, stream);
        case Sm90Tile::k128x256:
          if constexpr (kNarrowOnly) {
            return GG_STATUS_INTERNAL_ERROR;
          } else {
            return launch<GG_OP_RAGGED_M, false, Sm90Tile::k128x256, 1, T, true, kBKMajor>(
                p, groups, sm_count, stream);
          }
        case Sm90Tile::k128x128:
          return launch<GG_OP_RAGGED_M, false, Sm90Tile::k128x128, 1, T, true, kBKMajor>(
              p, groups, sm_count, stream);
      }
    }
    return GG_STATUS_INTERNAL_ERROR;
  }
  if constexpr (kNarrowOnly) {  // ragged-K: fp8 1 x 128 blocks along the tokens
    if constexpr (OperandTypes<T>::kBlockScaled && !OperandTypes<T>::kMxBlocks && kAKMajor &&
                  kBKMajor) {
      if (which.tile == Sm90Tile::k128x128 && !which.sparse_k && which.cluster == 1) {
        return launch<GG_OP_RAGGED_K, false, Sm90Tile::k128x128, 1, T, true, true>(
            p, groups, sm_count, stream);
      }
    }
    return GG_STATUS_INTERNAL_ERROR;
  } else {
    constexpr Sm90Tile kWide = Sm90Tile::k128x256;
    constexpr Sm90Tile kNarrow = Sm90Tile::k128x128;
    const bool wide = which.tile == kWide;
    if (which.sparse_k) {
      return wide ? launch<GG_OP_RAGGED_K, true, kWide, 1, T, kAKMajor, kBKMajor>(p, groups,
                                                                                  sm_count, stream)
                  : launch<GG_OP_RAGGED_K, true, kNarrow, 1, T, kAKMajor, kBKMajor>(
                        p, groups, sm_count, stream);
    }
    if (which.cluster == 2) {
      return launch<GG_OP_RAGGED_K, false, kWide, 2, T, kAKMajor, kBKMajor>(p, groups, sm_count,
                                                                            stream);
    }
    return wide ? launch<GG_OP_RAGGED_K, false, kWide, 1, T, kAKMajor, kBKMajor>(p, groups,
                                                                                 sm_count, stream)
                : launch<GG_OP_RAGGED_K, false, kNarrow, 1, T, kAKMajor, kBKMajor>(
                      p, groups, sm_count, stream);
  }
}

// The fp8 instances of one block scaling: an e4m3 or e5m2 lhs times e4m3
// (sm90_gemm_fp8.cu, sm90_gemm_fp8_mx.cu), both K-major.
template <Fp8Blocks kBlocks>
gg_status launch_fp8_pair(Params& p, const Instance& which, gg_dtype lhs, int groups,
                          int sm_count, cudaStream_t stream) {
  using E4m3 = __nv_fp8_e4m3;
  using E5m2 = __nv_fp8_e5m2;
  return lhs == GG_DTYPE_E4M3
             ? launch_instance<Fp8Operands<E4m3, E4m3, kBlocks>, true, true>(p, which, groups,
                                                                              sm_count, stream)
             : launch_instance<Fp8Operands<E5m2, E4m3, kBlocks>, true, true>(p, which, groups,
                                                                              sm_count, stream);
}

// The instances of each element family, compiled in a file of their own
// (sm90_gemm_16bit.cu, sm90_gemm_fp8.cu, sm90_gemm_fp8_mx.cu,
// sm90_gemm_decoded.cu).
gg_status launch_16bit(Params& p, const Instance& which, bool bf16, int groups, int sm_count,
                       cudaStream_t stream);
gg_status launch_fp8(Params& p, const Instance& which, gg_dtype lhs, gg_dtype rhs,
                     Fp8Blocks blocks, int groups, int sm_count, cudaStream_t stream);
gg_status launch_fp8_mx(Params& p, const Instance& which, gg_dtype lhs, int groups, int sm_count,
                        cudaStream_t stream);
gg_status launch_decoded(Params& p, const Instance& which, Sm90Decode decode, int groups,
                         int sm_count, cudaStream_t stream);

}  // namespace gg::sm90

// Kernel and tile choice for one grouped GEMM, from static facts only.
//
// The plan sees what the host knows before a launch: the op, the output and
// contraction extents, the group count, the input type and the device (SM
// count, compute capability). It never sees the device-side group sizes, so
// one plan is right for every replay of a captured graph, whatever the sizes
// have become. For the portable path the one question is the CTA tile height:
// 128 rows when groups are tall enough to fill it and the grid fills the GPU,
// 64 rows when the average group (M / G in ragged-M) would leave most of a
// 128-row tile empty or 128-row tiles are too few to give every SM one.
// For the Hopper path the question is the tile width (see plan_sm90_gemm).
// Pure functions, tested on the CPU (tests/plan/).
#pragma once

#include <stdint.h>

#include <string>

#include "groupgemm/groupgemm.h"

namespace gg {

// The portable kernel's CTA tiles; each is one instantiation of the kernel.
enum class PortableTile { k128x128, k64x128 };

struct TileConfig {
  int block_m;          // output rows per CTA tile
  int block_n;          // output columns per CTA tile
  int block_k;          // contraction depth per pipeline stage
  int warps_m;          // warp grid: each warp owns (block_m / warps_m) rows
  int warps_n;          //   by (block_n / warps_n) columns of the tile
  int stages;           // cp.async pipeline depth
  int min_ctas_per_sm;  // residency the register budget is sized for
};

// 128x128: 8 warps of 64x32, 4 stages of 20 KB (two CTAs per SM on A100 and
// H100). 64x128: 4 warps of 32x64, 3 stages of 15 KB (three CTAs per SM on
// A100, four on H100). Each shared-memory row is padded by 16 bytes.
constexpr TileConfig tile_config(PortableTile tile) {
  return tile == PortableTile::k128x128 ? TileConfig{128, 128, 32, 2, 4, 4, 2}
                                        : TileConfig{64, 128, 32, 2, 2, 3, 3};
}

// Which operands of a Hopper instance are quantized codes that the kernel
// decodes into bf16 tiles (mxfp8, mxfp4, nvfp4, quantized weights with bf16
// activations): none, the rhs (weights), or both; kTokens: both, of a
// ragged-K product (the weight gradient), whose k-steps run along a group's
// tokens. A stage then also holds each decoded operand's raw codes, 64
// bytes a row, 80 along tokens (sm90/decoded_steps.h). kFp8Tokens: fp8
// codes of both operands of a ragged-K product with 1 x 128 blocks along
// the tokens (the fp8 weight gradient), not decoded: fp8 tiles of
// 128-token windows on 16-token boundaries, each holding the last tokens of
// one block and the first of the next, which the consumers split apart
// (the lhs's first 16 tokens of a window into a tile of their own). kFp8Mx:
// fp8 codes of both operands of a ragged-M product with MX32 blocks along
// K (mxfp8), not decoded but read by fp8 wgmmas, each 32-deep one promoted
// times its blocks' scales: a stage also holds the step's scales as fp32
// (4 blocks of each row and column of the tile), which the producer
// warpgroup's other warps write.
enum class Sm90Decode { kNone, kRhs, kBoth, kTokens, kFp8Tokens, kFp8Mx };

// Static facts of one grouped GEMM, in output terms: the result of group g
// is an (m x n) block reached by contracting over k.
//   ragged-M: m = M (row capacity, shared by all groups), n = N, k = K.
//   ragged-K: m = P, n = Q (each group's own output), k = M (token capacity).
struct GemmShape {
  gg_op op;
  int64_t m;
  int64_t n;
  int64_t k;
  int32_t groups;
  gg_dtype input;
  int sm_count;
  int compute_capability;  // major * 10 + minor
  bool decoded = false;    // an operand is quantized (decoded into bf16 tiles)
  // fp8 1 x 128 / 128 x 128 blocks: each k-step promoted into a second set
  // of accumulators (sm90), which leaves room for 128 columns a consumer.
  bool block_scaled = false;
  // The sm90 path's operands decoded into bf16 tiles (its host sets it).
  Sm90Decode sm90_decode = Sm90Decode::kNone;
};

struct Plan {
  GemmShape shape;
  gg_path path;
  PortableTile tile;
  TileConfig config;
  std::string reason;  // why this tile, in a few words

  // One line for GROUPGEMM_LOG=1.
  std::string describe() const;
};

// Problems with quantized operands take one tile, whatever their shape: the
// decode stage costs the same per operand element in either tile, and one
// instantiation per orientation keeps the build short.
constexpr PortableTile kQuantizedTile = PortableTile::k64x128;
// Their kernels keep the decode's codes, scales and addresses in registers
// beside the accumulators: sized for two CTAs per SM, not three, they do
// not spill.
constexpr int kQuantizedMinCtasPerSm = 2;

// Ragged-M groups averaging at most this many rows take 64-row tiles.
constexpr int64_t kShortGroupRows = 64;

Plan plan_gemm(const GemmShape& shape);

// The skinny kernel (kernels/skinny/): ragged-M products of quantized
// weights whose groups average at most kSkinnyGroupRows rows, on either GPU
// path, in place of the path's tiles: it decodes each weight once for up to
// 16 of a group's tokens, where a 64- or 128-row tile decodes it for rows
// that are not there. Its CTAs hold a table of at most kSkinnyMaxGroups
// groups. Whether the operands' formats and layouts suit it is the
// kernel's own question (skinny_gemm.h). The 32 rows are not measured yet:
// the kernel has not run on a GPU, and its first run there sets them
// against the paths' own kernels.
constexpr int64_t kSkinnyGroupRows = 32;
constexpr int64_t kSkinnyMaxGroups = 4096;

bool plan_skinny(const GemmShape& shape);

// The problem of a validated descriptor in plan terms, on a device with
// `sm_count` SMs of compute capability `compute_capability`.
GemmShape gemm_shape(const gg_gemm_desc& desc, int sm_count, int compute_capability);

// The Hopper kernel's tiles (kernels/sm90/): 128 rows (two consumer
// warpgroups of 64), k-steps of 128 bytes (64 16-bit or 128 fp8 elements;
// block_k counts 16-bit ones), 128 or 256 columns; each one
// instantiation. Shared memory holds the ring of stages, a staging buffer
// for the TMA-store epilogue (the tile in 16-bit elements; fp32 outputs go
// out in two halves) and the group table, within the 227 KB a CTA may use.
enum class Sm90Tile {
  k128x128,
  k128x256,
  k64x256,  // ragged-M with short groups: the consumers split the columns
};

// MX32 blocks of a 128-byte fp8 k-step.
constexpr int kSm90MxBlocksPerStep = 4;

struct Sm90TileConfig {
  int block_m;
  int block_n;
  int block_k;
  int stages;
  int raw_row_bytes_a = 0;  // a decoded operand's codes per row of a stage
  int raw_row_bytes_b = 0;
  int scale_bytes = 0;  // fp8 token blocks: a stage's 256 scales (1 KB); MX: its fp32 scales
  // fp8 token blocks: beside the stages, a tile per consumer for the lhs
  // tokens of a window that end the block before (the kernel's kSplitOffset).
  int split_bytes = 0;
};

// Decoding instances take the 128 x 128 and 64 x 256 tiles (the 128 x 256
// one's stages and raw codes leave no room for a third stage) with three
// stages, four for 128 x 128 tiles of quantized weights alone: with the
// group table of 900 or more groups, what fits. The decode is slower than
// TMA, so a stage is released late, and a deeper ring keeps its loads
// further ahead of the consumers. Along tokens (kTokens, 128 x 128 only) a
// row's codes take 16 bytes more: a group's first token lies up to 15
// bytes into its first box. fp8 along tokens (kFp8Tokens, 128 x 128 only):
// a stage of 33 KB (the fp8 tiles and a window's 256 scales) leaves room
// for four beside the split-off tiles (split_bytes: 64 rows of 128 bytes
// for each consumer). fp8 with MX blocks (kFp8Mx, 128 x 128
// only): the fp8 tiles and the step's 4 x (128 + 128) fp32 scales, four
// stages of 36 KB beside the table of 2048 groups.
constexpr Sm90TileConfig sm90_tile_config(Sm90Tile tile, Sm90Decode decode = Sm90Decode::kNone) {
  if (decode == Sm90Decode::kFp8Tokens) {
    return Sm90TileConfig{128, 128, 64, 4, 0, 0, 1024, 2 * 64 * 128};
  }
  if (decode == Sm90Decode::kFp8Mx) {
    return Sm90TileConfig{128, 128, 64, 4, 0, 0, kSm90MxBlocksPerStep * (128 + 128) * 4};
  }
  if (decode != Sm90Decode::kNone) {
    const int block_m = tile == Sm90Tile::k64x256 ? 64 : 128;
    const int block_n = tile == Sm90Tile::k128x128 ? 128 : 256;
    const bool rhs_only = decode == Sm90Decode::kRhs;
    const int stages = rhs_only && tile == Sm90Tile::k128x128 ? 4 : 3;
    const int raw = decode == Sm90Decode::kTokens ? 80 : 64;
    return Sm90TileConfig{block_m, block_n, 64, stages, rhs_only ? 0 : raw, raw};
  }
  return tile == Sm90Tile::k128x256  ? Sm90TileConfig{128, 256, 64, 3}
         : tile == Sm90Tile::k64x256 ? Sm90TileConfig{64, 256, 64, 4}
                                     : Sm90TileConfig{128, 128, 64, 5};
}

constexpr int64_t sm90_stage_bytes(const Sm90TileConfig& c) {
  const int64_t tiles = int64_t{c.block_m + c.block_n} * c.block_k * 2;
  return tiles + int64_t{c.block_m} * c.raw_row_bytes_a +
         int64_t{c.block_n} * c.raw_row_bytes_b + c.scale_bytes;
}
constexpr int64_t sm90_staging_bytes(const Sm90TileConfig& c) {
  return int64_t{c.block_m} * c.block_n * 2;
}

// Dynamic shared memory of one CTA: 1 KB of alignment slack, the stages, the
// split-off tiles of fp8 token blocks, the staging buffer, a full and an
// empty mbarrier per stage, and the group table (three int32 per group,
// plus one).
constexpr int64_t sm90_smem_bytes(const Sm90TileConfig& c, int64_t groups) {
  return 1024 + c.stages * sm90_stage_bytes(c) + c.split_bytes + sm90_staging_bytes(c) +
         16 * c.stages +
         (3 * groups + 1) * 4;
}

// Dynamic shared memory a CTA may take on sm_90 (227 KB), less 2 KB for the
// kernel's static shared memory (the group-table scan's scratch, 1.2 KB).
constexpr int64_t kSm90SmemLimit = 227 * 1024 - 2048;

// Most groups the Hopper kernel takes: the table of the 128-wide tile fits.
constexpr int64_t kSm90MaxGroups = 2048;

// Ragged-M groups averaging at most this many rows (decode) take 64-row
// tiles: nearly every group fits one tile, and the tile's fourth stage keeps
// more weight loads in flight. Longer groups take 128-row tiles, which read
// half the operand bytes per FLOP. 128-row tiles against 64-row ones on an
// H100: 0.97-1.00x at 1-8 rows a group, 0.97-1.04x at 16 and 32 (Llama-4
// Maverick at 2048 tokens, Mixtral-8x7B at 128), 1.04-1.25x at 64-128 with
// skewed routing (DeepSeek-V3, Qwen3, gpt-oss-120b at 2048 tokens;
// 0.98-1.06x uniform) and 1.17-1.34x at 128 (Llama-4 Maverick at 16384
// tokens, skewed).
constexpr int64_t kSm90ShortGroupRows = 32;

// Ragged-K groups averaging fewer tokens than this take the sparse-K
// instance: a k-step issues only the wgmma slices that hold group tokens.
// Sparse over full k-steps on an H200: 1.04-1.40x at 16 tokens a group; at
// 64, 1.01-1.09x on uniform lists but 0.93-0.95x on skewed ones, which have
// the same static facts; at 128 and 512, 0.81-0.92x.
constexpr int64_t kSm90SparseKTokens = 128;

// Ragged-K groups averaging at least this many tokens pair their output's
// m-tiles in clusters of two CTAs, each loading half of the shared B tile
// into both (TMA multicast). Long groups gain from halving B's traffic from
// L2 (DeepSeek-V3 16384-token skewed wgrad 1.24-1.32x on an H100); short
// ones lose more to the pair's lockstep (128-token groups: 0.92-0.97x), and
// ragged-M pairs were never faster on prefill (bf16 pairs of m-tiles
// 0.88-1.00x; fp8 1 x 128 x 128 x 128 pairs of n-tiles sharing A, on an
// H100, 0.95-0.98x).
constexpr int64_t kSm90MulticastTokens = 512;

struct Sm90Plan {
  GemmShape shape;
  Sm90Tile tile;
  Sm90TileConfig config;
  bool sparse_k;
  bool multicast;  // clusters of two CTAs share each B tile (TMA multicast)
  std::string reason;

  // One line for GROUPGEMM_LOG=1.
  std::string describe() const;
};

// Outputs wider than 128 columns take a 256-wide tile: one m64n256k16 wgmma
// per k16 step reads each lhs tile once for twice the columns; 64 rows high
// (two m64n128 halves) for ragged-M groups of a few rows, else 128. Up to 128
// columns, or with more groups than its shared memory holds, the 128 x 128
// tile.
Sm90Plan plan_sm90_gemm(const GemmShape& shape);

}  // namespace gg

// The portable path's tile choice (see plan.h). Two rules, in order:
//   1. ragged-M with short groups (M / G <= kShortGroupRows): a group's rows
//      would fill at most half of a 128-row tile, so 64-row tiles halve the
//      wasted tensor-core work of every group's last tile;
//   2. fewer 128-row tiles than SMs: 64-row tiles double the parallelism.
// Otherwise 128-row tiles, which read each operand byte half as often.
// Quantized operands come first: they take kQuantizedTile.
#include "plan/plan.h"

#include <string>

#include "api/names.h"
#include "kernels/portable/operand_decode.h"
#include "kernels/tile_scheduler.h"

namespace gg {
namespace {

// Output tiles of the problem when every group is full (ragged-M: all M rows
// in use; ragged-K: every group has its own m x n output).
int64_t full_tiles(const GemmShape& shape, const TileConfig& config) {
  const int64_t per_group = ceil_div(shape.m, config.block_m) * ceil_div(shape.n, config.block_n);
  return shape.op == GG_OP_RAGGED_M ? per_group : per_group * shape.groups;
}

}  // namespace

Plan plan_gemm(const GemmShape& shape) {
  Plan plan{shape, GG_PATH_PORTABLE, PortableTile::k128x128, {}, {}};
  const int64_t large_tiles = full_tiles(shape, tile_config(PortableTile::k128x128));
  const int64_t rows_per_group = shape.m / shape.groups;
  const std::string fill =
      std::to_string(large_tiles) + " 128-row tiles for " + std::to_string(shape.sm_count) + " SMs";
  if (shape.decoded) {
    plan.tile = kQuantizedTile;
    plan.reason = "quantized operands, decoded into bf16: the one tile built for them";
  } else if (shape.op == GG_OP_RAGGED_M && rows_per_group <= kShortGroupRows) {
    plan.tile = PortableTile::k64x128;
    plan.reason = "groups average " + std::to_string(rows_per_group) + " rows";
  } else if (large_tiles < shape.sm_count) {
    plan.tile = PortableTile::k64x128;
    plan.reason = "only " + fill;
  } else {
    plan.reason = fill;
  }
  plan.config = tile_config(plan.tile);
  return plan;
}

bool plan_skinny(const GemmShape& shape) {
  return shape.op == GG_OP_RAGGED_M && shape.decoded && !shape.block_scaled &&
         shape.groups <= kSkinnyMaxGroups && shape.m / shape.groups <= kSkinnyGroupRows;
}

GemmShape gemm_shape(const gg_gemm_desc& d, int sm_count, int compute_capability) {
  GemmShape shape{d.op, 0, 0, 0, d.num_groups, d.lhs.dtype, sm_count, compute_capability};
  if (d.op == GG_OP_RAGGED_M) {
    shape.m = d.lhs.shape[0];
    shape.k = d.lhs.shape[1];
    shape.n = d.rhs_layout == GG_LAYOUT_N ? d.rhs.shape[2] : d.rhs.shape[1];
  } else {
    const bool lhs_n = d.lhs_layout == GG_LAYOUT_N;
    shape.k = lhs_n ? d.lhs.shape[0] : d.lhs.shape[1];
    shape.m = lhs_n ? d.lhs.shape[1] : d.lhs.shape[0];
    shape.n = d.rhs_layout == GG_LAYOUT_N ? d.rhs.shape[1] : d.rhs.shape[0];
  }
  shape.decoded = portable::is_quantized(d.lhs.dtype) || portable::is_quantized(d.rhs.dtype);
  for (const gg_tensor* t : {&d.lhs, &d.rhs}) {
    shape.block_scaled = shape.block_scaled || t->block_scaling == GG_BLOCK_1X128 ||
                         t->block_scaling == GG_BLOCK_128X128;
  }
  return shape;
}

Sm90Plan plan_sm90_gemm(const GemmShape& shape) {
  const Sm90Decode decode = shape.sm90_decode;
  const Sm90TileConfig wide_tile = sm90_tile_config(Sm90Tile::k128x256);
  std::string reason = "n=" + std::to_string(shape.n) + " <= 128";
  Sm90Tile tile = Sm90Tile::k128x128;
  if (shape.n > 128 && decode == Sm90Decode::kFp8Mx) {
    // Its 64-row tile, whose consumers split the columns, spilled: the
    // promotions' two sets of accumulators and the scale writers leave no
    // register to spare. (A 128-row tile of a group of at most 64 rows
    // skips its second consumer's steps instead.)
    reason = "MX blocks: promoted accumulators leave room for 128 x 128 tiles";
  } else if (shape.n > 128) {
    const int64_t rows_per_group = shape.m / shape.groups;
    const bool short_tile_fits =
        sm90_smem_bytes(sm90_tile_config(Sm90Tile::k64x256, decode), shape.groups) <=
        kSm90SmemLimit;
    if (shape.op == GG_OP_RAGGED_M && rows_per_group <= kSm90ShortGroupRows && short_tile_fits) {
      tile = Sm90Tile::k64x256;
      reason = "n=" + std::to_string(shape.n) + " > 128, groups average " +
               std::to_string(rows_per_group) + " rows";
    } else if (decode == Sm90Decode::kFp8Tokens) {
      reason = "fp8 blocks along the tokens: promoted accumulators leave room for 128 columns a "
               "tile";
    } else if (decode != Sm90Decode::kNone) {
      reason = "decoded operands: their raw codes leave room for 128 columns a tile";
    } else if (shape.block_scaled) {
      reason = "fp8 blocks: promoted accumulators leave room for 128 columns a consumer";
    } else if (sm90_smem_bytes(wide_tile, shape.groups) <= kSm90SmemLimit) {
      tile = Sm90Tile::k128x256;
      reason = "n=" + std::to_string(shape.n) + " > 128";
    } else {
      reason = "G=" + std::to_string(shape.groups) + " too many for the 256-wide tile";
    }
  }
  // Decoded tokens, and fp8 blocks along them, run whole k-steps on single
  // CTAs: the consumers zero a step's tokens past the group as they move
  // its codes into the tiles, and the boxes leave no room for pairs.
  const bool sparse_k = shape.op == GG_OP_RAGGED_K && decode == Sm90Decode::kNone &&
                        shape.k < kSm90SparseKTokens * shape.groups;
  if (sparse_k) {
    reason += ", sparse k: groups average " + std::to_string(shape.k / shape.groups) + " tokens";
  }
  const bool multicast = shape.op == GG_OP_RAGGED_K && tile == Sm90Tile::k128x256 &&
                         shape.k >= kSm90MulticastTokens * shape.groups;
  if (multicast) {
    reason += ", clusters of 2 sharing B: groups average " +
              std::to_string(shape.k / shape.groups) + " tokens";
  }
  if (decode != Sm90Decode::kNone) {
    reason += decode == Sm90Decode::kRhs ? ", rhs decoded into bf16"
              : decode == Sm90Decode::kFp8Tokens
                  ? ", fp8 windows on 16-token boundaries, each block split across two"
              : decode == Sm90Decode::kFp8Mx
                  ? ", fp8 wgmma, each 32-deep product promoted times its MX scales"
                  : ", both operands decoded into bf16";
  }
  return Sm90Plan{shape, tile, sm90_tile_config(tile, decode), sparse_k, multicast, reason};
}

std::string Sm90Plan::describe() const {
  const Sm90TileConfig& c = config;
  return std::string("sm90 ") + api::op_name(shape.op) + " " + api::dtype_name(shape.input) +
         " m=" + std::to_string(shape.m) + " n=" + std::to_string(shape.n) +
         " k=" + std::to_string(shape.k) + " G=" + std::to_string(shape.groups) + " on " +
         std::to_string(shape.sm_count) + " SMs: tile " + std::to_string(c.block_m) + "x" +
         std::to_string(c.block_n) + "x" + std::to_string(c.block_k) + ", " +
         std::to_string(c.stages) + " stages, 1 producer + 2 consumer warpgroups (" + reason + ")";
}

std::string Plan::describe() const {
  const TileConfig& c = config;
  return std::string("portable ") + api::op_name(shape.op) + " " + api::dtype_name(shape.input) +
         " m=" + std::to_string(shape.m) + " n=" + std::to_string(shape.n) +
         " k=" + std::to_string(shape.k) + " G=" + std::to_string(shape.groups) + " on " +
         std::to_string(shape.sm_count) + " SMs (sm_" + std::to_string(shape.compute_capability) +
         "): tile " + std::to_string(c.block_m) + "x" + std::to_string(c.block_n) + "x" +
         std::to_string(c.block_k) + ", " + std::to_string(c.stages) + " stages, " +
         std::to_string(c.warps_m * c.warps_n) + " warps (" + reason + ")";
}

}  // namespace gg

// The quantize plan (src/plan/quantize_plan.h): the tile height from static
// facts, its log line, and the descriptor's facts as the plan reads them.
#include "plan/quantize_plan.h"

#include <gtest/gtest.h>

#include <string>

namespace gg {
namespace {

// What a CTA may opt in to on sm_90, sm_80 and sm_86 / sm_89.
constexpr int64_t kHopperShared = 227 * 1024;
constexpr int64_t kA100Shared = 163 * 1024;
constexpr int64_t kAdaShared = 99 * 1024;

QuantizeShape ragged(int64_t rows, int32_t groups, gg_dtype input = GG_DTYPE_BF16) {
  return QuantizeShape{rows, groups, false, input, false, false, false, kHopperShared};
}

// A ragged descriptor without outputs: [rows, k] input, `groups` sizes.
gg_quantize_desc ragged_desc(int64_t rows, int64_t k, gg_dtype input, int32_t groups,
                             const int32_t* sizes) {
  gg_quantize_desc d{};
  d.input.rank = 2;
  d.input.shape[0] = rows;
  d.input.shape[1] = k;
  d.input.dtype = input;
  d.num_groups = groups;
  d.group_sizes.sizes = sizes;
  return d;
}

QuantizeShape ragged_e2m1(int64_t rows, int32_t groups) {
  QuantizeShape shape = ragged(rows, groups);
  shape.e2m1_codes = true;
  return shape;
}

TEST(QuantizePlan, AverageGroupPicksTheHeight) {
  // DeepSeek-V3 activations over 256 experts: 8192 rows average 32 a group,
  // 16384 rows 64, 65536 rows 256; Qwen3-30B-A3B's 16384 over 128 experts,
  // 128. fp8 codes take 64-token tiles up to 32 rows, e2m1 codes up to 64.
  EXPECT_EQ(plan_quantize(ragged(8192, 256)).tile_rows, 64);
  EXPECT_EQ(plan_quantize(ragged(16384, 256)).tile_rows, 128);
  EXPECT_EQ(plan_quantize(ragged_e2m1(16384, 256)).tile_rows, 64);
  EXPECT_EQ(plan_quantize(ragged(16384, 128)).tile_rows, 128);
  EXPECT_EQ(plan_quantize(ragged_e2m1(16384, 128)).tile_rows, 128);
  EXPECT_EQ(plan_quantize(ragged(65536, 256)).tile_rows, 256);
  EXPECT_EQ(plan_quantize(ragged(131072, 128)).tile_rows, 256);
}

TEST(QuantizePlan, ThresholdsAre32Or64And256Rows) {
  EXPECT_EQ(plan_quantize(ragged(32 * 10, 10)).tile_rows, 64);
  EXPECT_EQ(plan_quantize(ragged(33 * 10, 10)).tile_rows, 128);
  EXPECT_EQ(plan_quantize(ragged(64 * 10, 10)).tile_rows, 128);
  EXPECT_EQ(plan_quantize(ragged_e2m1(64 * 10, 10)).tile_rows, 64);
  EXPECT_EQ(plan_quantize(ragged_e2m1(65 * 10, 10)).tile_rows, 128);
  EXPECT_EQ(plan_quantize(ragged(64 * 10, 10, GG_DTYPE_FP32)).tile_rows, 64);
  EXPECT_EQ(plan_quantize(ragged(65 * 10, 10, GG_DTYPE_FP32)).tile_rows, 128);
  EXPECT_EQ(plan_quantize(ragged(255 * 10, 10)).tile_rows, 128);
  EXPECT_EQ(plan_quantize(ragged(256 * 10, 10)).tile_rows, 256);
}

TEST(QuantizePlan, BlockShapesKeepTheirHeights) {
  QuantizeShape square = ragged(65536, 8);
  square.square_blocks = true;
  EXPECT_EQ(plan_quantize(square).tile_rows, 128);
  square.rows = 64;
  EXPECT_EQ(plan_quantize(square).tile_rows, 128);
  // Columnwise 1x128 blocks: never 64-token tiles, which would split a
  // block; 256 for long groups, as other outputs take.
  QuantizeShape long_blocks = ragged(16384, 256);
  long_blocks.long_column_blocks = true;
  EXPECT_EQ(plan_quantize(long_blocks).tile_rows, 128);
  long_blocks.rows = 8 * 256;
  EXPECT_EQ(plan_quantize(long_blocks).tile_rows, 128);
  long_blocks.rows = 255 * 256;
  EXPECT_EQ(plan_quantize(long_blocks).tile_rows, 128);
  long_blocks.rows = 65536;
  EXPECT_EQ(plan_quantize(long_blocks).tile_rows, 256);
  long_blocks.input = GG_DTYPE_FP32;
  EXPECT_EQ(plan_quantize(long_blocks).tile_rows, 128);
  EXPECT_EQ(plan_quantize(ragged(65536, 8, GG_DTYPE_FP16)).tile_rows, 256);
}

TEST(QuantizePlan, Fp32InputHasNoTallTiles) {
  // Short groups take 64 as 16-bit input does; long ones stay at 128.
  EXPECT_EQ(plan_quantize(ragged(16384, 256, GG_DTYPE_FP32)).tile_rows, 64);
  EXPECT_EQ(plan_quantize(ragged(16384, 128, GG_DTYPE_FP32)).tile_rows, 128);
  const QuantizePlan long_groups = plan_quantize(ragged(65536, 8, GG_DTYPE_FP32));
  EXPECT_EQ(long_groups.tile_rows, 128);
  EXPECT_NE(long_groups.reason.find("fp32 input has no 256-token tiles"), std::string::npos)
      << long_groups.reason;
}

TEST(QuantizePlan, Fp32WhereItsTilesDoNotFit) {
  // An fp32 CTA of 128 tokens takes 153 KB: it fits sm_80, not sm_86 / sm_89,
  // where fp32 takes 64-token tiles unless its blocks need 128.
  EXPECT_EQ(quantize_dynamic_smem_bytes(4, 128) + kQuantizeStaticSmem, 156832);
  EXPECT_EQ(quantize_dynamic_smem_bytes(4, 64), 128 + 2 * 32768 + 9744);
  QuantizeShape fp32 = ragged(65536, 8, GG_DTYPE_FP32);
  fp32.shared_bytes_per_block = kA100Shared;
  EXPECT_EQ(plan_quantize(fp32).tile_rows, 128);
  fp32.shared_bytes_per_block = kAdaShared;
  const QuantizePlan ada = plan_quantize(fp32);
  EXPECT_EQ(ada.tile_rows, 64);
  EXPECT_NE(ada.reason.find("128-token tiles exceed the device's shared memory"),
            std::string::npos)
      << ada.reason;
  for (const bool square : {true, false}) {
    QuantizeShape blocks = fp32;
    blocks.square_blocks = square;
    blocks.long_column_blocks = !square;
    const QuantizePlan none = plan_quantize(blocks);
    EXPECT_EQ(none.tile_rows, 0);
    // Long groups of 1x128 blocks would take 256-token tiles, which fp32
    // input has not.
    EXPECT_EQ(none.describe(),
              std::string("quantize fp32 rows=65536 G=8: no tile height fits (") +
                  (square ? "128 x 128 blocks"
                          : "groups average 8192 rows; fp32 input has no 256-token tiles") +
                  "; its 128-token tiles (the least its blocks take) need 156832 bytes of shared "
                  "memory a CTA, the device allows 101376)");
  }
  // 16-bit input fits every height but 256 there.
  QuantizeShape bf16 = ragged(65536, 8);
  bf16.square_blocks = true;
  bf16.shared_bytes_per_block = kAdaShared;
  EXPECT_EQ(plan_quantize(bf16).tile_rows, 128);
}

TEST(QuantizePlan, StackedMatricesCountTheirOwnRows) {
  // 256 matrices of 2048 rows each: 2048 rows a matrix, not 8.
  EXPECT_EQ(
      plan_quantize(
          QuantizeShape{2048, 256, true, GG_DTYPE_BF16, false, false, false, kHopperShared})
          .tile_rows,
      256);
  // Their rows are exact, not routed: fp8 codes keep 64-token tiles up to 64.
  EXPECT_EQ(
      plan_quantize(QuantizeShape{48, 4, true, GG_DTYPE_BF16, false, false, false, kHopperShared})
          .tile_rows,
      64);
  EXPECT_EQ(
      plan_quantize(QuantizeShape{64, 4, true, GG_DTYPE_BF16, false, false, false, kHopperShared})
          .tile_rows,
      64);
}

TEST(QuantizePlan, GroupsAsOneSpanCountAllRows) {
  // Outputs that ignore the groups take the height of one group of M rows,
  // whatever the groups average: 128-token tiles, 256 from 65536 rows.
  QuantizeShape span = ragged(8192, 256);
  span.one_span = true;
  EXPECT_EQ(plan_quantize(span).tile_rows, 128);
  EXPECT_EQ(plan_quantize(span).describe(),
            "quantize bf16 rows=8192 G=256: tiles of 128 tokens x 128, 256 threads "
            "(groups as one span of 8192 rows)");
  span.rows = 65535;
  EXPECT_EQ(plan_quantize(span).tile_rows, 128);
  span.rows = 65536;
  EXPECT_EQ(plan_quantize(span).tile_rows, 256);
  span.rows = 32;
  EXPECT_EQ(plan_quantize(span).tile_rows, 64);
  span.input = GG_DTYPE_FP32;
  span.rows = 131072;
  EXPECT_EQ(plan_quantize(span).tile_rows, 128);
}

// A ragged descriptor of four groups whose outputs the predicates of
// which outputs ignore the groups read: with() requests one.
class QuantizeOutputs : public ::testing::Test {
 protected:
  void with(gg_tensor* out, gg_dtype dtype, gg_block_scaling blocks, gg_scale_extent extent) {
    out->data = &data;
    out->dtype = dtype;
    out->block_scaling = blocks;
    out->scale_extent = extent;
  }
  char data = 0;
  const int32_t sizes[4] = {};
  const int32_t offsets[4] = {};
  gg_quantize_desc d = ragged_desc(1024, 256, GG_DTYPE_BF16, 4, sizes);
};

TEST_F(QuantizeOutputs, CodesIgnoreGroupsWithoutGroupScalesOrColumnwiseBlocks) {
  // fp8 under a tensor scale, both outputs: the codes of one span.
  with(&d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
  with(&d.columnwise, GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_TENSOR);
  EXPECT_TRUE(codes_ignore_groups(d));
  EXPECT_TRUE(quantize_shape(d, kHopperShared).one_span);
  // A per-group amax keeps the amax launch on the groups, so the plan
  // counts them; the quantize launch still takes one span.
  float amax[4] = {};
  d.amax = amax;
  EXPECT_TRUE(codes_ignore_groups(d));
  EXPECT_FALSE(quantize_shape(d, kHopperShared).one_span);
  d.amax = nullptr;
  // Group scales, and columnwise blocks (restarting at every group start), do not.
  with(&d.columnwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP);
  EXPECT_FALSE(codes_ignore_groups(d));
  with(&d.columnwise, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
  EXPECT_FALSE(codes_ignore_groups(d));
  // Rowwise blocks run along K, within a token: mxfp8, 1 x 128 and nvfp4
  // under a tensor scale ignore the groups, nvfp4 under group scales and
  // 128 x 128 blocks do not.
  d.columnwise.data = nullptr;
  struct Rowwise {
    gg_dtype dtype;
    gg_block_scaling blocks;
    gg_scale_extent extent;
    bool ignores;
  };
  for (const Rowwise& r : {Rowwise{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE, true},
                           Rowwise{GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE, true},
                           Rowwise{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR, true},
                           Rowwise{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP, false},
                           Rowwise{GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE, false},
                           Rowwise{GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE, true}}) {
    with(&d.rowwise, r.dtype, r.blocks, r.extent);
    EXPECT_EQ(codes_ignore_groups(d), r.ignores) << r.blocks << " " << r.extent;
  }
  // A columnwise output under row scales has a scale per K column of each
  // group.
  with(&d.columnwise, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
  EXPECT_FALSE(codes_ignore_groups(d));
  d.columnwise.data = nullptr;
  // Groups placed by offsets need not cover one span; stacked matrices are
  // not ragged.
  with(&d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
  EXPECT_TRUE(codes_ignore_groups(d));
  d.group_sizes.offsets = offsets;
  EXPECT_FALSE(codes_ignore_groups(d));
  d.group_sizes.offsets = nullptr;
  d.group_sizes.sizes = nullptr;
  EXPECT_FALSE(codes_ignore_groups(d));
}

TEST_F(QuantizeOutputs, GroupsOnlyRestartColumnwiseBlocksAlongTokens) {
  // A columnwise output with blocks along tokens, alone or beside a
  // rowwise one that ignores the groups.
  for (const gg_block_scaling blocks : {GG_BLOCK_MX32, GG_BLOCK_1X128}) {
    with(&d.columnwise, GG_DTYPE_E4M3, blocks, GG_SCALE_NONE);
    EXPECT_TRUE(groups_only_restart_column_blocks(d)) << blocks;
  }
  with(&d.columnwise, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
  EXPECT_TRUE(groups_only_restart_column_blocks(d));
  with(&d.rowwise, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
  EXPECT_TRUE(groups_only_restart_column_blocks(d));
  with(&d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
  EXPECT_TRUE(groups_only_restart_column_blocks(d));
  // A rowwise output under group scales, or a columnwise one under group
  // scales or without blocks along tokens, depends on the groups otherwise
  // (or not at all: codes_ignore_groups).
  with(&d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP);
  EXPECT_FALSE(groups_only_restart_column_blocks(d));
  with(&d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
  with(&d.columnwise, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP);
  EXPECT_FALSE(groups_only_restart_column_blocks(d));
  with(&d.columnwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
  EXPECT_FALSE(groups_only_restart_column_blocks(d));
  d.columnwise.data = nullptr;
  EXPECT_FALSE(groups_only_restart_column_blocks(d));
  // Groups placed by offsets may leave gaps; stacked matrices are not ragged.
  with(&d.columnwise, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
  EXPECT_TRUE(groups_only_restart_column_blocks(d));
  d.group_sizes.offsets = offsets;
  EXPECT_FALSE(groups_only_restart_column_blocks(d));
  d.group_sizes.offsets = nullptr;
  d.group_sizes.sizes = nullptr;
  EXPECT_FALSE(groups_only_restart_column_blocks(d));
}

TEST_F(QuantizeOutputs, GroupScalesByRowForFp8WithoutBlocks) {
  with(&d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP);
  EXPECT_TRUE(group_scales_by_row(d));  // rowwise alone
  with(&d.columnwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP);
  EXPECT_TRUE(group_scales_by_row(d));  // both, one dtype: the codes transposed
  EXPECT_FALSE(codes_ignore_groups(d));
  with(&d.columnwise, GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_GROUP);
  EXPECT_FALSE(group_scales_by_row(d));  // columnwise codes of their own
  with(&d.columnwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
  EXPECT_FALSE(group_scales_by_row(d));
  d.columnwise.data = nullptr;
  with(&d.rowwise, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP);
  EXPECT_FALSE(group_scales_by_row(d));  // nvfp4: blocks of its own
  with(&d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
  EXPECT_FALSE(group_scales_by_row(d));  // one scale: codes_ignore_groups
  with(&d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP);
  d.group_sizes.offsets = offsets;
  EXPECT_FALSE(group_scales_by_row(d));  // gaps between groups
  d.group_sizes.offsets = nullptr;
  d.group_sizes.sizes = nullptr;
  EXPECT_FALSE(group_scales_by_row(d));  // stacked: a matrix a group
}

TEST_F(QuantizeOutputs, TensorAmaxOnlyWithoutGroupScalesOrAmaxOutput) {
  // nvfp4 under a tensor scale, both ways: its columnwise blocks restart at
  // every group start, but the amax launch needs only the tensor's amax.
  with(&d.rowwise, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
  with(&d.columnwise, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
  EXPECT_FALSE(codes_ignore_groups(d));
  EXPECT_TRUE(needs_tensor_amax_only(d));
  // fp8 under a tensor scale beside columnwise mxfp8; columnwise alone.
  with(&d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR);
  with(&d.columnwise, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
  EXPECT_TRUE(needs_tensor_amax_only(d));
  d.rowwise.data = nullptr;
  with(&d.columnwise, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
  EXPECT_TRUE(needs_tensor_amax_only(d));
  // A group scale on either output, or the per-group amax output, needs
  // each group's amax.
  with(&d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP);
  EXPECT_FALSE(needs_tensor_amax_only(d));
  d.rowwise.data = nullptr;
  with(&d.columnwise, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP);
  EXPECT_FALSE(needs_tensor_amax_only(d));
  // Row scales need each row's max, rowwise or columnwise.
  with(&d.columnwise, GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
  EXPECT_FALSE(needs_tensor_amax_only(d));
  d.columnwise.data = nullptr;
  with(&d.rowwise, GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, GG_SCALE_NONE);
  EXPECT_FALSE(needs_tensor_amax_only(d));
  d.rowwise.data = nullptr;
  with(&d.columnwise, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR);
  float amax[4] = {};
  d.amax = amax;
  EXPECT_FALSE(needs_tensor_amax_only(d));
  d.amax = nullptr;
  // Groups placed by offsets may leave gaps; stacked matrices are not ragged.
  d.group_sizes.offsets = offsets;
  EXPECT_FALSE(needs_tensor_amax_only(d));
  d.group_sizes.offsets = nullptr;
  d.group_sizes.sizes = nullptr;
  EXPECT_FALSE(needs_tensor_amax_only(d));
}

TEST(QuantizePlan, TallTilesOnlyWhereTheyFitSharedMemory) {
  // A 256-token CTA of 16-bit input takes 166 KB of dynamic shared memory,
  // a 128-token one 83 KB.
  EXPECT_EQ(quantize_dynamic_smem_bytes(2, 256), 128 + 2 * 65536 + 38976);
  EXPECT_EQ(quantize_dynamic_smem_bytes(2, 128), 128 + 2 * 32768 + 19488);
  EXPECT_TRUE(quantize_tiles_fit(2, 256, kHopperShared));
  EXPECT_FALSE(quantize_tiles_fit(2, 256, kA100Shared));
  EXPECT_TRUE(quantize_tiles_fit(2, 128, kAdaShared));
  EXPECT_TRUE(quantize_tiles_fit(4, 128, kA100Shared));
  QuantizeShape long_groups = ragged(131072, 128);
  for (const int64_t shared : {kA100Shared, kAdaShared}) {
    long_groups.shared_bytes_per_block = shared;
    const QuantizePlan plan = plan_quantize(long_groups);
    EXPECT_EQ(plan.tile_rows, 128);
    EXPECT_NE(plan.reason.find("exceed the device's shared memory"), std::string::npos)
        << plan.reason;
  }
  // Short groups keep their 64-token tiles there.
  QuantizeShape short_groups = ragged(8192, 256);
  short_groups.shared_bytes_per_block = kAdaShared;
  EXPECT_EQ(plan_quantize(short_groups).tile_rows, 64);
}

TEST(QuantizePlan, NoGroupsIsNoDivision) {
  EXPECT_EQ(plan_quantize(ragged(0, 0)).tile_rows, 64);
  EXPECT_EQ(plan_quantize(ragged(300, 0)).tile_rows, 256);
}

TEST(QuantizePlan, DescribeSaysTheHeightAndWhy) {
  const std::string line = plan_quantize(ragged(8192, 256)).describe();
  EXPECT_EQ(line,
            "quantize bf16 rows=8192 G=256: tiles of 64 tokens x 128, 128 threads "
            "(groups average 32 rows)");
}

TEST(QuantizePlan, ShapeOfADescriptor) {
  const int32_t sizes[32] = {};
  gg_quantize_desc d = ragged_desc(4096, 7168, GG_DTYPE_FP16, 32, sizes);
  char data = 0;
  d.columnwise.data = &data;
  d.columnwise.block_scaling = GG_BLOCK_1X128;
  QuantizeShape s = quantize_shape(d, kA100Shared);
  EXPECT_EQ(s.rows, 4096);
  EXPECT_EQ(s.shared_bytes_per_block, kA100Shared);
  EXPECT_EQ(s.groups, 32);
  EXPECT_FALSE(s.stacked);
  EXPECT_EQ(s.input, GG_DTYPE_FP16);
  EXPECT_FALSE(s.square_blocks);
  EXPECT_TRUE(s.long_column_blocks);
  EXPECT_FALSE(s.e2m1_codes);
  d.columnwise.dtype = GG_DTYPE_E2M1;
  EXPECT_TRUE(quantize_shape(d, kA100Shared).e2m1_codes);
  d.columnwise.dtype = GG_DTYPE_E4M3;
  d.rowwise.dtype = GG_DTYPE_E2M1;
  EXPECT_FALSE(quantize_shape(d, kA100Shared).e2m1_codes);  // no rowwise data yet
  d.rowwise.dtype = GG_DTYPE_E4M3;
  d.rowwise.data = &data;
  d.rowwise.block_scaling = GG_BLOCK_128X128;
  d.group_sizes.sizes = nullptr;
  s = quantize_shape(d, kHopperShared);
  EXPECT_TRUE(s.stacked);
  EXPECT_TRUE(s.square_blocks);
}

}  // namespace
}  // namespace gg

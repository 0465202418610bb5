// The plan (src/plan/plan.h): tile choice from static facts, its log line,
// and the tile configs' fit on the GPUs the portable path targets. Expected
// tiles come from the rules' arithmetic done by hand on each shape.
#include "plan/plan.h"

#include <gtest/gtest.h>

#include <string>

namespace gg {
namespace {

GemmShape ragged_m(int64_t m, int64_t n, int64_t k, int32_t groups, int sm_count = 132) {
  return GemmShape{GG_OP_RAGGED_M, m, n, k, groups, GG_DTYPE_BF16, sm_count, 90};
}

GemmShape ragged_k(int64_t p, int64_t q, int64_t tokens, int32_t groups, int sm_count = 132) {
  return GemmShape{GG_OP_RAGGED_K, p, q, tokens, groups, GG_DTYPE_BF16, sm_count, 90};
}

TEST(Plan, TallGroupsTakeTheLargeTile) {
  // Mixtral prefill: 16384 tokens x top-2 over 8 experts = 4096 rows a group;
  // 256 x 112 = 28672 tiles of 128 rows.
  const Plan plan = plan_gemm(ragged_m(32768, 14336, 4096, 8));
  EXPECT_EQ(plan.path, GG_PATH_PORTABLE);
  EXPECT_EQ(plan.tile, PortableTile::k128x128);
  EXPECT_EQ(plan.config.block_m, 128);
  EXPECT_EQ(plan.config.block_n, 128);
}

TEST(Plan, ShortGroupsTakeTheSmallTile) {
  // DeepSeek-V3 decode: 256 tokens x top-8 over 256 experts = 8 rows a group.
  const Plan plan = plan_gemm(ragged_m(2048, 2048, 7168, 256));
  EXPECT_EQ(plan.tile, PortableTile::k64x128);
  EXPECT_EQ(plan.config.block_m, 64);
  EXPECT_NE(plan.reason.find("average 8 rows"), std::string::npos) << plan.reason;
}

TEST(Plan, ShortGroupThresholdIs64Rows) {
  // 64 rows a group: small. 65: large (65 * 128 / 128 = 65 m-tiles x 32 n-tiles
  // = 2080 tiles, enough for 132 SMs).
  EXPECT_EQ(plan_gemm(ragged_m(64 * 128, 4096, 4096, 128)).tile, PortableTile::k64x128);
  EXPECT_EQ(plan_gemm(ragged_m(65 * 128, 4096, 4096, 128)).tile, PortableTile::k128x128);
}

TEST(Plan, TooFewLargeTilesForTheSmsTakeTheSmallTile) {
  // One group of 1024 rows, N = 1024: 8 x 8 = 64 large tiles.
  EXPECT_EQ(plan_gemm(ragged_m(1024, 1024, 4096, 1, 132)).tile, PortableTile::k64x128);
  EXPECT_EQ(plan_gemm(ragged_m(1024, 1024, 4096, 1, 64)).tile, PortableTile::k128x128);
  EXPECT_EQ(plan_gemm(ragged_m(1024, 1024, 4096, 1, 65)).tile, PortableTile::k64x128);
}

TEST(Plan, RaggedKCountsTilesOverGroups) {
  // wgrad of 8 experts, 4096 x 4096 each: 8 x 32 x 32 large tiles.
  EXPECT_EQ(plan_gemm(ragged_k(4096, 4096, 65536, 8)).tile, PortableTile::k128x128);
  // 2 experts of 512 x 512: 2 x 4 x 4 = 32 large tiles for 132 SMs.
  EXPECT_EQ(plan_gemm(ragged_k(512, 512, 4096, 2)).tile, PortableTile::k64x128);
  // Few tokens per group do not matter in ragged-K: the output is per group.
  EXPECT_EQ(plan_gemm(ragged_k(2048, 768, 128, 128)).tile, PortableTile::k128x128);
}

TEST(Plan, QuantizedOperandsTakeTheirOneTile) {
  // Whatever the shape: the decode-stage instances exist for kQuantizedTile only.
  for (GemmShape shape : {ragged_m(32768, 14336, 4096, 8), ragged_m(128, 4096, 7168, 128),
                          ragged_k(4096, 4096, 65536, 8), ragged_k(512, 512, 4096, 2)}) {
    shape.decoded = true;
    const Plan plan = plan_gemm(shape);
    EXPECT_EQ(plan.tile, kQuantizedTile);
    EXPECT_NE(plan.reason.find("quantized"), std::string::npos) << plan.reason;
  }
  // Their residency fits as the 16-bit tiles' does.
  const TileConfig c = tile_config(kQuantizedTile);
  EXPECT_GE(65536 / (kQuantizedMinCtasPerSm * 32 * c.warps_m * c.warps_n), 128);
}

TEST(Plan, DescribeNamesTheChoice) {
  const Plan plan = plan_gemm(ragged_m(32768, 14336, 4096, 8));
  const std::string line = plan.describe();
  for (const char* part : {"portable", "ragged-M", "bf16", "m=32768", "n=14336", "k=4096", "G=8",
                           "132 SMs", "sm_90", "128x128x32", "4 stages", "8 warps"}) {
    EXPECT_NE(line.find(part), std::string::npos) << "missing '" << part << "' in: " << line;
  }
  const std::string small = plan_gemm(ragged_k(512, 512, 4096, 2)).describe();
  for (const char* part : {"ragged-K", "64x128x32", "3 stages", "4 warps", "only 32 128-row"}) {
    EXPECT_NE(small.find(part), std::string::npos) << "missing '" << part << "' in: " << small;
  }
}

// Shared memory of one pipeline stage: each operand keeps its global
// orientation with 16 bytes of padding per row; the larger orientation
// bounds every instantiation.
int stage_bytes(const TileConfig& c) {
  auto operand = [&](int outer) {
    const int depth_major = outer * (c.block_k + 8) * 2;
    const int outer_major = c.block_k * (outer + 8) * 2;
    return depth_major > outer_major ? depth_major : outer_major;
  };
  return operand(c.block_m) + operand(c.block_n);
}

class TileConfigs : public testing::TestWithParam<PortableTile> {};

TEST_P(TileConfigs, SplitEvenlyOverWarpsAndThreads) {
  const TileConfig c = tile_config(GetParam());
  const int threads = 32 * c.warps_m * c.warps_n;
  EXPECT_LE(threads, 1024);
  EXPECT_EQ(c.block_m % (16 * c.warps_m), 0);
  EXPECT_EQ(c.block_n % (16 * c.warps_n), 0);
  EXPECT_EQ(c.block_k % 16, 0);
  EXPECT_GE(c.stages, 2);
  // 16-byte chunks of each operand slice divide evenly over the threads.
  EXPECT_EQ(c.block_m * c.block_k / 8 % threads, 0);
  EXPECT_EQ(c.block_n * c.block_k / 8 % threads, 0);
}

TEST_P(TileConfigs, FitTheirResidencyOnA100AndH100) {
  const TileConfig c = tile_config(GetParam());
  const int smem = c.stages * stage_bytes(c);
  const int reserved = 1024;  // per CTA, by the driver
  EXPECT_LE(c.min_ctas_per_sm * (smem + reserved), 164 * 1024) << "A100";
  EXPECT_LE(c.min_ctas_per_sm * (smem + reserved), 228 * 1024) << "H100";
  // Registers: 64K per SM shared by the resident threads, at most 255 each.
  const int threads = 32 * c.warps_m * c.warps_n;
  EXPECT_GE(65536 / (c.min_ctas_per_sm * threads), 128);
}

INSTANTIATE_TEST_SUITE_P(Portable, TileConfigs,
                         testing::Values(PortableTile::k128x128, PortableTile::k64x128));

}  // namespace
}  // namespace gg

namespace {

gg::GemmShape hopper_shape(gg_op op, int64_t n) {
  return gg::GemmShape{op, 4096, n, 7168, 8, GG_DTYPE_BF16, 132, 90};
}

TEST(Sm90Plan, WideOutputsTakeThe256WideTile) {
  for (const gg_op op : {GG_OP_RAGGED_M, GG_OP_RAGGED_K}) {
    const gg::Sm90Plan plan = gg::plan_sm90_gemm(hopper_shape(op, 129));
    EXPECT_EQ(plan.tile, gg::Sm90Tile::k128x256);
    EXPECT_EQ(plan.config.block_n, 256);
    EXPECT_EQ(plan.config.stages, 3);
  }
}

TEST(Sm90Plan, NarrowOutputsTakeThe128WideTile) {
  for (const int64_t n : {8, 24, 128}) {
    const gg::Sm90Plan plan = gg::plan_sm90_gemm(hopper_shape(GG_OP_RAGGED_M, n));
    EXPECT_EQ(plan.tile, gg::Sm90Tile::k128x128) << "n=" << n;
    EXPECT_EQ(plan.config.block_n, 128);
    EXPECT_EQ(plan.config.stages, 5);
  }
}

// fp8 1x128 x 128x128 blocks promote each k-step into a second set of
// accumulators: 128 columns a consumer, so the 128 x 256 tile gives way to
// 128 x 128 (decode's 64 x 256 already splits its columns in two).
TEST(Sm90Plan, BlockScaledFp8TakesTiles128ColumnsAConsumer) {
  gg::GemmShape shape = hopper_shape(GG_OP_RAGGED_M, 4096);
  shape.input = GG_DTYPE_E4M3;
  shape.block_scaled = true;
  gg::Sm90Plan plan = gg::plan_sm90_gemm(shape);
  EXPECT_EQ(plan.tile, gg::Sm90Tile::k128x128);
  EXPECT_NE(plan.reason.find("fp8 blocks"), std::string::npos) << plan.reason;
  shape.m = 8 * 32;  // groups averaging 32 rows
  EXPECT_EQ(gg::plan_sm90_gemm(shape).tile, gg::Sm90Tile::k64x256);
}

// Decoded operands (Sm90Decode): 128 x 128 tiles, or 64 x 256 for groups
// of a few rows where the short tile's three stages fit beside the group
// table; every choice within the shared memory, for up to 2048 groups.
TEST(Sm90Plan, DecodedOperandsTakeTiles128ColumnsAConsumer) {
  for (const gg::Sm90Decode decode : {gg::Sm90Decode::kRhs, gg::Sm90Decode::kBoth}) {
    gg::GemmShape shape = hopper_shape(GG_OP_RAGGED_M, 4096);
    shape.sm90_decode = decode;
    gg::Sm90Plan plan = gg::plan_sm90_gemm(shape);
    EXPECT_EQ(plan.tile, gg::Sm90Tile::k128x128);
    EXPECT_EQ(plan.config.stages, decode == gg::Sm90Decode::kBoth ? 3 : 4);
    EXPECT_EQ(plan.config.raw_row_bytes_a, decode == gg::Sm90Decode::kBoth ? 64 : 0);
    EXPECT_EQ(plan.config.raw_row_bytes_b, 64);
    EXPECT_NE(plan.reason.find("decoded"), std::string::npos) << plan.reason;
    shape.m = 8 * 32;  // groups averaging 32 rows
    EXPECT_EQ(gg::plan_sm90_gemm(shape).tile, gg::Sm90Tile::k64x256);
    for (const int groups : {1, 256, 900, 1024, 2048}) {
      shape.groups = groups;
      shape.m = 4 * groups;
      plan = gg::plan_sm90_gemm(shape);
      EXPECT_LE(gg::sm90_smem_bytes(plan.config, groups), gg::kSm90SmemLimit) << "G=" << groups;
    }
    EXPECT_EQ(plan.tile, gg::Sm90Tile::k128x128) << "2048 groups: the short tile's table";
  }
}

// Operands decoded along a ragged-K group's tokens (the MX and NV weight
// gradient): 128 x 128 tiles of whole k-steps, whatever the tokens a group
// averages (no sparse-K steps, no cluster pairs), rows of 80 raw bytes for
// both operands, three stages that fit beside up to 2048 groups' table.
TEST(Sm90Plan, OperandsDecodedAlongTokensTake128x128Tiles) {
  for (const int64_t tokens : {int64_t{64}, int64_t{4096}, int64_t{1} << 20}) {
    for (const int groups : {1, 8, 256, 2048}) {
      gg::GemmShape shape = hopper_shape(GG_OP_RAGGED_K, 2048);
      shape.k = tokens;
      shape.groups = groups;
      shape.sm90_decode = gg::Sm90Decode::kTokens;
      const gg::Sm90Plan plan = gg::plan_sm90_gemm(shape);
      EXPECT_EQ(plan.tile, gg::Sm90Tile::k128x128) << plan.describe();
      EXPECT_FALSE(plan.sparse_k) << plan.describe();
      EXPECT_FALSE(plan.multicast) << plan.describe();
      EXPECT_EQ(plan.config.stages, 3);
      EXPECT_EQ(plan.config.raw_row_bytes_a, 80);
      EXPECT_EQ(plan.config.raw_row_bytes_b, 80);
      EXPECT_LE(gg::sm90_smem_bytes(plan.config, groups), gg::kSm90SmemLimit) << "G=" << groups;
      EXPECT_NE(plan.reason.find("both operands decoded"), std::string::npos) << plan.reason;
    }
  }
}

// fp8 with 1 x 128 blocks along a ragged-K group's tokens (the fp8 weight
// gradient): 128 x 128 tiles of 128-token windows, four stages of the fp8
// tiles and their scales, and the split-off tiles, that fit beside up to
// 2048 groups' table.
TEST(Sm90Plan, Fp8BlocksAlongTokensTake128x128TilesOfFourStages) {
  for (const int64_t tokens : {int64_t{64}, int64_t{4096}, int64_t{1} << 20}) {
    for (const int groups : {1, 8, 256, 2048}) {
      gg::GemmShape shape = hopper_shape(GG_OP_RAGGED_K, 2048);
      shape.k = tokens;
      shape.groups = groups;
      shape.block_scaled = true;
      shape.sm90_decode = gg::Sm90Decode::kFp8Tokens;
      const gg::Sm90Plan plan = gg::plan_sm90_gemm(shape);
      EXPECT_EQ(plan.tile, gg::Sm90Tile::k128x128) << plan.describe();
      EXPECT_FALSE(plan.sparse_k) << plan.describe();
      EXPECT_FALSE(plan.multicast) << plan.describe();
      EXPECT_EQ(plan.config.stages, 4);
      EXPECT_EQ(plan.config.raw_row_bytes_a, 0);
      EXPECT_EQ(plan.config.raw_row_bytes_b, 0);
      EXPECT_EQ(plan.config.split_bytes, 16 * 1024);
      EXPECT_EQ(gg::sm90_stage_bytes(plan.config), 33 * 1024);
      EXPECT_LE(gg::sm90_smem_bytes(plan.config, groups), gg::kSm90SmemLimit) << "G=" << groups;
      EXPECT_NE(plan.reason.find("fp8 windows on 16-token boundaries"), std::string::npos)
          << plan.reason;
    }
  }
}

// fp8 with MX blocks along K (mxfp8 on fp8 wgmma): 128 x 128 tiles of four
// stages, groups of a few rows too, each stage the fp8 tiles and the
// step's fp32 scales (4 blocks of every row and column), within the shared
// memory beside up to 2048 groups' table.
TEST(Sm90Plan, Fp8MxBlocksTake128x128TilesWithTheirScales) {
  gg::GemmShape shape = hopper_shape(GG_OP_RAGGED_M, 4096);
  shape.input = GG_DTYPE_E4M3;
  shape.sm90_decode = gg::Sm90Decode::kFp8Mx;
  gg::Sm90Plan plan = gg::plan_sm90_gemm(shape);
  EXPECT_EQ(plan.tile, gg::Sm90Tile::k128x128);
  EXPECT_EQ(plan.config.stages, 4);
  EXPECT_EQ(plan.config.scale_bytes, 4 * (128 + 128) * 4);
  EXPECT_EQ(gg::sm90_stage_bytes(plan.config), 36 * 1024);
  EXPECT_NE(plan.reason.find("MX blocks"), std::string::npos) << plan.reason;
  EXPECT_NE(plan.reason.find("promoted times its MX scales"), std::string::npos) << plan.reason;
  for (const int64_t m : {int64_t{8} * 32, int64_t{8} * 4}) {  // groups of a few rows
    shape.m = m;
    EXPECT_EQ(gg::plan_sm90_gemm(shape).tile, gg::Sm90Tile::k128x128);
  }
  EXPECT_LE(gg::sm90_smem_bytes(plan.config, gg::kSm90MaxGroups), gg::kSm90SmemLimit);
}

TEST(Sm90Plan, EveryChoiceFitsItsSharedMemory) {
  // 227 KB per CTA, of which the kernel's static data (the scan) takes < 2 KB.
  for (const int groups : {1, 8, 256, 1024, 1025, 1600, 2048}) {
    gg::GemmShape shape = hopper_shape(GG_OP_RAGGED_M, 4096);
    shape.groups = groups;
    const gg::Sm90Plan plan = gg::plan_sm90_gemm(shape);
    EXPECT_LE(gg::sm90_smem_bytes(plan.config, groups), gg::kSm90SmemLimit) << "G=" << groups;
  }
  EXPECT_LE(gg::sm90_smem_bytes(gg::sm90_tile_config(gg::Sm90Tile::k128x128), gg::kSm90MaxGroups),
            gg::kSm90SmemLimit);
}

TEST(Sm90Plan, ManyGroupsTakeThe128WideTile) {
  gg::GemmShape shape = hopper_shape(GG_OP_RAGGED_K, 4096);
  shape.groups = 1024;
  EXPECT_EQ(gg::plan_sm90_gemm(shape).tile, gg::Sm90Tile::k128x256);
  shape.groups = 2048;
  const gg::Sm90Plan plan = gg::plan_sm90_gemm(shape);
  EXPECT_EQ(plan.tile, gg::Sm90Tile::k128x128);
  EXPECT_NE(plan.describe().find("G=2048 too many"), std::string::npos) << plan.describe();
}

TEST(Sm90Plan, ShortRaggedMGroupsTake64RowTiles) {
  gg::GemmShape shape = hopper_shape(GG_OP_RAGGED_M, 4096);
  shape.groups = 128;
  shape.m = 128 * gg::kSm90ShortGroupRows;
  const gg::Sm90Plan plan = gg::plan_sm90_gemm(shape);
  EXPECT_EQ(plan.tile, gg::Sm90Tile::k64x256);
  EXPECT_EQ(plan.config.block_m, 64);
  EXPECT_NE(plan.describe().find("groups average 32 rows"), std::string::npos) << plan.describe();
  shape.m += 128;
  EXPECT_EQ(gg::plan_sm90_gemm(shape).tile, gg::Sm90Tile::k128x256);
  shape.m = 128 * 64;  // 64 rows a group: 128-row tiles
  EXPECT_EQ(gg::plan_sm90_gemm(shape).tile, gg::Sm90Tile::k128x256);
  shape.op = GG_OP_RAGGED_K;  // its output rows are not ragged
  shape.m = 64;
  EXPECT_EQ(gg::plan_sm90_gemm(shape).tile, gg::Sm90Tile::k128x256);
}

TEST(Sm90Plan, SmallRaggedKGroupsTakeTheSparseKInstance) {
  gg::GemmShape shape = hopper_shape(GG_OP_RAGGED_K, 4096);
  shape.groups = 256;
  shape.k = 1024;  // decode: 4 tokens per group
  const gg::Sm90Plan decode = gg::plan_sm90_gemm(shape);
  EXPECT_TRUE(decode.sparse_k);
  EXPECT_NE(decode.describe().find("sparse k: groups average 4 tokens"), std::string::npos)
      << decode.describe();
  shape.k = 256 * gg::kSm90SparseKTokens;  // prefill
  EXPECT_FALSE(gg::plan_sm90_gemm(shape).sparse_k);
  shape.op = GG_OP_RAGGED_M;
  shape.k = 16;
  EXPECT_FALSE(gg::plan_sm90_gemm(shape).sparse_k) << "ragged-M contracts over K, never sparse";
}

TEST(Sm90Plan, LongRaggedKGroupsShareBInClustersOfTwo) {
  gg::GemmShape shape = hopper_shape(GG_OP_RAGGED_K, 4096);
  shape.groups = 256;
  shape.k = 256 * gg::kSm90MulticastTokens;  // prefill: 512 tokens per group
  const gg::Sm90Plan prefill = gg::plan_sm90_gemm(shape);
  EXPECT_TRUE(prefill.multicast);
  EXPECT_NE(prefill.describe().find("clusters of 2 sharing B: groups average 512 tokens"),
            std::string::npos)
      << prefill.describe();
  shape.k -= 1;  // fewer tokens per group: the pair's lockstep costs more than B's traffic
  EXPECT_FALSE(gg::plan_sm90_gemm(shape).multicast);
  shape.k = 256 * gg::kSm90MulticastTokens;
  shape.n = 128;  // the pairs share 256-wide B tiles only
  EXPECT_FALSE(gg::plan_sm90_gemm(shape).multicast);
  shape.groups = 2048;  // too many groups for the 256-wide tile's shared memory
  shape.n = 4096;
  shape.k = 2048 * gg::kSm90MulticastTokens;
  EXPECT_FALSE(gg::plan_sm90_gemm(shape).multicast);
  shape.op = GG_OP_RAGGED_M;
  shape.groups = 8;
  shape.m = 65536;
  EXPECT_FALSE(gg::plan_sm90_gemm(shape).multicast) << "ragged-M tiles are never paired";
}

TEST(Sm90Plan, DescribeNamesTileAndReason) {
  const std::string line = gg::plan_sm90_gemm(hopper_shape(GG_OP_RAGGED_K, 7168)).describe();
  EXPECT_NE(line.find("sm90 ragged-K"), std::string::npos) << line;
  EXPECT_NE(line.find("tile 128x256x64, 3 stages"), std::string::npos) << line;
  EXPECT_NE(line.find("n=7168 > 128"), std::string::npos) << line;
}

TEST(GemmShapeOf, ReadsExtentsFromEveryLayout) {
  gg_gemm_desc d{};
  d.op = GG_OP_RAGGED_M;
  d.num_groups = 4;
  d.lhs.dtype = GG_DTYPE_FP16;
  d.lhs.shape[0] = 1000;
  d.lhs.shape[1] = 256;
  d.rhs.shape[0] = 4;
  d.rhs.shape[1] = 512;  // [G, N, K] read transposed
  d.rhs.shape[2] = 256;
  d.rhs_layout = GG_LAYOUT_T;
  gg::GemmShape s = gg::gemm_shape(d, 132, 90);
  EXPECT_EQ(s.m, 1000);
  EXPECT_EQ(s.n, 512);
  EXPECT_EQ(s.k, 256);
  EXPECT_EQ(s.input, GG_DTYPE_FP16);
  d.rhs.shape[1] = 256;  // [G, K, N]
  d.rhs.shape[2] = 384;
  d.rhs_layout = GG_LAYOUT_N;
  EXPECT_EQ(gg::gemm_shape(d, 132, 90).n, 384);

  gg_gemm_desc k{};
  k.op = GG_OP_RAGGED_K;
  k.num_groups = 4;
  k.lhs.shape[0] = 96;  // [P, M]: transposed copy
  k.lhs.shape[1] = 1000;
  k.lhs_layout = GG_LAYOUT_T;
  k.rhs.shape[0] = 1000;  // [M, Q]
  k.rhs.shape[1] = 40;
  k.rhs_layout = GG_LAYOUT_N;
  s = gg::gemm_shape(k, 132, 90);
  EXPECT_EQ(s.m, 96);
  EXPECT_EQ(s.n, 40);
  EXPECT_EQ(s.k, 1000);
}

}  // namespace

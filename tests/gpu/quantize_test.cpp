// Grouped quantize on every GPU path against the CPU reference, bit for bit:
// every output format x rowwise / columnwise / both x bf16 / fp16 / fp32
// input; edge group sizes (0, 1, 31, 33, 127, 128, 129, unaligned starts,
// one hot group, all empty, G = 1, G = 256, sum < M); stacked weights with
// 128 x 128 blocks, G = 1 and 256 and N at a block's edges; NaN, infinities,
// zeros and subnormals; bad device sizes clamped and flagged; repeated runs
// on one workspace, whose scratch holds poison before every run (as a GEMM
// launch sharing it leaves it); outputs that ignore the groups, coded as one
// span of rows; CTAs coding more tiles than the kernel's ring of tile
// descriptors holds; groups padded to columnwise blocks, coded as one
// group; and CUDA graphs replayed after the sizes changed on the device.
// The plan's three tile heights (64, 128 and 256 tokens, by the average
// group) each take every format with sizes at their tile edges, bad sizes
// and a graph replay. Every output sits between guard bands and starts
// poisoned, each case checked under two poison bytes (quantize_case.h).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "gpu/cuda_check.h"
#include "gpu/gemm_case.h"
#include "gpu/path_test.h"
#include "gpu/quantize_case.h"
#include "gpu/routing.h"
#include "plan/quantize_plan.h"

namespace gg::test {
namespace {

class Quantize : public UnverifiedKernelsPathTest {
 protected:
  // Runs `spec` `runs` times on one case, under the two poison bytes in
  // turn, so that no byte is checked under only one of them.
  void expect_correct(const QuantizeSpec& spec, int runs = 2) {
    QuantizeGpuCase q(spec, path());
    SCOPED_TRACE(q.label());
    for (int run = 0; run < runs; ++run) {
      SCOPED_TRACE("run " + std::to_string(run));
      if (run > 0) q.poison_outputs();
      ASSERT_TRUE(q.launch(stream()));
      q.expect_matches_reference(stream());
      if (::testing::Test::HasFailure()) return;
    }
  }

  // One captured call, replayed after each of `reroutes` was set on the
  // device (data reseeded too): nothing about the sizes may be learnt at
  // capture time.
  void expect_graph_replays(const QuantizeSpec& spec,
                            const std::vector<std::vector<int64_t>>& reroutes) {
    QuantizeGpuCase q(spec, path());
    SCOPED_TRACE(q.label());
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    check_cuda(cudaStreamBeginCapture(stream(), cudaStreamCaptureModeGlobal),
               "cudaStreamBeginCapture");
    const ::testing::AssertionResult launched = q.launch(stream());
    const cudaError_t ended = cudaStreamEndCapture(stream(), &graph);
    ASSERT_TRUE(launched);
    check_cuda(ended, "cudaStreamEndCapture");
    check_cuda(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    for (size_t round = 0; round <= reroutes.size(); ++round) {
      SCOPED_TRACE("replay " + std::to_string(round));
      if (round > 0) q.resize(reroutes[round - 1], 100 + round);
      check_cuda(cudaGraphLaunch(exec, stream()), "cudaGraphLaunch");
      q.expect_matches_reference(stream());
      if (::testing::Test::HasFailure()) break;
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
  }

  static QuantizeSpec ragged(std::vector<int64_t> sizes, int64_t rows, int64_t k) {
    QuantizeSpec s;
    s.sizes = std::move(sizes);
    s.rows = rows;
    s.k = k;
    return s;
  }

  static void set_formats(QuantizeSpec* s, const QuantizeFormatSpec& f, bool rowwise,
                          bool columnwise) {
    s->rowwise = rowwise;
    s->columnwise = columnwise;
    s->rowwise_format = f;
    s->columnwise_format = f;
  }

  // What a CTA of this device may opt in to.
  static int64_t shared_bytes_per_block() {
    int device = 0;
    int bytes = 0;
    EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
    EXPECT_EQ(cudaDeviceGetAttribute(&bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
              cudaSuccess);
    return bytes;
  }

  // The tile height the plan gives a ragged spec (both outputs of one format).
  static int tile_rows(const QuantizeSpec& s) {
    const QuantizeFormatSpec& f = s.rowwise ? s.rowwise_format : s.columnwise_format;
    const QuantizeShape shape{s.rows,
                              static_cast<int32_t>(s.sizes.size()),
                              false,
                              s.input,
                              f.block == GG_BLOCK_128X128,
                              s.columnwise && f.block == GG_BLOCK_1X128,
                              f.dtype == GG_DTYPE_E2M1,
                              shared_bytes_per_block()};
    return plan_quantize(shape).tile_rows;
  }
};

// Every format, direction and input type on one set of edge sizes.
TEST_P(Quantize, SmallEveryFormatDirectionAndInput) {
  const std::vector<int64_t> sizes = edge_sizes(10);  // sum 536
  for (gg_dtype input : {GG_DTYPE_BF16, GG_DTYPE_FP16, GG_DTYPE_FP32}) {
    for (const QuantizeFormatSpec& f : ragged_formats()) {
      for (int direction = 0; direction < 3; ++direction) {
        QuantizeSpec s = ragged(sizes, 546, 160);  // K: one full 128 tile and a partial one
        s.input = input;
        set_formats(&s, f, direction != 1, direction != 0);
        expect_correct(s);
        if (HasFailure()) return;
      }
    }
  }
}

// Different formats for the two outputs of one call. fp8 without blocks
// codes the columnwise output by transposing the rowwise codes only where
// both have the same dtype and scale; the first two pairs differ in one.
TEST_P(Quantize, MixedFormatsInOneCall) {
  const std::vector<std::pair<QuantizeFormatSpec, QuantizeFormatSpec>> pairs = {
      {{GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR}, {GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_TENSOR}},
      {{GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP}, {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR}},
      {{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE}, {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP}},
      {{GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE}, {GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE}},
      {{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR}, {GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_GROUP}},
      {{GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_TENSOR}, {GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE}},
      {{GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE}, {GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE}},
  };
  for (const auto& [row, col] : pairs) {
    QuantizeSpec s = ragged(edge_sizes(12), 700, 272);
    s.rowwise_format = row;
    s.columnwise_format = col;
    expect_correct(s);
    if (HasFailure()) return;
  }
}

TEST_P(Quantize, EdgeSizes) {
  std::mt19937_64 rng = test_rng("quantize edge sizes");
  struct Sizes {
    const char* name;
    std::vector<int64_t> sizes;
    int64_t rows;
  };
  const std::vector<Sizes> cases = {
      {"G=1", {300}, 300},
      {"G=1 sum<M", {129}, 300},
      {"one hot", one_hot_sizes(8, 333, 5), 340},
      {"all empty", std::vector<int64_t>(8, 0), 64},
      {"sum<M", {31, 33, 1, 0, 2}, 200},
      {"G=256", random_sizes(256, 3000, rng), 3072},
      {"G=300 edges", edge_sizes(300), 14000},
      // Groups longer than one piece of the amax launch's stream, the last
      // piece of each short.
      {"two long groups", {20000, 1234}, 21300},
      {"M=0", {0, 0}, 0},
  };
  const QuantizeFormatSpec formats[] = {{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE},
                                        {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP},
                                        {GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE},
                                        {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR}};
  for (const Sizes& c : cases) {
    for (const QuantizeFormatSpec& f : formats) {
      SCOPED_TRACE(c.name);
      QuantizeSpec s = ragged(c.sizes, c.rows, 96);
      set_formats(&s, f, true, true);
      expect_correct(s);
      if (HasFailure()) return;
    }
  }
}

// Each tile height on every ragged format, both directions, every input
// type: seven groups whose sizes straddle the height (h - 1, h, h + 1, two
// tiles and a bit) among 0, 1 and 33, with M = 7 h so that the plan picks h
// (1x128 columnwise blocks run at 128 where others run at 64; fp32 input
// has no 256-token tiles, and a height whose CTA the device's shared memory
// cannot hold gives way to the next lower one).
TEST_P(Quantize, SmallEveryTileHeight) {
  const auto fits = [&](gg_dtype input, int h) {
    return quantize_tiles_fit(input == GG_DTYPE_FP32 ? 4 : 2, h, shared_bytes_per_block());
  };
  std::set<int> heights;
  for (const int64_t h : {64, 128, 256}) {
    std::vector<int64_t> sizes = {h - 1, 0, h, 1, h + 1, 33, 2 * h + 5};
    // Groups averaging h rows; for 64 half that, as fp8 codes of routed
    // groups take 64-token tiles only up to 32 rows a group (quantize_plan.h).
    if (h == 64) sizes.resize(14, 0);
    for (gg_dtype input : {GG_DTYPE_BF16, GG_DTYPE_FP16, GG_DTYPE_FP32}) {
      for (const QuantizeFormatSpec& f : ragged_formats()) {
        QuantizeSpec s = ragged(sizes, 7 * h, 160);
        s.input = input;
        set_formats(&s, f, true, true);
        int expected = f.block == GG_BLOCK_1X128 && h == 64 ? 128 : static_cast<int>(h);
        if (expected == 256 && (input == GG_DTYPE_FP32 || !fits(input, 256))) expected = 128;
        if (expected == 128 && f.block != GG_BLOCK_1X128 && !fits(input, 128)) expected = 64;
        const int rows = tile_rows(s);
        SCOPED_TRACE("tiles of " + std::to_string(rows) + " tokens");
        EXPECT_EQ(rows, expected);
        heights.insert(rows);
        expect_correct(s);
        if (HasFailure()) return;
      }
    }
  }
  const bool tall_fit = fits(GG_DTYPE_BF16, 256);
  EXPECT_EQ(heights, (tall_fit ? std::set<int>{64, 128, 256} : std::set<int>{64, 128}));
}

// Outputs whose codes ignore the groups (fp8 under a tensor scale, rowwise
// blocks along K), and fp8 under group scales (each row of a tile that
// crosses groups under its own group's scale), take each chunk's rows as
// one span, in both launches when only the
// tensor's amax is needed: unaligned group ends, sums
// short of M, bad sizes, M off 16-byte columnwise rows, and a graph
// replayed after the sizes changed.
TEST_P(Quantize, SmallGroupsAsOneSpan) {
  std::mt19937_64 rng = test_rng("quantize one span");
  struct Outputs {
    QuantizeFormatSpec row;
    bool columnwise;
    QuantizeFormatSpec col;
  };
  const QuantizeFormatSpec fp8_tensor{GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR};
  const QuantizeFormatSpec e5m2_tensor{GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_TENSOR};
  const QuantizeFormatSpec nvfp4_tensor{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR};
  const QuantizeFormatSpec fp8_group{GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP};
  const std::vector<Outputs> outputs = {
      {fp8_tensor, true, fp8_tensor},
      {e5m2_tensor, true, e5m2_tensor},
      {{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE}, true, e5m2_tensor},
      {nvfp4_tensor, true, fp8_tensor},
      {{GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE}, false, {}},
      {nvfp4_tensor, false, {}},
      // Group scales: rows under their own groups' scales.
      {fp8_group, true, fp8_group},
      {{GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_GROUP}, false, {}},
  };
  struct Sizes {
    const char* name;
    std::vector<int64_t> sizes;
    int64_t rows;
    int64_t k;
  };
  // Spans of 64, 128 and (from 65536 rows) 256-token tiles.
  const std::vector<Sizes> cases = {
      {"edges, sum<M", edge_sizes(12), 700, 160},
      {"M off 16", {33, 0, 1, 129, 31}, 203, 160},
      {"G=256", random_sizes(256, 3000, rng), 3072, 160},
      {"G=300 edges", edge_sizes(300), 14000, 64},
      {"one hot", one_hot_sizes(8, 333, 5), 340, 160},
      {"all empty", std::vector<int64_t>(8, 0), 64, 160},
      {"negative and past M", {-1, 500, 7}, 256, 160},
      {"tall span", random_sizes(32, 65536 - 77, rng), 65536, 48},
  };
  for (const Outputs& o : outputs) {
    for (const Sizes& c : cases) {
      SCOPED_TRACE(c.name);
      QuantizeSpec s = ragged(c.sizes, c.rows, c.k);
      s.amax = false;
      s.rowwise_format = o.row;
      s.columnwise = o.columnwise;
      s.columnwise_format = o.col;
      expect_correct(s);
      if (HasFailure()) return;
    }
  }
  // Captured once, replayed after the sizes changed on the device.
  QuantizeSpec s = ragged(uniform_sizes(12, 300), 384, 136);
  s.amax = false;
  s.rowwise_format = fp8_tensor;
  s.columnwise_format = fp8_tensor;
  const std::vector<std::vector<int64_t>> reroutes = {
      random_sizes(12, 370, rng), one_hot_sizes(12, 384, 3), std::vector<int64_t>(12, 0),
      {-3, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 300}};
  expect_graph_replays(s, reroutes);
  if (HasFailure()) return;
  s.rowwise_format = fp8_group;
  s.columnwise_format = fp8_group;
  expect_graph_replays(s, reroutes);
}

// Outputs whose only tie to the groups is a columnwise output's blocks
// along tokens (mxfp8, nvfp4 under a tensor scale, 1 x 128), on groups
// padded to those blocks, which each chunk codes as one group
// (groups_only_restart_column_blocks): partial last groups, empty groups,
// sums short of M and past it, a negative size, M off 16, each tile
// height, G = 256 with one chunk padded and the other not (either way
// round, so the second chunk's blocks count from a row off every grid), a
// group off the grid, tensor scales without the amax output (whose amax
// launch reads the rows as one span) on input rows of 16-byte multiples
// and not, and a graph replayed between padded and unpadded sizes.
TEST_P(Quantize, SmallPaddedGroupsAsOne) {
  std::mt19937_64 rng = test_rng("quantize padded groups");
  struct Outputs {
    bool rowwise;
    QuantizeFormatSpec row;
    QuantizeFormatSpec col;
    int64_t block;  // the columnwise block, which the groups are padded to
  };
  const QuantizeFormatSpec mxfp8{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE};
  const QuantizeFormatSpec nvfp4{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR};
  const QuantizeFormatSpec fp8_1x128{GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE};
  const std::vector<Outputs> outputs = {
      {true, mxfp8, mxfp8, 32},
      {false, {}, {GG_DTYPE_E5M2, GG_BLOCK_MX32, GG_SCALE_NONE}, 32},
      {true, {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR}, mxfp8, 32},
      {true, nvfp4, nvfp4, 16},
      {true, fp8_1x128, fp8_1x128, 128},
  };
  std::set<int> heights;
  for (const Outputs& o : outputs) {
    const int64_t b = o.block;
    struct Sizes {
      std::string name;
      std::vector<int64_t> sizes;
      int64_t rows;
    };
    // M even throughout: nvfp4's columnwise rows hold two tokens a byte.
    std::vector<Sizes> cases = {
        {"padded, sum<M", padded_sizes(12, 24 * b + b / 2 + 3, b, rng), 24 * b + b},
        {"negative and past M", {-1, 2 * b, 0, b, 10 * b}, 5 * b + 8},
        {"M off 16", {b, 0, 2 * b, b + 5}, 4 * b + 14},
        {"all empty", std::vector<int64_t>(6, 0), 3 * b},
        {"one hot", one_hot_sizes(8, 3 * b + 1, 2), 4 * b},
        {"a group off the grid", {b, 2 * b, b + 1, b, 2 * b}, 7 * b + 2},
    };
    for (const int64_t average : {32, 64, 128, 256}) {
      cases.push_back({"averaging " + std::to_string(average) + " rows",
                       padded_sizes(16, 16 * average - 5, b, rng), 16 * average});
    }
    std::vector<int64_t> padded = padded_sizes(128, 128 * 3 * b + 7, b, rng);
    std::vector<int64_t> unpadded = random_sizes(128, 128 * 3 * b + 9, rng);
    std::vector<int64_t> first_padded = padded, first_unpadded = unpadded;
    first_padded.insert(first_padded.end(), unpadded.begin(), unpadded.end());
    first_unpadded.insert(first_unpadded.end(), padded.begin(), padded.end());
    cases.push_back({"G=256, chunk 0 padded", first_padded, sum_of(first_padded) / 2 * 2 + 2});
    cases.push_back(
        {"G=256, chunk 1 padded", first_unpadded, (sum_of(first_unpadded) + 1) / 2 * 2});
    for (const Sizes& c : cases) {
      SCOPED_TRACE(c.name);
      QuantizeSpec s = ragged(c.sizes, c.rows, 160);
      s.rowwise = o.rowwise;
      s.rowwise_format = o.row;
      s.columnwise_format = o.col;
      const int rows = tile_rows(s);
      SCOPED_TRACE("tiles of " + std::to_string(rows) + " tokens");
      heights.insert(rows);
      expect_correct(s);
      if (HasFailure()) return;
      // Without the amax output a tensor scale's amax launch reads all the
      // groups' rows as one span (needs_tensor_amax_only): a stream where
      // the input rows are 16-byte multiples (K = 160), tiles where not
      // (K = 164; nvfp4 columnwise only, as its rows would end mid-block).
      if ((o.rowwise && o.row.extent == GG_SCALE_TENSOR) || o.col.extent == GG_SCALE_TENSOR) {
        s.amax = false;
        expect_correct(s);
        if (HasFailure()) return;
        s.k = 164;
        s.rowwise = o.rowwise && o.row.dtype != GG_DTYPE_E2M1;
        expect_correct(s);
        if (HasFailure()) return;
      }
    }
  }
  const bool tall_fit = quantize_tiles_fit(2, 256, shared_bytes_per_block());
  EXPECT_EQ(heights, (tall_fit ? std::set<int>{64, 128, 256} : std::set<int>{64, 128}));
  // Captured once, replayed after the sizes changed on the device.
  for (const Outputs& o : {outputs[0], outputs[4]}) {
    QuantizeSpec s = ragged(padded_sizes(12, 12 * o.block, o.block, rng), 13 * o.block, 136);
    s.rowwise_format = o.row;
    s.columnwise_format = o.col;
    expect_graph_replays(s, {random_sizes(12, 12 * o.block, rng),
                             padded_sizes(12, 12 * o.block + 3, o.block, rng),
                             std::vector<int64_t>(12, 0),
                             {-3, o.block, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20 * o.block}});
    if (HasFailure()) return;
  }
}

// CTAs that code more of one chunk's tiles than the ring of tile
// descriptors holds (quantize_kernel.cuh's kRingSlots, 16), so that the
// ring wraps: in batches of eight, a batch ahead (a span launch: fp8 under
// group scales of fp32 input, on 128-token tiles, one CTA an SM), and a
// tile at a time (per-group tiles of groups of 0-3 rows over many K-tiles:
// mxfp8 on 64-token tiles, at most four CTAs an SM, and fp8 1x128 on
// 128-token tiles). Every CTA gets at least 20 tiles.
TEST_P(Quantize, DescriptorRingWraps) {
  std::mt19937_64 rng = test_rng("quantize ring wraps");
  int device = 0, sms = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
             "cudaDeviceGetAttribute");
  constexpr int64_t kTilesEachCta = 20;
  {
    SCOPED_TRACE("span launch");
    const int64_t tiles_k = 24;
    const int64_t windows = (kTilesEachCta * sms + tiles_k - 1) / tiles_k;
    const int64_t rows = windows * 128 - 50;  // the last window partial
    QuantizeSpec s = ragged(random_sizes(64, rows - 30, rng), rows, tiles_k * 128 - 40);
    s.input = GG_DTYPE_FP32;
    s.amax = false;
    set_formats(&s, {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP}, true, true);
    ASSERT_EQ(tile_rows(s), 128);
    expect_correct(s);
    if (HasFailure()) return;
  }
  std::vector<int64_t> sizes(128);
  for (size_t g = 0; g < sizes.size(); ++g) sizes[g] = static_cast<int64_t>(g % 4);
  const int64_t tiles_k = (kTilesEachCta * 4 * sms + 95) / 96;  // 96 groups hold rows
  const QuantizeFormatSpec per_group[] = {{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE},
                                           {GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE}};
  for (const QuantizeFormatSpec& f : per_group) {
    SCOPED_TRACE("per-group tiles");
    QuantizeSpec s = ragged(sizes, 200, tiles_k * 128 - 40);
    set_formats(&s, f, true, true);
    ASSERT_EQ(tile_rows(s), f.block == GG_BLOCK_1X128 ? 128 : 64);
    expect_correct(s);
    if (HasFailure()) return;
  }
}

// Groups placed by offsets: unaligned starts, gaps between groups (never
// written), int64 indices.
TEST_P(Quantize, OffsetsAndInt64Sizes) {
  for (const QuantizeFormatSpec& f : ragged_formats()) {
    QuantizeSpec s = ragged({33, 0, 129, 7, 64}, 400, 144);
    s.offsets = {3, 40, 41, 177, 301};
    s.index_type = GG_INDEX_INT64;
    set_formats(&s, f, true, true);
    expect_correct(s);
    if (HasFailure()) return;
  }
}

TEST_P(Quantize, SmallStackedWeights) {
  // N: one full 128 block and a partial one, whose columnwise rows start
  // off 16-byte chunks (the copy-out's shifted stores); two full ones, whose
  // rows start on chunks (its plain vector stores).
  for (const int64_t rows : {200, 256}) {
    for (gg_dtype input : {GG_DTYPE_BF16, GG_DTYPE_FP32}) {
      for (const QuantizeFormatSpec& f : stacked_formats()) {
        QuantizeSpec s;
        s.stacked = true;
        s.groups = 3;
        s.rows = rows;
        s.k = 272;
        s.input = input;
        set_formats(&s, f, true, true);
        expect_correct(s);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_P(Quantize, StackedGroupCountsAndBlockEdges) {
  // One matrix and 256 of them, each N one short of a 128 block and one
  // past it (a 1-row partial block), K off the 128 blocks. e2m1 takes even
  // N (columnwise, two tokens a byte): 126 and 130.
  for (const int32_t groups : {1, 256}) {
    for (const int64_t rows : {127, 129}) {
      for (const QuantizeFormatSpec& f : stacked_formats()) {
        QuantizeSpec s;
        s.stacked = true;
        s.groups = groups;
        s.rows = f.dtype == GG_DTYPE_E2M1 ? rows + (rows < 128 ? -1 : 1) : rows;
        s.k = 160;
        set_formats(&s, f, true, true);
        expect_correct(s);
        if (HasFailure()) return;
      }
    }
  }
}

TEST_P(Quantize, NanInfinityZerosAndSubnormals) {
  for (gg_dtype input : {GG_DTYPE_BF16, GG_DTYPE_FP16, GG_DTYPE_FP32}) {
    for (const QuantizeFormatSpec& f : stacked_formats()) {
      QuantizeSpec s;
      if (f.block == GG_BLOCK_128X128) {
        s.stacked = true;
        s.groups = 2;
        s.rows = 136;
      } else {
        s = ragged(edge_sizes(9), 520, 0);
      }
      s.k = 144;
      s.input = input;
      s.values = QuantizeValues::kSpecials;
      set_formats(&s, f, true, true);
      expect_correct(s);
      if (HasFailure()) return;
    }
  }
}

TEST_P(Quantize, AmaxOnly) {
  QuantizeSpec s = ragged(edge_sizes(7), 460, 200);
  s.rowwise = false;
  s.columnwise = false;
  expect_correct(s);
}

// Runs back to back on one workspace, its scratch poisoned in between: the
// amax words the first run left must not reach the second, and the results
// are the same.
TEST_P(Quantize, SmallRepeatedRunsOnOneWorkspace) {
  for (const QuantizeFormatSpec& f :
       {QuantizeFormatSpec{GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP},
        QuantizeFormatSpec{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR}}) {
    QuantizeSpec s = ragged(edge_sizes(6), 400, 136);
    set_formats(&s, f, true, true);
    expect_correct(s, 3);
    if (HasFailure()) return;
  }
}

TEST_P(Quantize, SmallBadSizesClampedAndFlagged) {
  struct Bad {
    const char* name;
    std::vector<int64_t> sizes;
    std::vector<int64_t> offsets;
  };
  // Values for M = 256, scaled with M: three groups in M = 96, 256 and
  // 768 take tiles of 64, 128 and 256 tokens.
  const std::vector<Bad> cases = {
      {"negative", {40, -5, 33}, {}},
      {"sum past M", {100, 150, 90}, {}},
      {"negative and past M", {-1, 500, 7}, {}},
      {"offset out of range", {10, 20, 30}, {-4, 50, 260}},
      {"offset plus size past M", {10, 20, 100}, {0, 30, 200}},
  };
  const auto scaled = [](std::vector<int64_t> values, int64_t rows) {
    for (int64_t& v : values) v = v * rows / 256;
    return values;
  };
  for (const int64_t rows : {96, 256, 768}) {
    for (const Bad& c : cases) {
      for (const QuantizeFormatSpec& f :
           {QuantizeFormatSpec{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE},
            QuantizeFormatSpec{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP}}) {
        SCOPED_TRACE(std::string(c.name) + ", M = " + std::to_string(rows));
        QuantizeSpec s = ragged(scaled(c.sizes, rows), rows, 64);
        s.offsets = scaled(c.offsets, rows);
        set_formats(&s, f, true, true);
        expect_correct(s);
        if (HasFailure()) return;
      }
    }
  }
}

// Graph replays after the sizes changed on the device. Twelve
// groups in 384 rows take 64-token tiles (1x128: 128), two in 768 rows
// 256-token tiles.
TEST_P(Quantize, SmallGraphReplaysWithChangedSizes) {
  std::mt19937_64 rng = test_rng("quantize graph");
  struct Routing {
    std::vector<int64_t> captured;
    int64_t rows;
    std::vector<std::vector<int64_t>> reroutes;
  };
  const std::vector<Routing> routings = {
      {uniform_sizes(12, 300),
       384,
       {random_sizes(12, 370, rng), {0, 0, 123, 0, 123, 0, 0, 1, 0, 0, 0, 0},
        one_hot_sizes(12, 370, 6), std::vector<int64_t>(12, 0), uniform_sizes(12, 384)}},
      {{300, 255},
       768,
       {random_sizes(2, 700, rng), {0, 513}, {768, 0}, {0, 0}, {257, 511}}},
  };
  for (const Routing& routing : routings) {
    for (const QuantizeFormatSpec& f :
         {QuantizeFormatSpec{GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR},
          QuantizeFormatSpec{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE},
          QuantizeFormatSpec{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP},
          QuantizeFormatSpec{GG_DTYPE_E5M2, GG_BLOCK_1X128, GG_SCALE_NONE}}) {
      QuantizeSpec s = ragged(routing.captured, routing.rows, 136);
      set_formats(&s, f, true, true);
      expect_graph_replays(s, routing.reroutes);
      if (HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, Quantize, ::testing::ValuesIn(gpu_paths()), ParamName());

}  // namespace
}  // namespace gg::test

// The library-wide entry points: version, status strings, the last-error
// contract, and the shape of block-scale tensors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <thread>

#include "problems.h"

namespace gg_test {
namespace {

using ::testing::HasSubstr;

TEST(Version, MatchesTheHeader) {
  EXPECT_EQ(gg_version(), GG_VERSION_MAJOR * 10000 + GG_VERSION_MINOR * 100 + GG_VERSION_PATCH);
  const std::string expected = std::to_string(GG_VERSION_MAJOR) + "." +
                               std::to_string(GG_VERSION_MINOR) + "." +
                               std::to_string(GG_VERSION_PATCH);
  EXPECT_EQ(gg_version_string(), expected) << "CMake's project version and the header agree";
}

TEST(StatusString, EveryStatusHasItsOwnName) {
  const gg_status all[] = {GG_STATUS_SUCCESS,       GG_STATUS_INVALID_ARGUMENT,
                           GG_STATUS_NOT_SUPPORTED, GG_STATUS_WORKSPACE_TOO_SMALL,
                           GG_STATUS_NO_DEVICE,     GG_STATUS_CUDA_ERROR,
                           GG_STATUS_INTERNAL_ERROR};
  std::set<std::string> names;
  for (gg_status status : all) {
    const std::string name = gg_status_string(status);
    EXPECT_FALSE(name.empty());
    EXPECT_NE(name, "unknown status");
    names.insert(name);
  }
  EXPECT_EQ(names.size(), std::size(all));
  EXPECT_STREQ(gg_status_string(GG_STATUS_SUCCESS), "success");
  EXPECT_STREQ(gg_status_string(GG_STATUS_WORKSPACE_TOO_SMALL), "workspace too small");
  EXPECT_STREQ(gg_status_string(raw_enum<gg_status>(42)), "unknown status");
}

TEST(LastError, ClearedBySuccess) {
  size_t bytes = 0;
  ASSERT_EQ(gg_grouped_gemm_workspace_size(nullptr, &bytes), GG_STATUS_INVALID_ARGUMENT);
  ASSERT_STRNE(gg_last_error(), "");
  GemmProblem p = ragged_m_problem();
  ASSERT_EQ(gg_grouped_gemm_workspace_size(&p.desc, &bytes), GG_STATUS_SUCCESS);
  EXPECT_STREQ(gg_last_error(), "");

  int64_t shape[2];
  ASSERT_EQ(gg_block_scale_shape(GG_BLOCK_NONE, 1, 1, 0, 0, 1, shape), GG_STATUS_INVALID_ARGUMENT);
  ASSERT_EQ(gg_block_scale_shape(GG_BLOCK_MX32, 1, 1, 0, 0, 1, shape), GG_STATUS_SUCCESS);
  EXPECT_STREQ(gg_last_error(), "");
}

TEST(LastError, ReadingItDoesNotClearIt) {
  size_t bytes = 0;
  ASSERT_EQ(gg_grouped_gemm_workspace_size(nullptr, &bytes), GG_STATUS_INVALID_ARGUMENT);
  gg_status_string(GG_STATUS_INVALID_ARGUMENT);
  gg_version();
  gg_version_string();
  EXPECT_STREQ(gg_last_error(), "desc is NULL");
  EXPECT_STREQ(gg_last_error(), "desc is NULL");
}

TEST(LastError, IsPerThread) {
  size_t bytes = 0;
  ASSERT_EQ(gg_grouped_gemm_workspace_size(nullptr, &bytes), GG_STATUS_INVALID_ARGUMENT);
  std::string other_thread_saw = "unset";
  std::thread other([&] {
    other_thread_saw = gg_last_error();
    gg_grouped_gemm_workspace_size(nullptr, nullptr);
  });
  other.join();
  EXPECT_EQ(other_thread_saw, "");
  EXPECT_STREQ(gg_last_error(), "desc is NULL");
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

struct Shape {
  gg_status status;
  int64_t rows, cols;
};

Shape block_scale_shape(gg_block_scaling scaling, int64_t rows, int64_t cols, int block_dim,
                        int ragged, int32_t groups) {
  int64_t out[2] = {-1, -1};
  const gg_status status =
      gg_block_scale_shape(scaling, rows, cols, block_dim, ragged, groups, out);
  return Shape{status, out[0], out[1]};
}

TEST(BlockScaleShape, OneScalePerBlockAlongTheBlockedDimension) {
  const struct {
    gg_block_scaling scaling;
    int64_t block;
  } scalings[] = {{GG_BLOCK_MX32, 32}, {GG_BLOCK_NV16, 16}, {GG_BLOCK_1X128, 128}};
  for (const auto& s : scalings) {
    for (int64_t length : {0, 1, 15, 16, 17, 31, 32, 33, 127, 128, 129, 4096, 7168}) {
      const Shape along_cols = block_scale_shape(s.scaling, 5, length, 1, 0, 1);
      EXPECT_EQ(along_cols.status, GG_STATUS_SUCCESS);
      EXPECT_EQ(along_cols.rows, 5);
      EXPECT_EQ(along_cols.cols, ceil_div(length, s.block)) << length;
      const Shape along_rows = block_scale_shape(s.scaling, length, 7, 0, 0, 1);
      EXPECT_EQ(along_rows.rows, ceil_div(length, s.block)) << length;
      EXPECT_EQ(along_rows.cols, 7);
    }
  }
}

TEST(BlockScaleShape, LargestExtent) {
  const int64_t most = int64_t{1} << 61;
  const Shape shape = block_scale_shape(GG_BLOCK_MX32, 3, most, 1, 1, 2);
  EXPECT_EQ(shape.status, GG_STATUS_SUCCESS);
  EXPECT_EQ(shape.cols, most / 32 + 2);
  EXPECT_EQ(block_scale_shape(GG_BLOCK_128X128, most, 1, 0, 0, 1).rows, most / 128);
}

TEST(BlockScaleShape, Tiles128x128) {
  const Shape shape = block_scale_shape(GG_BLOCK_128X128, 300, 129, 1, 0, 1);
  EXPECT_EQ(shape.status, GG_STATUS_SUCCESS);
  EXPECT_EQ(shape.rows, 3);
  EXPECT_EQ(shape.cols, 2);
  EXPECT_EQ(block_scale_shape(GG_BLOCK_128X128, 300, 129, 0, 0, 1).rows, 3)
      << "block_dim does not matter for square tiles";
}

// One fp32 scale per row: the block is the whole blocked dimension, or
// along a ragged dimension the whole group (one entry per group, any sizes).
TEST(BlockScaleShape, RowwiseHasOneBlockPerRowOrGroup) {
  for (int64_t length : {0, 1, 33, 7168}) {
    const Shape along_cols = block_scale_shape(GG_BLOCK_ROWWISE, 5, length, 1, 0, 1);
    EXPECT_EQ(along_cols.status, GG_STATUS_SUCCESS);
    EXPECT_EQ(along_cols.rows, 5);
    EXPECT_EQ(along_cols.cols, 1) << length;
    const Shape along_rows = block_scale_shape(GG_BLOCK_ROWWISE, length, 7, 0, 0, 1);
    EXPECT_EQ(along_rows.rows, 1) << length;
    EXPECT_EQ(along_rows.cols, 7);
  }
  // Columnwise copy of ragged tokens [K, M]: one scale per (k, group).
  const Shape columnwise = block_scale_shape(GG_BLOCK_ROWWISE, 7168, 4096, 1, 1, 256);
  EXPECT_EQ(columnwise.status, GG_STATUS_SUCCESS);
  EXPECT_EQ(columnwise.rows, 7168);
  EXPECT_EQ(columnwise.cols, 256);
  // Ragged rows [M, P]: one scale per (group, p), even with fewer rows than groups.
  const Shape ragged_rows = block_scale_shape(GG_BLOCK_ROWWISE, 3, 64, 0, 1, 8);
  EXPECT_EQ(ragged_rows.rows, 8);
  EXPECT_EQ(ragged_rows.cols, 64);
}

// Largest number of blocks any sizes of `groups` groups summing to at most
// `rows` can take, blocks restarting at each group start: by exhaustion.
int64_t most_blocks(int64_t rows, int64_t block, int groups) {
  if (groups == 0) return 0;
  int64_t best = 0;
  for (int64_t size = 0; size <= rows; ++size) {
    best = std::max(best, ceil_div(size, block) + most_blocks(rows - size, block, groups - 1));
  }
  return best;
}

// The ragged capacity is floor(M / block) + min(G, M) (docs/ARCHITECTURE.md),
// and no sizes ever need more.
TEST(BlockScaleShape, RaggedCapacityHoldsAnySizes) {
  for (int groups : {1, 2, 3}) {
    for (int64_t rows : {0, 1, 5, 15, 16, 17, 33, 40}) {
      const Shape shape = block_scale_shape(GG_BLOCK_NV16, rows, 64, 0, 1, groups);
      ASSERT_EQ(shape.status, GG_STATUS_SUCCESS);
      EXPECT_EQ(shape.rows, rows / 16 + std::min<int64_t>(groups, rows))
          << "rows " << rows << " groups " << groups;
      EXPECT_GE(shape.rows, most_blocks(rows, 16, groups)) << "rows " << rows;
      EXPECT_EQ(shape.cols, 64);
    }
  }
  const Shape columnwise = block_scale_shape(GG_BLOCK_MX32, 7168, 4096, 1, 1, 256);
  EXPECT_EQ(columnwise.rows, 7168);
  EXPECT_EQ(columnwise.cols, 4096 / 32 + 256);
}

TEST(BlockScaleShape, BadArguments) {
  const struct {
    gg_block_scaling scaling;
    int64_t rows, cols;
    int block_dim, ragged;
    int32_t groups;
    const char* message;
  } cases[] = {
      {GG_BLOCK_NONE, 4, 4, 1, 0, 1, "scaling must be a block scaling other than GG_BLOCK_NONE"},
      {raw_enum<gg_block_scaling>(9), 4, 4, 1, 0, 1, "(got 9)"},
      {GG_BLOCK_MX32, -1, 4, 1, 0, 1, "rows (-1) and cols (4) must be >= 0"},
      {GG_BLOCK_MX32, 4, INT64_MAX, 1, 0, 1,
       "rows (4) and cols (9223372036854775807) must be at most 2^61"},
      {GG_BLOCK_128X128, INT64_MAX, 4, 1, 0, 1, "must be at most 2^61"},
      {GG_BLOCK_MX32, 4, 4, 2, 0, 1, "block_dim must be 0 or 1 (got 2)"},
      {GG_BLOCK_MX32, 4, 4, 1, 3, 1, "ragged must be 0 or 1 (got 3)"},
      {GG_BLOCK_MX32, 4, 4, 0, 1, 0, "num_groups must be > 0 when ragged (got 0)"},
      {GG_BLOCK_128X128, 4, 4, 0, 1, 2, "128x128 blocks cannot run along a ragged dimension"},
      {GG_BLOCK_ROWWISE, 4, 4, 1, 1, 0, "num_groups must be > 0 when ragged (got 0)"},
      {GG_BLOCK_ROWWISE, -2, 4, 1, 0, 1, "rows (-2) and cols (4) must be >= 0"},
  };
  for (const auto& c : cases) {
    int64_t out[2];
    EXPECT_EQ(gg_block_scale_shape(c.scaling, c.rows, c.cols, c.block_dim, c.ragged, c.groups, out),
              GG_STATUS_INVALID_ARGUMENT)
        << c.message;
    EXPECT_THAT(gg_last_error(), HasSubstr(c.message));
  }
  EXPECT_EQ(gg_block_scale_shape(GG_BLOCK_MX32, 4, 4, 0, 0, 1, nullptr),
            GG_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(gg_last_error(), "out is NULL");
}

}  // namespace
}  // namespace gg_test

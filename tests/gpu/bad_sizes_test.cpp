// Device-side sizes the host never sees may be wrong: negative, summing past
// the row capacity M, huge enough to overflow a 32-bit prefix sum, or with
// offsets outside [0, M]. Whatever they say, a path must not write outside
// its output (guard bands), must compute exactly what the clamping rule
// defines (the reference applies the same rule), and gg_check must report
// the right GG_DEVICE_* bits, then clear them. The expected bits are written
// out by hand from the rule, not computed.
#include <gtest/gtest.h>
#include <stdint.h>

#include <limits>
#include <string>
#include <vector>

#include "gpu/gemm_case.h"
#include "gpu/path_test.h"

namespace gg::test {
namespace {

class BadSizes : public PathTest<gg_path> {
 protected:
  // Runs the sizes (and offsets) as ragged-M and as ragged-K on M = 256 rows,
  // with stacked and with per-expert weights (ragged-M rhs, ragged-K out).
  void expect_clamped(const std::string& name, const std::vector<int64_t>& sizes,
                      const std::vector<int64_t>& offsets, gg_index_type type, uint32_t flags) {
    for (bool pointers : {false, true}) {
      GemmSpec s;
      s.name = name + (pointers ? ", per-expert" : "");
      s.m = 256;
      s.n = 72;
      s.k = 40;
      s.sizes = sizes;
      s.offsets = offsets;
      s.index_type = type;
      s.expected_flags = flags;
      s.pointer_array = pointers;
      s.op = GG_OP_RAGGED_M;
      s.rhs_layout = GG_LAYOUT_T;
      run_and_check(s, path(), stream());
      s.op = GG_OP_RAGGED_K;
      s.rhs_layout = GG_LAYOUT_N;
      s.out = GG_DTYPE_FP32;
      run_and_check(s, path(), stream());
      // Accumulating into the fp32 output (beta = 1), as into a main grad.
      s.beta.value = 1.0f;
      run_and_check(s, path(), stream());
    }
  }
};

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kHuge64 = int64_t{1} << 40;

TEST_P(BadSizes, SmallNegativeSizes) {
  expect_clamped("negative sizes", {-5, 100, -1, 50, 30}, {}, GG_INDEX_INT32,
                 GG_DEVICE_NEGATIVE_SIZE);
  expect_clamped("most negative", {std::numeric_limits<int32_t>::min(), 64, 0, 1}, {},
                 GG_INDEX_INT32, GG_DEVICE_NEGATIVE_SIZE);
}

TEST_P(BadSizes, SmallSumExceedsRows) {
  // 100 + 100 + 56 (cut) + 0: the last group starts at M and is empty.
  expect_clamped("sum 400 > 256", {100, 100, 100, 100}, {}, GG_INDEX_INT32,
                 GG_DEVICE_SIZES_EXCEED_ROWS);
  expect_clamped("one group past M", {257}, {}, GG_INDEX_INT64, GG_DEVICE_SIZES_EXCEED_ROWS);
}

TEST_P(BadSizes, SmallHugeSizes) {
  // A 32-bit prefix sum of these would wrap around to small, valid-looking
  // offsets.
  expect_clamped("int32 max", {kInt32Max, kInt32Max, 5, 7}, {}, GG_INDEX_INT32,
                 GG_DEVICE_SIZES_EXCEED_ROWS);
  expect_clamped("int64 huge", {10, kHuge64, kHuge64, 3}, {}, GG_INDEX_INT64,
                 GG_DEVICE_SIZES_EXCEED_ROWS);
  expect_clamped("negative and huge", {-1, kInt32Max, 10, 0}, {}, GG_INDEX_INT32,
                 GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS);
}

TEST_P(BadSizes, SmallOffsetsOutOfRange) {
  // Offsets -3 and 300 are pulled to 0 and M; their groups are empty, so only
  // the offset bit is raised.
  expect_clamped("offsets out of range", {0, 10, 0, 20}, {-3, 0, 300, 10}, GG_INDEX_INT32,
                 GG_DEVICE_OFFSET_OUT_OF_RANGE);
  // A group starting at a huge offset lands at M and its rows are cut.
  expect_clamped("huge offset", {5, 100, 40}, {0, 100, kHuge64}, GG_INDEX_INT64,
                 GG_DEVICE_OFFSET_OUT_OF_RANGE | GG_DEVICE_SIZES_EXCEED_ROWS);
  // A group running past M from a valid offset is cut at M.
  expect_clamped("group past M", {30, 50}, {0, 230}, GG_INDEX_INT32, GG_DEVICE_SIZES_EXCEED_ROWS);
}

INSTANTIATE_TEST_SUITE_P(Paths, BadSizes, ::testing::ValuesIn(gpu_paths()), ParamName());

}  // namespace
}  // namespace gg::test

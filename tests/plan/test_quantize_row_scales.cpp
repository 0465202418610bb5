// The grouped quantizer's addressing of row scales (GG_BLOCK_ROWWISE:
// kernels/quantize/quantize_params.h's set_row_scale_geometry and
// row_scale_entry), against the reference's own (block_scales_of): every
// output row of every group, rowwise and columnwise, ragged and stacked,
// on edge group sizes. The kernels gather each row's max into the word of
// that entry and store the row's scale there.
#include <gtest/gtest.h>
#include <stdint.h>

#include <vector>

#include "kernels/quantize/quantize_params.h"
#include "reference/block_scales.h"
#include "reference/group_table.h"
#include "reference/matrix_view.h"

namespace gg {
namespace {

struct Case {
  bool stacked;
  bool columnwise;
};

// Every output row of every group: the kernel's entry against the
// reference's (its scale matrix's offset from the tensor's first entry,
// plus the row's index in it).
void check_rows(const Case& c, const std::vector<int32_t>& sizes, int64_t rows, int64_t k) {
  const int32_t groups = static_cast<int32_t>(sizes.size());
  uint32_t flags = 0;
  const gg_group_sizes group_sizes{sizes.data(), nullptr, GG_INDEX_INT32};
  const ref::GroupTable table = c.stacked ? ref::stacked_groups(groups, rows)
                                          : ref::read_groups(group_sizes, groups, rows, &flags);
  // The output: rowwise [M, K] or [G, N, K]; columnwise [K, M] or [G, K, N].
  const int64_t out_rows = c.columnwise ? k : rows;
  const int64_t out_cols = c.columnwise ? rows : k;
  std::vector<float> scales(static_cast<size_t>(
      quantize::row_scale_entries(c.columnwise, c.stacked, groups, rows, k)));
  gg_tensor t{};
  t.dtype = GG_DTYPE_E4M3;
  t.block_scaling = GG_BLOCK_ROWWISE;
  t.block_scales = scales.data();
  t.rank = c.stacked ? 3 : 2;
  if (c.stacked) {
    t.shape[0] = groups;
    t.strides[0] = out_rows * out_cols;
  }
  t.shape[t.rank - 2] = out_rows;
  t.shape[t.rank - 1] = out_cols;
  t.strides[t.rank - 2] = out_cols;
  t.strides[t.rank - 1] = 1;
  quantize::OutputParams out{};
  quantize::set_row_scale_geometry(&out, c.columnwise, c.stacked, groups, out_rows);
  const ref::TokenDim tokens = c.columnwise ? ref::TokenDim::kCols : ref::TokenDim::kRows;
  int64_t checked = 0;
  for (int32_t g = 0; g < groups; ++g) {
    const ref::MatrixView m = ref::matrix_of(t, g);
    const ref::Region region =
        ref::group_region(m.rows, m.cols, tokens, table.groups[static_cast<size_t>(g)]);
    const ref::BlockScales s = ref::block_scales_of(t, g, region, true, tokens, table);
    const int64_t matrix_offset = static_cast<const float*>(s.base) - scales.data();
    for (int64_t r = region.row_begin; r < region.row_end; ++r) {
      const int64_t expected = matrix_offset + s.index(r - region.row_begin, 0);
      ASSERT_EQ(quantize::row_scale_entry(out, c.columnwise, c.stacked, c.stacked ? g : 0, g, r),
                expected)
          << "group " << g << " row " << r;
      ASSERT_LT(expected, static_cast<int64_t>(scales.size()));
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

TEST(QuantizeRowScales, EntriesAreTheReferences) {
  const std::vector<int32_t> edge = {0, 1, 31, 33, 0, 128, 129, 5};  // sum 327
  for (const Case c : {Case{false, false}, Case{false, true}, Case{true, false},
                       Case{true, true}}) {
    SCOPED_TRACE(testing::Message() << "stacked " << c.stacked << " columnwise " << c.columnwise);
    check_rows(c, edge, c.stacked ? 40 : 340, 160);  // ragged: sum < M
    check_rows(c, {7}, 7, 1);                          // G = 1, K = 1
    check_rows(c, std::vector<int32_t>(256, 3), c.stacked ? 3 : 768, 96);  // G = 256
  }
}

}  // namespace
}  // namespace gg

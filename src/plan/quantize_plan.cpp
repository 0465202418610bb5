// The grouped quantizer's tile height (see quantize_plan.h).
#include "plan/quantize_plan.h"

#include <string>

#include "api/names.h"

namespace gg {

QuantizePlan plan_quantize(const QuantizeShape& shape) {
  const bool whole = shape.stacked || shape.one_span || shape.groups <= 0;
  const int64_t rows_per_group = whole ? shape.rows : shape.rows / shape.groups;
  QuantizePlan plan{shape, 128,
                    (shape.stacked    ? "matrices of "
                     : shape.one_span ? "groups as one span of "
                                      : "groups average ") +
                        std::to_string(rows_per_group) + " rows"};
  const int input_bytes = shape.input == GG_DTYPE_FP32 ? 4 : 2;
  const bool needs_128 = shape.square_blocks || shape.long_column_blocks;
  if (shape.square_blocks) {
    plan.reason = "128 x 128 blocks";
  } else if (shape.long_column_blocks && rows_per_group < kQuantizeLongGroupRows) {
    plan.reason = "columnwise 1 x 128 blocks";
  } else if (rows_per_group <= kQuantizeShortGroupRowsFp8 ||
             (rows_per_group <= kQuantizeShortGroupRows &&
              (shape.stacked || shape.e2m1_codes || shape.input == GG_DTYPE_FP32))) {
    plan.tile_rows = 64;
  } else if (rows_per_group >= (shape.one_span ? kQuantizeTallSpanRows : kQuantizeLongGroupRows)) {
    if (shape.input == GG_DTYPE_FP32) {
      plan.reason += "; fp32 input has no 256-token tiles";
    } else if (quantize_tiles_fit(input_bytes, 256, shape.shared_bytes_per_block)) {
      plan.tile_rows = 256;
    } else {
      plan.reason += "; 256-token tiles exceed the device's shared memory";
    }
  }
  if (plan.tile_rows == 128 &&
      !quantize_tiles_fit(input_bytes, 128, shape.shared_bytes_per_block)) {
    if (needs_128) {
      plan.tile_rows = 0;
      plan.reason += "; its 128-token tiles (the least its blocks take) need " +
                     std::to_string(quantize_dynamic_smem_bytes(input_bytes, 128) +
                                    kQuantizeStaticSmem) +
                     " bytes of shared memory a CTA, the device allows " +
                     std::to_string(shape.shared_bytes_per_block);
    } else {
      plan.tile_rows = 64;
      plan.reason += "; 128-token tiles exceed the device's shared memory";
    }
  }
  return plan;
}

QuantizeShape quantize_shape(const gg_quantize_desc& d, int64_t shared_bytes_per_block) {
  const bool stacked = d.group_sizes.sizes == nullptr;
  const auto has = [](const gg_tensor& t, gg_block_scaling scaling) {
    return t.data != nullptr && t.block_scaling == scaling;
  };
  const auto e2m1 = [](const gg_tensor& t) {
    return t.data != nullptr && t.dtype == GG_DTYPE_E2M1;
  };
  return QuantizeShape{d.input.shape[d.input.rank - 2],
                       d.num_groups,
                       stacked,
                       d.input.dtype,
                       has(d.rowwise, GG_BLOCK_128X128) || has(d.columnwise, GG_BLOCK_128X128),
                       has(d.columnwise, GG_BLOCK_1X128),
                       e2m1(d.rowwise) || e2m1(d.columnwise),
                       shared_bytes_per_block,
                       codes_ignore_groups(d) && d.amax == nullptr};
}

namespace {

// Ragged groups that lie back to back, by the prefix sum of their sizes:
// the only ones a span of rows may cover (offsets may leave gaps, whose
// rows are never written; stacked matrices are not ragged).
bool groups_back_to_back(const gg_quantize_desc& d) {
  return d.group_sizes.sizes != nullptr && d.group_sizes.offsets == nullptr;
}

// Whether an output's codes and scales, rowwise or columnwise, are the
// same wherever the groups start or end.
bool ignores_groups(const gg_tensor& out, bool rowwise) {
  return out.data == nullptr ||
         (out.scale_extent != GG_SCALE_GROUP && out.block_scaling != GG_BLOCK_128X128 &&
          (rowwise || out.block_scaling == GG_BLOCK_NONE));
}

}  // namespace

bool codes_ignore_groups(const gg_quantize_desc& d) {
  return groups_back_to_back(d) && ignores_groups(d.rowwise, true) &&
         ignores_groups(d.columnwise, false);
}

bool groups_only_restart_column_blocks(const gg_quantize_desc& d) {
  const gg_tensor& column = d.columnwise;
  const bool blocks_along_tokens =
      column.data != nullptr && column.scale_extent != GG_SCALE_GROUP &&
      (column.block_scaling == GG_BLOCK_1X128 || column.block_scaling == GG_BLOCK_MX32 ||
       column.block_scaling == GG_BLOCK_NV16);
  return groups_back_to_back(d) && ignores_groups(d.rowwise, true) && blocks_along_tokens;
}

bool group_scales_by_row(const gg_quantize_desc& d) {
  if (!groups_back_to_back(d)) return false;
  const gg_tensor& row = d.rowwise;
  const gg_tensor& column = d.columnwise;
  if (row.data == nullptr || row.block_scaling != GG_BLOCK_NONE ||
      row.scale_extent != GG_SCALE_GROUP || row.dtype == GG_DTYPE_E2M1) {
    return false;
  }
  return column.data == nullptr ||
         (column.block_scaling == GG_BLOCK_NONE && column.scale_extent == GG_SCALE_GROUP &&
          column.dtype == row.dtype);
}

bool needs_tensor_amax_only(const gg_quantize_desc& d) {
  const auto per_group_or_row = [](const gg_tensor& t) {
    return t.data != nullptr &&
           (t.scale_extent == GG_SCALE_GROUP || t.block_scaling == GG_BLOCK_ROWWISE);
  };
  return groups_back_to_back(d) && d.amax == nullptr && !per_group_or_row(d.rowwise) &&
         !per_group_or_row(d.columnwise);
}

std::string QuantizePlan::describe() const {
  const std::string problem = std::string("quantize ") + api::dtype_name(shape.input) +
                              (shape.stacked ? " stacked" : "") +
                              " rows=" + std::to_string(shape.rows) +
                              " G=" + std::to_string(shape.groups);
  if (tile_rows == 0) return problem + ": no tile height fits (" + reason + ")";
  return problem + ": tiles of " + std::to_string(tile_rows) + " tokens x 128, " +
         std::to_string(2 * tile_rows) + " threads (" + reason + ")";
}

}  // namespace gg

// The grouped quantizer's tile height (see quantize_plan.h).
#include "plan/quantize_plan.h"

#include <string>

#include "api/names.h"

namespace gg {

QuantizePlan plan_quantize(const QuantizeShape& shape) {
  const int64_t rows_per_group =
      shape.stacked || shape.groups <= 0 ? shape.rows : shape.rows / shape.groups;
  QuantizePlan plan{shape, 128,
                    (shape.stacked ? "matrices of " : "groups average ") +
                        std::to_string(rows_per_group) + " rows"};
  if (shape.square_blocks) {
    plan.reason = "128 x 128 blocks";
  } else if (shape.input == GG_DTYPE_FP32) {
    plan.reason = "fp32 input";
  } else if (shape.long_column_blocks) {
    plan.reason = "columnwise 1 x 128 blocks";
  } else if (rows_per_group <= kQuantizeShortGroupRows) {
    plan.tile_rows = 64;
  } else if (rows_per_group >= kQuantizeLongGroupRows) {
    if (quantize_tiles_fit(2, 256, shape.shared_bytes_per_block)) {
      plan.tile_rows = 256;
    } else {
      plan.reason += "; 256-token tiles exceed the device's shared memory";
    }
  }
  return plan;
}

QuantizeShape quantize_shape(const gg_quantize_desc& d, int64_t shared_bytes_per_block) {
  const bool stacked = d.group_sizes.sizes == nullptr;
  const auto has = [](const gg_tensor& t, gg_block_scaling scaling) {
    return t.data != nullptr && t.block_scaling == scaling;
  };
  return QuantizeShape{d.input.shape[d.input.rank - 2],
                       d.num_groups,
                       stacked,
                       d.input.dtype,
                       has(d.rowwise, GG_BLOCK_128X128) || has(d.columnwise, GG_BLOCK_128X128),
                       has(d.columnwise, GG_BLOCK_1X128),
                       shared_bytes_per_block};
}

std::string QuantizePlan::describe() const {
  return std::string("quantize ") + api::dtype_name(shape.input) + (shape.stacked ? " stacked" : "") +
         " rows=" + std::to_string(shape.rows) + " G=" + std::to_string(shape.groups) +
         ": tiles of " + std::to_string(tile_rows) + " tokens x 128, " +
         std::to_string(2 * tile_rows) + " threads (" + reason + ")";
}

}  // namespace gg

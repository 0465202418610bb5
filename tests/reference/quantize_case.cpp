// See quantize_case.h.
#include "quantize_case.h"

#include <gtest/gtest.h>
#include <math.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "format_model.h"
#include "quantize_model.h"
#include "reference/reference.h"

namespace gg::test {
namespace {

float float_of(uint32_t code) {
  float v;
  memcpy(&v, &code, sizeof v);
  return v;
}

constexpr uint32_t kUnwritten32 = 0xFFFFFFFFu;  // the fill of fresh outputs

// NaN-safe amax: a NaN wins.
float max_abs(float amax, float x) {
  if (isnan(amax) || isnan(x)) return NAN;
  return std::max(amax, fabsf(x));
}

}  // namespace

QuantizeCase::QuantizeCase(const QuantizeSetup& setup)
    : setup_(setup),
      groups_(setup.stacked ? setup.groups : static_cast<int32_t>(setup.sizes.size())) {
  std::mt19937 rng(setup.seed);
  const int32_t matrices = setup.stacked ? groups_ : 0;
  input = HostTensor(setup.input, matrices, setup.rows, setup.k, 2, false);
  input.fill(setup.range, rng);
  if (setup.stacked) {
    model_.assign(static_cast<size_t>(groups_), ModelGroup{0, setup.rows});
  } else {
    model_ = model_groups(setup.sizes, setup.offsets, setup.rows);
  }

  const QuantizeFormat& f = setup.format;
  const int64_t bs = model_block_elements(f.block);
  const bool square = f.block == GG_BLOCK_128X128;
  const auto make_output = [&](bool columnwise_output) {
    const int64_t rows = columnwise_output ? setup.k : setup.rows;
    const int64_t cols = columnwise_output ? setup.rows : setup.k;
    HostTensor out(f.dtype, matrices, rows, cols, 2, false);
    if (f.block != GG_BLOCK_NONE) {
      // Blocks along the output's columns; along a ragged input's tokens
      // (the columnwise output's columns) they restart at every group. A
      // rowwise block is the whole row there, or the whole group: one
      // column per group.
      const bool token_cols = columnwise_output && !setup.stacked;
      int64_t scale_cols = 0;
      if (f.block == GG_BLOCK_ROWWISE) {
        scale_cols = token_cols ? groups_ : 1;
      } else {
        scale_cols =
            token_cols ? model_block_capacity(setup.rows, bs, groups_) : ceil_div(cols, bs);
      }
      out.allocate_block_scales(f.block, square ? ceil_div(rows, bs) : rows, scale_cols);
    }
    if (f.extent != GG_SCALE_NONE) {
      const size_t count = f.extent == GG_SCALE_TENSOR ? 1 : static_cast<size_t>(groups_);
      out.set_scale(f.extent, std::vector<float>(count, float_of(kUnwritten32)));
    }
    return out;
  };
  if (setup.rowwise) rowwise = make_output(false);
  if (setup.columnwise) columnwise = make_output(true);
  amax.assign(static_cast<size_t>(groups_), float_of(kUnwritten32));

  sizes_bytes_ = index_array(setup.sizes, GG_INDEX_INT32);
  offsets_bytes_ = index_array(setup.offsets, GG_INDEX_INT32);
  desc.num_groups = groups_;
  desc.group_sizes.sizes = setup.stacked ? nullptr : sizes_bytes_.data();
  desc.group_sizes.offsets = setup.offsets.empty() ? nullptr : offsets_bytes_.data();
  desc.group_sizes.type = GG_INDEX_INT32;
  desc.input = input.view();
  if (setup.rowwise) desc.rowwise = rowwise.view();
  if (setup.columnwise) desc.columnwise = columnwise.view();
  desc.amax = setup.amax ? amax.data() : nullptr;
  desc.path = GG_PATH_REFERENCE;
}

uint32_t QuantizeCase::run() {
  uint32_t flags = 0;
  gg::ref::grouped_quantize(desc, &flags);
  return flags;
}

float QuantizeCase::input_value(bool columnwise_output, int32_t matrix, int64_t r,
                                int64_t c) const {
  return static_cast<float>(columnwise_output ? input.value(matrix, c, r)
                                              : input.value(matrix, r, c));
}

float QuantizeCase::group_amax(int32_t g) const {
  const ModelGroup& group = model_[static_cast<size_t>(g)];
  const int32_t matrix = setup_.stacked ? g : 0;
  float a = 0.0f;
  for (int64_t r = group.start; r < group.start + group.size; ++r)
    for (int64_t c = 0; c < setup_.k; ++c) a = max_abs(a, input_value(false, matrix, r, c));
  return a;
}

// The blocks of group g in one output, with their scale entries.
std::vector<QuantizeCase::Block> QuantizeCase::blocks(bool columnwise_output, int32_t g) const {
  const ModelGroup& group = model_[static_cast<size_t>(g)];
  const int32_t matrix = setup_.stacked ? g : 0;
  const int64_t end = group.start + group.size;
  const gg_block_scaling scaling = setup_.format.block;
  const int64_t bs = model_block_elements(scaling);
  std::vector<Block> all;
  if (scaling == GG_BLOCK_NONE) {
    // The whole group, scaled by its fp32 scale.
    if (columnwise_output) {
      all.push_back({matrix, 0, setup_.k, group.start, end, -1, -1});
    } else {
      all.push_back({matrix, group.start, end, 0, setup_.k, -1, -1});
    }
  } else if (scaling == GG_BLOCK_ROWWISE) {
    // One block per output row: the whole K, or the group's tokens (an
    // empty group's rows are blocks too, and their scale entry is column g).
    if (columnwise_output) {
      const int64_t column = setup_.stacked ? 0 : g;
      for (int64_t kk = 0; kk < setup_.k; ++kk)
        all.push_back({matrix, kk, kk + 1, group.start, end, kk, column});
    } else {
      for (int64_t r = group.start; r < end; ++r)
        all.push_back({matrix, r, r + 1, 0, setup_.k, r, 0});
    }
  } else if (scaling == GG_BLOCK_128X128) {
    // Stacked weights: 128 x 128 tiles of each output matrix.
    const int64_t rows = columnwise_output ? setup_.k : setup_.rows;
    const int64_t cols = columnwise_output ? setup_.rows : setup_.k;
    for (int64_t i = 0; i * bs < rows; ++i)
      for (int64_t j = 0; j * bs < cols; ++j)
        all.push_back({matrix, i * bs, std::min(rows, (i + 1) * bs), j * bs,
                       std::min(cols, (j + 1) * bs), i, j});
  } else if (columnwise_output) {
    // One output row per k; token blocks from the group start.
    const int64_t first =
        setup_.stacked ? 0 : model_first_block(model_, static_cast<size_t>(g), bs);
    for (int64_t kk = 0; kk < setup_.k; ++kk)
      for (int64_t j = 0; group.start + j * bs < end; ++j)
        all.push_back({matrix, kk, kk + 1, group.start + j * bs,
                       std::min(end, group.start + (j + 1) * bs), kk, first + j});
  } else {
    // One scale row per token row, blocks along K.
    for (int64_t r = group.start; r < end; ++r)
      for (int64_t j = 0; j * bs < setup_.k; ++j)
        all.push_back({matrix, r, r + 1, j * bs, std::min(setup_.k, (j + 1) * bs), r, j});
  }
  return all;
}

void QuantizeCase::check_output(bool columnwise_output, const HostTensor& out) const {
  const QuantizeFormat& f = setup_.format;
  const int32_t matrices = setup_.stacked ? groups_ : 1;
  const char* which = columnwise_output ? "columnwise" : "rowwise";
  std::vector<bool> written(static_cast<size_t>(matrices * out.rows() * out.cols()), false);
  const auto element = [&](int32_t m, int64_t r, int64_t c) {
    return static_cast<size_t>((m * out.rows() + r) * out.cols() + c);
  };
  float tensor_amax = 0.0f;
  for (int32_t g = 0; g < groups_; ++g) tensor_amax = max_abs(tensor_amax, group_amax(g));

  int failures = 0;
  const auto fail = [&](const std::string& what) {
    if (++failures <= 5) ADD_FAILURE() << which << ": " << what;
  };
  std::vector<std::tuple<int32_t, int64_t, int64_t>> scales_seen;
  for (int32_t g = 0; g < groups_; ++g) {
    const float outer_amax = f.extent == GG_SCALE_GROUP ? group_amax(g) : tensor_amax;
    // The fp32 scale: 1 when the output has none.
    float outer = 1.0f;
    if (f.extent != GG_SCALE_NONE && f.block == GG_BLOCK_NONE) {
      outer = model_fp8_scale(outer_amax, f.dtype);
    }
    if (f.extent != GG_SCALE_NONE && f.block == GG_BLOCK_NV16) {
      outer = model_nvfp4_tensor_scale(outer_amax);
    }
    if (f.extent != GG_SCALE_NONE) {
      const float got = out.scale()[f.extent == GG_SCALE_GROUP ? static_cast<size_t>(g) : 0];
      if (!(got == outer))
        fail("fp32 scale of group " + std::to_string(g) + " is " + std::to_string(got) +
             ", model " + std::to_string(outer));
    }
    for (const Block& b : blocks(columnwise_output, g)) {
      float block_amax = 0.0f;
      for (int64_t r = b.row_begin; r < b.row_end; ++r)
        for (int64_t c = b.col_begin; c < b.col_end; ++c)
          block_amax = max_abs(block_amax, input_value(columnwise_output, b.matrix, r, c));
      // The block's scale: its code, the model's code, and the element rule.
      uint32_t scale_code = 0;
      uint32_t model_scale_code = 0;
      if (b.scale_row >= 0) {
        scale_code = out.scale_code(b.matrix, b.scale_row, b.scale_col);
        scales_seen.emplace_back(b.matrix, b.scale_row, b.scale_col);
      }
      switch (f.block) {
        case GG_BLOCK_1X128:
        case GG_BLOCK_128X128:
        case GG_BLOCK_ROWWISE: {
          const float s = model_fp8_scale(block_amax, f.dtype);
          memcpy(&model_scale_code, &s, sizeof s);
          break;
        }
        case GG_BLOCK_MX32:
          model_scale_code = model_mx_scale(block_amax, f.dtype);
          break;
        case GG_BLOCK_NV16:
          model_scale_code = model_nvfp4_block_scale(block_amax, outer);
          break;
        case GG_BLOCK_NONE:
          break;
      }
      if (scale_code != model_scale_code) {
        fail("scale (" + std::to_string(b.scale_row) + ", " + std::to_string(b.scale_col) +
             ") of matrix " + std::to_string(b.matrix) + " is " + std::to_string(scale_code) +
             ", model " + std::to_string(model_scale_code));
      }
      for (int64_t r = b.row_begin; r < b.row_end; ++r) {
        for (int64_t c = b.col_begin; c < b.col_end; ++c) {
          const float x = input_value(columnwise_output, b.matrix, r, c);
          uint32_t want = 0;
          long double step = 1;  // decode-side multiplier of the code
          switch (f.block) {
            case GG_BLOCK_NONE:
              want = model_fp8_code(x, outer, f.dtype);
              step = outer;
              break;
            case GG_BLOCK_1X128:
            case GG_BLOCK_128X128:
            case GG_BLOCK_ROWWISE:
              want = model_fp8_code(x, float_of(model_scale_code), f.dtype);
              step = float_of(model_scale_code);
              break;
            case GG_BLOCK_MX32:
              want = model_mx_code(x, static_cast<uint8_t>(model_scale_code), f.dtype);
              step = model_e8m0(static_cast<uint8_t>(model_scale_code));
              break;
            case GG_BLOCK_NV16:
              want = model_nvfp4_code(x, static_cast<uint8_t>(model_scale_code), outer);
              step = model_value(GG_DTYPE_E4M3, model_scale_code) * static_cast<long double>(outer);
              break;
          }
          const uint32_t got = out.code(b.matrix, r, c);
          written[element(b.matrix, r, c)] = true;
          if (got != want) {
            fail("element (" + std::to_string(r) + ", " + std::to_string(c) + ") of matrix " +
                 std::to_string(b.matrix) + " is " + std::to_string(got) + ", model " +
                 std::to_string(want));
          }
          // Dequantized, the code is within half an ulp of x (scaled), up
          // to the fp32 rounding of the division; or it is saturated.
          if (step != 0 && isfinite(x)) {
            const long double scaled = x / step;
            const long double value = model_value(f.dtype, got);
            const long double max = model_max(f.dtype);
            const long double slack =
                model_ulp(f.dtype, scaled) / 2 + fabsl(scaled) * ldexpl(1, -22);
            const bool saturated = fabsl(scaled) > max && fabsl(value) == max;
            if (!saturated && !(fabsl(value - scaled) <= slack)) {
              fail("element (" + std::to_string(r) + ", " + std::to_string(c) +
                   ") dequantizes off by more than half an ulp");
            }
          }
        }
      }
    }
  }
  // Nothing else was written: elements outside the groups, scale entries of
  // no block, and the padding keep their fill.
  for (int32_t m = 0; m < matrices; ++m)
    for (int64_t r = 0; r < out.rows(); ++r)
      for (int64_t c = 0; c < out.cols(); ++c)
        if (!written[element(m, r, c)] &&
            out.code(m, r, c) != (f.dtype == GG_DTYPE_E2M1 ? 0xFu : 0xFFu)) {
          fail("element (" + std::to_string(r) + ", " + std::to_string(c) +
               ") outside every group was written");
        }
  EXPECT_EQ(out.padding_changes(), 0) << which;
  EXPECT_EQ(failures, 0) << which;
  if (f.block != GG_BLOCK_NONE) {
    std::sort(scales_seen.begin(), scales_seen.end());
    EXPECT_TRUE(std::adjacent_find(scales_seen.begin(), scales_seen.end()) == scales_seen.end())
        << which << ": two blocks share a scale entry";
    EXPECT_EQ(out.scale_entries_changed(), static_cast<int64_t>(scales_seen.size()))
        << which << ": scale entries written outside the blocks";
  }
}

void QuantizeCase::check() const {
  if (setup_.amax) {
    for (int32_t g = 0; g < groups_; ++g) {
      const float want = group_amax(g);
      const float got = amax[static_cast<size_t>(g)];
      EXPECT_TRUE(got == want || (isnan(got) && isnan(want)))
          << "amax[" << g << "] = " << got << ", model " << want;
    }
  }
  if (setup_.rowwise) check_output(false, rowwise);
  if (setup_.columnwise) check_output(true, columnwise);
}

}  // namespace gg::test

// Operand scales: see operand_scales.h.
#include "cli/operand_scales.h"

#include <cmath>
#include <cstring>
#include <string>

#include "cli/checks.h"
#include "cli/elements.h"
#include "cli/host_memory.h"

namespace gg::cli {

namespace {

int64_t block_length(gg_block_scaling blocks) {
  switch (blocks) {
    case GG_BLOCK_MX32:
      return 32;
    case GG_BLOCK_NV16:
      return 16;
    default:
      return 128;
  }
}

bool fp32_entries(gg_block_scaling blocks) {
  return blocks == GG_BLOCK_1X128 || blocks == GG_BLOCK_128X128 || blocks == GG_BLOCK_ROWWISE;
}

// Blocks over `extent` elements along the contraction (rowwise: the whole
// extent is one).
int64_t blocks_along(int64_t extent, gg_block_scaling blocks) {
  if (blocks == GG_BLOCK_ROWWISE) return extent > 0 ? 1 : 0;
  return (extent + block_length(blocks) - 1) / block_length(blocks);
}

// A random block scale, stored at `entry`; returns its value.
double draw_block_scale(gg_block_scaling blocks, Random& random, uint8_t* entry) {
  switch (blocks) {
    case GG_BLOCK_MX32: {  // e8m0: 2^(byte - 127)
      const int exponent = static_cast<int>(random.below(5)) - 2;
      *entry = static_cast<uint8_t>(127 + exponent);
      return std::ldexp(1.0, exponent);
    }
    case GG_BLOCK_NV16: {  // ue4m3: the bits of a positive e4m3
      static const double kValues[] = {0.5, 0.75, 1.0, 1.25, 1.5, 2.0};
      const double value = kValues[random.below(6)];
      encode_element(GG_DTYPE_E4M3, value, entry);
      return value;
    }
    default: {  // fp32
      const auto value = static_cast<float>(std::ldexp(
          1.0 + static_cast<double>(random.below(8)) / 8, static_cast<int>(random.below(5)) - 2));
      std::memcpy(entry, &value, sizeof value);
      return value;
    }
  }
}

// The stored dimension (0 rows, 1 cols) an operand's blocks run along.
int stored_block_dim(const OperandRole& role) {
  return role.layout == GG_LAYOUT_N ? role.contraction : 1 - role.contraction;
}

}  // namespace

OperandRole lhs_role(const Problem& problem) {
  const bool ragged_k = problem.op == GG_OP_RAGGED_K;
  return {lhs_matrices(problem), problem.lhs_layout, ragged_k ? 0 : 1, true, ragged_k};
}

OperandRole rhs_role(const Problem& problem) {
  const bool ragged_k = problem.op == GG_OP_RAGGED_K;
  return {rhs_matrices(problem), problem.rhs_layout, 0, ragged_k, ragged_k};
}

gg_block_scaling lhs_blocks(const Problem& problem) { return problem.input_scaling.token_blocks; }

gg_block_scaling rhs_blocks(const Problem& problem) {
  return problem.op == GG_OP_RAGGED_K ? problem.input_scaling.token_blocks
                                      : problem.input_scaling.weight_blocks;
}

BlockScaleShape block_scale_shape(const OperandRole& role, gg_block_scaling blocks,
                                  int32_t groups) {
  if (blocks == GG_BLOCK_NONE) return {};
  const bool n = role.layout == GG_LAYOUT_N;
  int64_t shape[2] = {0, 0};
  check_gg(gg_block_scale_shape(blocks, n ? role.set.rows : role.set.cols,
                                n ? role.set.cols : role.set.rows, stored_block_dim(role),
                                role.ragged_contraction ? 1 : 0, groups, shape),
           "gg_block_scale_shape");
  return {role.set.count, shape[0], shape[1], fp32_entries(blocks) ? sizeof(float) : size_t{1}};
}

double live_block_scale_bytes(const Problem& problem, const std::vector<int64_t>& sizes) {
  const auto width = [](gg_block_scaling blocks) {
    return blocks == GG_BLOCK_NONE ? 0.0 : fp32_entries(blocks) ? 4.0 : 1.0;
  };
  const auto blocks_of = [](int64_t extent, gg_block_scaling blocks) {
    return static_cast<double>(blocks_along(extent, blocks));
  };
  double routed = 0, live_groups = 0;
  double lhs_entries = 0, rhs_entries = 0;
  const gg_block_scaling lhs = lhs_blocks(problem);
  const gg_block_scaling rhs = rhs_blocks(problem);
  const auto p = static_cast<double>(problem.lhs_cols);
  const auto q = static_cast<double>(problem.rhs_cols);
  for (const int64_t size : sizes) {
    routed += static_cast<double>(size);
    live_groups += size > 0 ? 1 : 0;
    if (problem.op == GG_OP_RAGGED_K && size > 0) {
      lhs_entries += blocks_of(size, lhs) * p;
      rhs_entries += blocks_of(size, rhs) * q;
    }
  }
  if (problem.op == GG_OP_RAGGED_M) {
    // Blocks along K (lhs_cols); the weights [N, K], or 128 x 128 tiles.
    lhs_entries = routed * blocks_of(problem.lhs_cols, lhs);
    const double k_blocks = blocks_of(problem.lhs_cols, rhs);
    const double per_matrix =
        rhs == GG_BLOCK_128X128 ? blocks_of(problem.rhs_cols, rhs) * k_blocks : q * k_blocks;
    rhs_entries = live_groups * per_matrix;
  }
  return lhs_entries * width(lhs) + rhs_entries * width(rhs);
}

std::vector<uint8_t> unit_block_scale(gg_block_scaling blocks) {
  if (blocks == GG_BLOCK_MX32) return {127};  // e8m0: 2^(127 - 127)
  std::vector<uint8_t> bytes(fp32_entries(blocks) ? sizeof(float) : 1);
  encode_element(fp32_entries(blocks) ? GG_DTYPE_FP32 : GG_DTYPE_E4M3, 1.0, bytes.data());
  return bytes;
}

OperandScales::OperandScales(const OperandRole& role, const std::vector<int64_t>& sizes,
                             gg_block_scaling blocks, gg_scale_extent extent, float first_scale,
                             Random& random)
    : role_(role), blocks_(blocks), extent_(extent) {
  const auto groups = static_cast<int32_t>(sizes.size());
  if (extent == GG_SCALE_TENSOR) scale = {first_scale};
  if (extent == GG_SCALE_GROUP) {
    for (int32_t g = 0; g < groups; ++g) {
      scale.push_back(first_scale / static_cast<float>(1 << (g % 3)));
    }
  }
  if (role.token_rows && (blocks != GG_BLOCK_NONE || extent == GG_SCALE_GROUP)) {
    allocate_host(static_cast<double>(role.set.rows) * sizeof(int32_t), "the group of each row",
                  [&] { group_of_row_.assign(static_cast<size_t>(role.set.rows), -1); });
    int64_t start = 0;
    int64_t first = 0;
    for (int32_t g = 0; g < groups; ++g) {
      group_start_.push_back(start);
      first_block_.push_back(first);
      for (int64_t row = start; row < start + sizes[g] && row < role.set.rows; ++row) {
        group_of_row_[static_cast<size_t>(row)] = g;
      }
      start += sizes[g];
      if (blocks != GG_BLOCK_NONE)
        // Rowwise along a ragged dimension: group g's scale is entry g, empty or not.
        first += blocks == GG_BLOCK_ROWWISE ? 1 : blocks_along(sizes[g], blocks);
    }
  }
  if (blocks == GG_BLOCK_NONE) return;

  block_dim_ = stored_block_dim(role);
  const BlockScaleShape shape = block_scale_shape(role, blocks, groups);
  scale_rows_ = shape.rows;
  scale_cols_ = shape.cols;
  const double entries = shape.bytes() / static_cast<double>(shape.entry_bytes);
  const size_t width = shape.entry_bytes;
  allocate_host(entries * static_cast<double>(width + sizeof(double)), "the block scales", [&] {
    block_values_.resize(static_cast<size_t>(entries));
    block_bytes.resize(static_cast<size_t>(entries) * width);
  });
  for (size_t i = 0; i < block_values_.size(); ++i) {
    block_values_[i] = draw_block_scale(blocks, random, &block_bytes[i * width]);
  }
}

int64_t OperandScales::entry(int64_t matrix, int64_t row, int64_t col, int32_t group) const {
  const bool n = role_.layout == GG_LAYOUT_N;
  const int64_t stored_row = n ? row : col;
  const int64_t stored_col = n ? col : row;
  const int64_t first = matrix * scale_rows_ * scale_cols_;
  const int64_t length = block_length(blocks_);
  if (blocks_ == GG_BLOCK_128X128) {
    return first + stored_row / length * scale_cols_ + stored_col / length;
  }
  const int64_t along = block_dim_ == 0 ? stored_row : stored_col;
  const int64_t across = block_dim_ == 0 ? stored_col : stored_row;
  const int64_t from = role_.ragged_contraction ? group_start_[static_cast<size_t>(group)] : 0;
  const int64_t within = blocks_ == GG_BLOCK_ROWWISE ? 0 : (along - from) / length;
  const int64_t block =
      (role_.ragged_contraction ? first_block_[static_cast<size_t>(group)] : 0) + within;
  return first + (block_dim_ == 0 ? block * scale_cols_ + across : across * scale_cols_ + block);
}

double OperandScales::factor(int64_t matrix, int64_t row, int64_t col) const {
  if (blocks_ == GG_BLOCK_NONE && extent_ == GG_SCALE_NONE) return 1.0;
  int32_t group = static_cast<int32_t>(matrix);
  if (!group_of_row_.empty()) {
    group = group_of_row_[static_cast<size_t>(row)];
    if (group < 0) return 1.0;
  }
  const double fp32 = extent_ == GG_SCALE_NONE ? 1.0
                      : extent_ == GG_SCALE_TENSOR
                          ? static_cast<double>(scale[0])
                          : static_cast<double>(scale[static_cast<size_t>(group)]);
  if (blocks_ == GG_BLOCK_NONE) return fp32;
  return fp32 * block_values_[static_cast<size_t>(entry(matrix, row, col, group))];
}

}  // namespace gg::cli

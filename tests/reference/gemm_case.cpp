// See gemm_case.h.
#include "gemm_case.h"

#include <gtest/gtest.h>
#include <math.h>
#include <string.h>

#include <algorithm>

#include "reference/reference.h"

namespace gg::test {
namespace {

// A random block-scale code. kWindow: powers of two 2^-2 .. 2^2 (e8m0),
// ue4m3 in [0.5, 4) or 3-bit fp32 values in [0.25, 8); kFull: every positive
// ue4m3, 24-bit fp32 in [2^-4, 2^5), e8m0 2^-10 .. 2^10.
uint32_t random_block_scale(gg_block_scaling scaling, CodeRange range, std::mt19937& rng) {
  const bool window = range == CodeRange::kWindow;
  switch (scaling) {
    case GG_BLOCK_MX32:
      return window ? std::uniform_int_distribution<uint32_t>(125, 129)(rng)
                    : std::uniform_int_distribution<uint32_t>(117, 137)(rng);
    case GG_BLOCK_NV16:
      return window ? std::uniform_int_distribution<uint32_t>(6 << 3, (9 << 3) - 1)(rng)
                    : std::uniform_int_distribution<uint32_t>(0, 0x7E)(rng);
    case GG_BLOCK_1X128:
    case GG_BLOCK_128X128:
    case GG_BLOCK_ROWWISE:
      return window ? random_fp32_code(3, -2, 2, true, rng)
                    : random_fp32_code(24, -4, 4, true, rng);
    case GG_BLOCK_NONE:
      break;
  }
  return 0;
}

// fp32 tensor / group scales: 3 bits in [0.5, 4) (kWindow) or 24 bits.
std::vector<float> random_fp32_scales(size_t count, CodeRange range, std::mt19937& rng) {
  std::vector<float> values(count);
  for (float& v : values) {
    const uint32_t code = range == CodeRange::kWindow ? random_fp32_code(3, -1, 1, true, rng)
                                                      : random_fp32_code(24, -4, 4, true, rng);
    memcpy(&v, &code, sizeof v);
  }
  return values;
}

uint32_t nan_code(gg_dtype dtype) {
  return dtype == GG_DTYPE_FP32 ? 0x7FC00000u : dtype == GG_DTYPE_BF16 ? 0x7FC0u : 0x7E00u;
}

// Scale index, along the contraction, of the element at `at` of that
// dimension: blocks of `block` from 0, or along the tokens of a group from
// the group's first block. A rowwise block is the whole contraction: index
// 0, or along the tokens the group itself.
int64_t contraction_block(gg_block_scaling scaling, const std::vector<ModelGroup>& groups,
                          int32_t g, bool tokens, int64_t at) {
  if (scaling == GG_BLOCK_ROWWISE) return tokens ? g : 0;
  const int64_t bs = model_block_elements(scaling);
  if (!tokens) return at / bs;
  const size_t gi = static_cast<size_t>(g);
  return model_first_block(groups, gi, bs) + (at - groups[gi].start) / bs;
}

}  // namespace

GemmCase::GemmCase(const GemmSetup& setup)
    : setup_(setup), groups_(static_cast<int32_t>(setup.sizes.size())) {
  std::mt19937 rng(setup.seed);
  const bool ragged_m = setup.op == GG_OP_RAGGED_M;
  const bool lhs_n = setup.lhs_layout == GG_LAYOUT_N;
  const bool rhs_n = setup.rhs_layout == GG_LAYOUT_N;
  const int64_t m = setup.m;
  model_ = model_groups(setup.sizes, setup.offsets, m);

  // Operands in their stored shapes.
  const int64_t lhs_other = ragged_m ? setup.k : setup.p;
  lhs = lhs_n ? HostTensor(setup.lhs.dtype, 0, m, lhs_other, setup.row_pad, false)
              : HostTensor(setup.lhs.dtype, 0, lhs_other, m, setup.row_pad, false);
  if (ragged_m) {
    rhs = rhs_n ? HostTensor(setup.rhs.dtype, groups_, setup.k, setup.n, setup.row_pad,
                             setup.pointer_array)
                : HostTensor(setup.rhs.dtype, groups_, setup.n, setup.k, setup.row_pad,
                             setup.pointer_array);
    out = HostTensor(setup.out_dtype, 0, m, setup.n, setup.row_pad, false);
  } else {
    rhs = rhs_n ? HostTensor(setup.rhs.dtype, 0, m, setup.q, setup.row_pad, false)
                : HostTensor(setup.rhs.dtype, 0, setup.q, m, setup.row_pad, false);
    out =
        HostTensor(setup.out_dtype, groups_, setup.p, setup.q, setup.row_pad, setup.pointer_array);
  }
  lhs.fill(setup.lhs.range, rng);
  rhs.fill(setup.rhs.range, rng);
  if (setup.poison_out) {
    out.fill_code(nan_code(setup.out_dtype));
  } else {
    out.fill(CodeRange::kWindow, rng);
  }

  // Block scales, shaped by the rules of groupgemm.h: blocks run along the
  // contraction; along the tokens they restart at every group start.
  const auto add_scales = [&](HostTensor& t, const OperandFormat& f, bool contraction_on_cols,
                              bool tokens_ragged) {
    if (f.block != GG_BLOCK_NONE) {
      const int64_t bs = model_block_elements(f.block);
      const bool square = f.block == GG_BLOCK_128X128;
      const int64_t contraction = contraction_on_cols ? t.cols() : t.rows();
      int64_t along = 0;
      if (f.block == GG_BLOCK_ROWWISE) {
        along = tokens_ragged ? groups_ : 1;  // the whole contraction, or one per group
      } else {
        along = tokens_ragged ? model_block_capacity(setup_.m, bs, groups_)
                              : ceil_div(contraction, bs);
      }
      int64_t scale_rows = contraction_on_cols ? t.rows() : along;
      int64_t scale_cols = contraction_on_cols ? along : t.cols();
      if (square) {
        scale_rows = ceil_div(t.rows(), bs);
        scale_cols = ceil_div(t.cols(), bs);
      }
      t.add_block_scales(f.block, scale_rows, scale_cols,
                         [&] { return random_block_scale(f.block, f.range, rng); });
    }
    if (f.extent != GG_SCALE_NONE) {
      const size_t count = f.extent == GG_SCALE_TENSOR ? 1 : static_cast<size_t>(groups_);
      t.set_scale(f.extent, random_fp32_scales(count, f.range, rng));
    }
  };
  add_scales(lhs, setup.lhs, ragged_m == lhs_n, !ragged_m);
  add_scales(rhs, setup.rhs, !rhs_n, !ragged_m);

  if (setup.bias) {
    bias = HostTensor(setup.bias_dtype, 0, groups_, setup.n, setup.row_pad, false);
    bias.fill(CodeRange::kWindow, rng);
  }

  sizes_bytes_ = index_array(setup.sizes, setup.index_type);
  offsets_bytes_ = index_array(setup.offsets, setup.index_type);
  desc.op = setup.op;
  desc.num_groups = groups_;
  desc.group_sizes.sizes = sizes_bytes_.data();
  desc.group_sizes.offsets = setup.offsets.empty() ? nullptr : offsets_bytes_.data();
  desc.group_sizes.type = setup.index_type;
  desc.lhs = lhs.view();
  desc.rhs = rhs.view();
  desc.out = out.view();
  if (setup.bias) desc.bias = bias.view();
  desc.lhs_layout = setup.lhs_layout;
  desc.rhs_layout = setup.rhs_layout;
  desc.alpha = gg_scalar{setup.alpha,
                         setup_.alpha_per_group.empty() ? nullptr : setup_.alpha_per_group.data()};
  desc.beta =
      gg_scalar{setup.beta, setup_.beta_per_group.empty() ? nullptr : setup_.beta_per_group.data()};
  desc.path = GG_PATH_REFERENCE;
}

bool GemmCase::exact() const {
  return setup_.lhs.range == CodeRange::kWindow && setup_.rhs.range == CodeRange::kWindow;
}

uint32_t GemmCase::run() {
  out_before_.clear();
  const int32_t out_matrices = setup_.op == GG_OP_RAGGED_M ? 1 : groups_;
  for (int32_t g = 0; g < out_matrices; ++g)
    for (int64_t r = 0; r < out.rows(); ++r)
      for (int64_t c = 0; c < out.cols(); ++c) out_before_.push_back(out.code(g, r, c));
  uint32_t flags = 0;
  gg::ref::grouped_gemm(desc, &flags);
  return flags;
}

// lhs element for (token, other): ragged-M (row i, k); ragged-K (token t, p).
long double GemmCase::lhs_value(int32_t g, int64_t token, int64_t other) const {
  const OperandFormat& f = setup_.lhs;
  const bool n_layout = setup_.lhs_layout == GG_LAYOUT_N;
  const int64_t r = n_layout ? token : other;
  const int64_t c = n_layout ? other : token;
  long double v = lhs.value(0, r, c);
  if (f.block != GG_BLOCK_NONE) {
    if (setup_.op == GG_OP_RAGGED_M) {
      // Blocks along K, one scale row (or column) per token.
      const int64_t block = contraction_block(f.block, model_, g, false, other);
      v *= n_layout ? lhs.scale_value(0, token, block) : lhs.scale_value(0, block, token);
    } else {
      // Blocks along the tokens, restarting at the group start.
      const int64_t block = contraction_block(f.block, model_, g, true, token);
      v *= n_layout ? lhs.scale_value(0, block, other) : lhs.scale_value(0, other, block);
    }
  }
  if (f.extent == GG_SCALE_TENSOR) v *= lhs.scale()[0];
  if (f.extent == GG_SCALE_GROUP) v *= lhs.scale()[static_cast<size_t>(g)];
  return v;
}

// rhs element: ragged-M (k, n) of op(rhs[g]); ragged-K (token t, q).
long double GemmCase::rhs_value(int32_t g, int64_t first, int64_t second) const {
  const OperandFormat& f = setup_.rhs;
  const bool n_layout = setup_.rhs_layout == GG_LAYOUT_N;
  const bool ragged_m = setup_.op == GG_OP_RAGGED_M;
  const int32_t matrix = ragged_m ? g : 0;
  const int64_t r = n_layout ? first : second;
  const int64_t c = n_layout ? second : first;
  long double v = rhs.value(matrix, r, c);
  if (f.block == GG_BLOCK_128X128) {
    v *= rhs.scale_value(matrix, r / 128, c / 128);
  } else if (f.block != GG_BLOCK_NONE) {
    const int64_t block = contraction_block(f.block, model_, g, !ragged_m, first);
    v *= n_layout ? rhs.scale_value(matrix, block, second) : rhs.scale_value(matrix, second, block);
  }
  if (f.extent == GG_SCALE_TENSOR) v *= rhs.scale()[0];
  if (f.extent == GG_SCALE_GROUP) v *= rhs.scale()[static_cast<size_t>(g)];
  return v;
}

// The epilogue of the model for one output element, given the group's sum
// of products and the sum of their magnitudes.
long double GemmCase::epilogue(int32_t g, size_t out_at, long double sum, long double magnitude,
                               int64_t terms, long double* error_bound) const {
  const size_t gi = static_cast<size_t>(g);
  const long double alpha =
      setup_.alpha_per_group.empty() ? setup_.alpha : setup_.alpha_per_group[gi];
  const long double beta = setup_.beta_per_group.empty() ? setup_.beta : setup_.beta_per_group[gi];
  long double result = alpha * sum;
  magnitude *= fabsl(alpha);
  if (beta != 0) {
    const long double old = model_value(setup_.out_dtype, out_before_[out_at]);
    result += beta * old;
    magnitude += fabsl(beta * old);
  }
  if (setup_.bias) {
    const int64_t col = static_cast<int64_t>(out_at) % out.cols();
    result += bias.value(0, g, col);
    magnitude += fabsl(bias.value(0, g, col));
  }
  // Double sums of `terms` products: relative error below (terms + 4) * 2^-52.
  *error_bound = exact() ? 0 : magnitude * static_cast<long double>(terms + 4) * ldexpl(1, -52);
  return result;
}

int64_t GemmCase::check() const {
  const bool ragged_m = setup_.op == GG_OP_RAGGED_M;
  const int64_t out_rows = out.rows();
  const int64_t out_cols = out.cols();
  std::vector<bool> written(out_before_.size(), false);
  int failures = 0;
  for (int32_t g = 0; g < groups_; ++g) {
    const ModelGroup& group = model_[static_cast<size_t>(g)];
    if (ragged_m && group.size == 0) continue;
    // The group's operands as long double matrices, contraction innermost.
    const int64_t rows = ragged_m ? group.size : setup_.p;
    const int64_t depth = ragged_m ? setup_.k : group.size;
    std::vector<long double> a(static_cast<size_t>(rows * depth));
    std::vector<long double> b(static_cast<size_t>(out_cols * depth));
    for (int64_t d = 0; d < depth; ++d) {
      for (int64_t i = 0; i < rows; ++i) {
        a[static_cast<size_t>(i * depth + d)] = ragged_m ? lhs_value(g, group.start + i, d)
                                                         : lhs_value(g, group.start + d, i);
      }
      for (int64_t j = 0; j < out_cols; ++j) {
        b[static_cast<size_t>(j * depth + d)] =
            ragged_m ? rhs_value(g, d, j) : rhs_value(g, group.start + d, j);
      }
    }
    const int32_t matrix = ragged_m ? 0 : g;
    const int64_t first_row = ragged_m ? group.start : 0;
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < out_cols; ++j) {
        long double sum = 0;
        long double magnitude = 0;
        for (int64_t d = 0; d < depth; ++d) {
          const long double t =
              a[static_cast<size_t>(i * depth + d)] * b[static_cast<size_t>(j * depth + d)];
          sum += t;
          magnitude += fabsl(t);
        }
        const int64_t r = first_row + i;
        const size_t at = static_cast<size_t>((matrix * out_rows + r) * out_cols + j);
        written[at] = true;
        long double bound;
        const long double want = epilogue(g, at, sum, magnitude, depth, &bound);
        const long double got = model_value(setup_.out_dtype, out.code(matrix, r, j));
        // A NaN model value comes from beta * NaN: the old value was read.
        // Otherwise the reference holds a value within `bound` of the model
        // and rounds it once, so (rounding being monotonic) the output lies
        // between the two ends of the interval rounded; beyond the
        // output's range both ends are the same infinity.
        const bool ok = isnan(want) ? isnan(got)
                                    : model_round(setup_.out_dtype, want - bound) <= got &&
                                          got <= model_round(setup_.out_dtype, want + bound);
        if (!ok && ++failures <= 5) {
          ADD_FAILURE() << "out[" << matrix << "](" << r << ", " << j
                        << ") = " << static_cast<double>(got) << ", model "
                        << static_cast<double>(want) << " (rounded "
                        << static_cast<double>(model_round(setup_.out_dtype, want)) << ", bound "
                        << static_cast<double>(bound) << ")";
        }
      }
    }
  }
  // Everything else keeps its old bits.
  const int32_t out_matrices = ragged_m ? 1 : groups_;
  for (int32_t matrix = 0; matrix < out_matrices; ++matrix) {
    for (int64_t r = 0; r < out_rows; ++r) {
      for (int64_t c = 0; c < out_cols; ++c) {
        const size_t at = static_cast<size_t>((matrix * out_rows + r) * out_cols + c);
        if (!written[at] && out.code(matrix, r, c) != out_before_[at] && ++failures <= 5) {
          ADD_FAILURE() << "out[" << matrix << "](" << r << ", " << c
                        << ") outside every group was written";
        }
      }
    }
  }
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(out.padding_changes(), 0) << "bytes outside the output view changed";
  return std::count(written.begin(), written.end(), true);
}

}  // namespace gg::test

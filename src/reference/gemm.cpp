// Reference grouped GEMM: both ops, every layout and operand format.
//
// Each group's operands are first decoded, exactly, into dense double
// matrices with the contraction innermost: A (one row per output row) and B
// (one row per output column). Every element becomes element x block scale x
// fp32 scale, exactly: only fp8 and e2m1 elements (at most 4 significant
// bits) carry scales, each scale has at most 24, and 4 + 24 + 24 bits fit a
// double's 53. The output is then a plain double dot product per element,
// followed by the epilogue alpha * acc + beta * old + bias in double and one
// rounding to the output dtype. Both ops share this: ragged-M's A is the
// group's lhs rows and B its weight matrix; ragged-K's A and B are the
// group's token columns of lhs and rhs, so the contraction runs over tokens.
// Weight-only products (a 16-bit lhs, quantized weights) need nothing more:
// each operand decodes by its own format.
#include <stdint.h>

#include <vector>

#include "formats/codecs.h"
#include "reference/block_scales.h"
#include "reference/group_table.h"
#include "reference/matrix_view.h"
#include "reference/output_rounding.h"
#include "reference/reference.h"

namespace gg::ref {
namespace {

// Where an operand's contraction and tokens lie in its stored matrix.
struct Operand {
  const gg_tensor* tensor;
  bool contraction_along_cols;
  TokenDim tokens;
};

// An operand of one group as doubles: row i is values[i * depth, (i + 1) * depth).
struct DenseOperand {
  int64_t outer = 0;
  int64_t depth = 0;
  std::vector<double> values;
};

double fp32_scale(const gg_tensor& tensor, int32_t g) {
  switch (tensor.scale_extent) {
    case GG_SCALE_NONE:
      return 1.0;
    case GG_SCALE_TENSOR:
      return tensor.scale[0];
    case GG_SCALE_GROUP:
      return tensor.scale[g];
  }
  return 1.0;
}

double scalar_of(const gg_scalar& scalar, int32_t g) {
  return scalar.per_group != nullptr ? scalar.per_group[g] : scalar.value;
}

void decode_operand(const Operand& operand, int32_t g, const GroupTable& table,
                    DenseOperand* dense) {
  const gg_tensor& tensor = *operand.tensor;
  const MatrixView m = matrix_of(tensor, g);
  const Region region =
      group_region(m.rows, m.cols, operand.tokens, table.groups[static_cast<size_t>(g)]);
  const BlockScales scales =
      block_scales_of(tensor, g, region, operand.contraction_along_cols, operand.tokens, table);
  const double scale = fp32_scale(tensor, g);
  const int64_t rows = region.row_end - region.row_begin;
  const int64_t cols = region.col_end - region.col_begin;
  dense->outer = operand.contraction_along_cols ? rows : cols;
  dense->depth = operand.contraction_along_cols ? cols : rows;
  dense->values.assign(static_cast<size_t>(rows * cols), 0.0);
  for_each_block(region, scales, [&](const Region& block, int64_t index) {
    const double block_scale = block_scale_value(scales, index);
    for (int64_t r = block.row_begin; r < block.row_end; ++r) {
      for (int64_t c = block.col_begin; c < block.col_end; ++c) {
        const int64_t i = r - region.row_begin;
        const int64_t j = c - region.col_begin;
        const double element = fmt::decode(m.dtype, m.base, m.index(r, c));
        dense->values[static_cast<size_t>(operand.contraction_along_cols ? i * cols + j
                                                                         : j * rows + i)] =
            element * block_scale * scale;
      }
    }
  });
}

double dot(const DenseOperand& a, int64_t i, const DenseOperand& b, int64_t j) {
  const double* x = a.values.data() + i * a.depth;
  const double* y = b.values.data() + j * b.depth;
  double sum = 0.0;
  for (int64_t k = 0; k < a.depth; ++k) sum += x[k] * y[k];
  return sum;
}

}  // namespace

void grouped_gemm(const gg_gemm_desc& desc, uint32_t* flags) {
  const bool ragged_m = desc.op == GG_OP_RAGGED_M;
  const bool lhs_n = desc.lhs_layout == GG_LAYOUT_N;
  const bool rhs_n = desc.rhs_layout == GG_LAYOUT_N;
  // lhs always carries the tokens; its contraction is K (ragged-M) or the
  // tokens themselves (ragged-K). rhs is a weight matrix in ragged-M.
  const Operand lhs{&desc.lhs, ragged_m == lhs_n, lhs_n ? TokenDim::kRows : TokenDim::kCols};
  const Operand rhs{&desc.rhs, !rhs_n,
                    ragged_m ? TokenDim::kNone : (rhs_n ? TokenDim::kRows : TokenDim::kCols)};
  const GroupTable table =
      read_groups(desc.group_sizes, desc.num_groups, desc.lhs.shape[lhs_n ? 0 : 1], flags);
  const bool has_bias = ragged_m && desc.bias.data != nullptr;
  const MatrixView bias = has_bias ? matrix_of(desc.bias, 0) : MatrixView{};

  DenseOperand a;
  DenseOperand b;
  for (int32_t g = 0; g < desc.num_groups; ++g) {
    const GroupExtent& extent = table.groups[static_cast<size_t>(g)];
    if (ragged_m && extent.size == 0) continue;
    decode_operand(lhs, g, table, &a);
    decode_operand(rhs, g, table, &b);
    const MatrixView out = matrix_of(desc.out, g);
    const int64_t first_out_row = ragged_m ? extent.start : 0;
    const double alpha = scalar_of(desc.alpha, g);
    const double beta = scalar_of(desc.beta, g);
    for (int64_t i = 0; i < a.outer; ++i) {
      for (int64_t j = 0; j < b.outer; ++j) {
        const int64_t index = out.index(first_out_row + i, j);
        double result = alpha * dot(a, i, b, j);
        // beta == 0 overwrites: the old value is not read, so NaN cannot leak in.
        if (beta != 0.0) result += beta * fmt::decode(out.dtype, out.base, index);
        if (has_bias) result += fmt::decode(bias.dtype, bias.base, bias.index(g, j));
        store_rounded(out.dtype, out.base, index, result);
      }
    }
  }
  if (desc.flags & GG_GEMM_ZERO_UNUSED_ROWS) {
    const GroupExtent& last = table.groups.back();
    const MatrixView out = matrix_of(desc.out, 0);
    for (int64_t r = last.start + last.size; r < out.rows; ++r) {
      for (int64_t c = 0; c < out.cols; ++c) store_rounded(out.dtype, out.base, out.index(r, c), 0.0);
    }
  }
}

}  // namespace gg::ref

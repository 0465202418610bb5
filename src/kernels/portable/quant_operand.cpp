// See quant_operand.h.
#include "kernels/portable/quant_operand.h"

namespace gg::portable {

QuantOperand quant_operand_of(const gg_tensor& t, bool depth_along_cols, const gg_gemm_desc& d) {
  QuantOperand q;
  if (!is_quantized(t.dtype)) return q;
  q.dtype = t.dtype;
  q.scaling = t.block_scaling;
  q.block_scales = t.block_scales;
  q.extent = t.scale_extent;
  q.scale = t.scale;
  if (t.block_scaling == GG_BLOCK_NONE) return q;
  // Per-expert block scales: an array of G pointers (none without blocks,
  // so group_scales never reads an absent array).
  q.scale_pointers = t.rank == 3 && (t.flags & GG_TENSOR_POINTER_ARRAY) != 0;
  const bool ragged = d.op == GG_OP_RAGGED_K;
  const int64_t rows = t.shape[t.rank - 2];
  const int64_t cols = t.shape[t.rank - 1];
  if (t.block_scaling == GG_BLOCK_ROWWISE) {
    // One fp32 per outer index: [rows, 1] or [1, cols] per matrix; along
    // ragged-K tokens one per group, [rows, G] or [G, cols].
    constexpr int64_t kBytes = sizeof(float);
    q.scale_row_length = depth_along_cols && ragged ? d.num_groups : 1;
    q.scale_group_stride = depth_along_cols ? (ragged ? kBytes : rows * kBytes) : cols * kBytes;
    return q;
  }
  int64_t shape[2] = {0, 0};
  gg_block_scale_shape(t.block_scaling, rows, cols, depth_along_cols ? 1 : 0, ragged ? 1 : 0,
                       d.num_groups, shape);
  q.scale_row_length = shape[1];
  // Stacked weights keep a scale matrix per group (one byte per e8m0 or
  // ue4m3 entry, four per fp32 one of 1x128 / 128x128 blocks); a rank-2
  // operand's one matrix serves every group.
  const bool fp32_entries =
      t.block_scaling == GG_BLOCK_1X128 || t.block_scaling == GG_BLOCK_128X128;
  q.scale_group_stride = t.rank == 3 ? shape[0] * shape[1] * (fp32_entries ? 4 : 1) : 0;
  q.token_blocks = ragged;
  return q;
}

int token_block_size(const gg_gemm_desc& d) {
  const int lhs = decoded_block_size(d.lhs.block_scaling);
  return lhs > 0 ? lhs : decoded_block_size(d.rhs.block_scaling);
}

}  // namespace gg::portable

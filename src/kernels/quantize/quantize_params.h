// What the grouped-quantize kernels are given: the normalized descriptor
// reduced to base pointers, strides in elements and scale-matrix geometry,
// plus the workspace words the two launches share. The launcher
// (quantize_path.cpp, plain C++) builds it; the kernels take it by value.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "common/hd.h"
#include "groupgemm/groupgemm.h"

namespace gg::quantize {

// Elements of the input tile along K (every row block size divides it).
constexpr int kTileCols = 128;

// One requested output, in its own coordinates: rows x cols per matrix
// (rowwise: tokens x K; columnwise: K x tokens), blocks along its columns.
struct OutputParams {
  uint8_t* data;  // null: not requested
  gg_dtype dtype;
  gg_block_scaling scaling;
  gg_scale_extent extent;
  int block;                     // elements per block along cols; 0 without block scales
  int64_t row_stride;            // elements
  int64_t matrix_stride;         // elements between stacked matrices
  uint8_t* block_scales;         // null without block scales
  // Scale entries per scale row and per stacked matrix. Row scales
  // (GG_BLOCK_ROWWISE) have one entry per output row, and a columnwise
  // output's rows of a ragged input one per group: row_scale_entry.
  int64_t scale_row_length;
  int64_t scale_matrix_entries;
  float* scale;                  // fp32 per tensor or per group; null for none
};

struct QuantizeParams {
  int32_t groups;
  bool stacked;                // input [G, N, K]; else ragged [M, K]
  const void* sizes;           // ragged: device [G]
  const void* offsets;         // ragged: device [G] or null
  gg_index_type index_type;
  int64_t rows;                // M (ragged) or N (stacked)
  int64_t cols;                // K
  int tile_rows;               // tokens per tile: 64, 128 or 256 (plan/quantize_plan.h)
  // The quantize launch takes each chunk's rows as one span
  // (codes_ignore_groups or group_scales_by_row, plan/quantize_plan.h),
  // with each row's group scale where row_scales.
  bool span;
  bool row_scales;
  // The amax launch reads all the groups' rows as one span, for the
  // tensor's amax alone (needs_tensor_amax_only, plan/quantize_plan.h).
  bool amax_span;
  // The quantize launch codes each chunk whose non-empty groups start on
  // its columnwise blocks as one group of the chunk's rows
  // (groups_only_restart_column_blocks, plan/quantize_plan.h).
  bool aligned_groups_as_one;

  const void* input;
  gg_dtype input_type;
  int64_t input_stride;         // elements per input row
  int64_t input_matrix_stride;  // elements between stacked matrices
  bool aligned_input;           // every input row starts 16-byte aligned

  OutputParams rowwise;
  OutputParams columnwise;
  float* amax;  // per-group amax output, or null

  // Workspace: the GG_DEVICE_* flags word and the per-group amax
  // accumulators (fp32 bits; entry `groups` is the tensor's), zeroed by a
  // memset before the amax launch.
  uint32_t* flags;
  uint32_t* amax_bits;
  // Outputs under row scales (GG_BLOCK_ROWWISE): the magnitude max of each
  // output row (fp32 bits; a word per scale entry, by row_scale_entry),
  // which the amax launch gathers by atomicMax from every tile that holds
  // part of the row and the quantize launch turns into the row's scale.
  // Null for an output without row scales. In the workspace after the amax
  // words, zeroed by the same memset (scratch_bytes in all).
  uint32_t* row_maxima;     // the rowwise output's: a token's row (stacked: a matrix row)
  uint32_t* column_maxima;  // the columnwise output's: a K column of a group (or matrix)
  size_t scratch_bytes;
  bool amax_pass;  // the amax launch runs first (some output or amax needs it)
  // sm_90+: the quantize launch is the amax launch's programmatic dependent
  // (quantize_kernel.cuh's launch).
  bool dependent_launch;
};

// Whether the columnwise codes are the rowwise ones, transposed: both
// outputs fp8 without blocks, of one dtype, under the same group or tensor
// scale. The quantize launch then codes each element once (tile_writers.cuh).
inline bool columnwise_codes_are_rowwise(const QuantizeParams& p) {
  return p.rowwise.data != nullptr && p.columnwise.data != nullptr &&
         p.rowwise.scaling == GG_BLOCK_NONE && p.columnwise.scaling == GG_BLOCK_NONE &&
         p.rowwise.dtype == p.columnwise.dtype && p.rowwise.extent == p.columnwise.extent;
}

// Scale entries of an output under row scales: one per output row of
// every matrix. The rowwise output of a ragged input [M, K] has M rows, of
// stacked input [G, N, K] G N; the columnwise one's rows are the K columns
// of each group (its region of the transposed input) or matrix: G K.
GG_HD int64_t row_scale_entries(bool columnwise, bool stacked, int32_t groups, int64_t rows,
                                int64_t k) {
  if (columnwise) return int64_t{groups} * k;
  return stacked ? int64_t{groups} * rows : rows;
}

// The scale geometry of an output under row scales whose matrices have
// `out_rows` rows (rowwise: M or N; columnwise: K): an entry per row, and
// a ragged input's columnwise rows one per group.
GG_HD void set_row_scale_geometry(OutputParams* out, bool columnwise, bool stacked,
                                  int32_t groups, int64_t out_rows) {
  out->scale_row_length = columnwise && !stacked ? groups : 1;
  out->scale_matrix_entries = out_rows * out->scale_row_length;
}

// The scale entry of output row `row` of an output under row scales, for
// matrix `matrix` (stacked) and group g (a ragged input's columnwise
// output, whose scale rows hold one entry per group): the reference's
// block_scales_of for GG_BLOCK_ROWWISE.
GG_HD int64_t row_scale_entry(const OutputParams& out, bool columnwise, bool stacked,
                              int64_t matrix, int64_t g, int64_t row) {
  return matrix * out.scale_matrix_entries + row * out.scale_row_length +
         (columnwise && !stacked ? g : 0);
}

// Scratch past the flags: the G + 1 amax words, then the row maxima of the
// outputs under row scales.
inline size_t quantize_scratch_bytes(int32_t groups, int64_t row_maxima_words,
                                     int64_t column_maxima_words) {
  return 4 * (static_cast<size_t>(groups) + 1 + static_cast<size_t>(row_maxima_words) +
              static_cast<size_t>(column_maxima_words));
}

}  // namespace gg::quantize

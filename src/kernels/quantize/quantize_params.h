// What the grouped-quantize kernels are given: the normalized descriptor
// reduced to base pointers, strides in elements and scale-matrix geometry,
// plus the workspace words the two launches share. The launcher
// (quantize_path.cpp, plain C++) builds it; the kernels take it by value.
#pragma once

#include <stddef.h>
#include <stdint.h>

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
  int64_t scale_row_length;      // scale entries per scale row
  int64_t scale_matrix_entries;  // scale entries per stacked matrix
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

// Scratch past the flags: the G + 1 amax words.
inline size_t quantize_scratch_bytes(int32_t groups) {
  return 4 * (static_cast<size_t>(groups) + 1);
}

}  // namespace gg::quantize

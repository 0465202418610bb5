// What the portable kernels are given: the normalized descriptor reduced to
// base pointers, strides in elements and extents, plus the per-group scratch
// that the metadata kernel fills. The launcher (portable_gemm.cpp) builds
// these on the host; the kernels take them by value (__grid_constant__).
//
// Names follow the kernel's view of the product: each group's result is
// out_rows x out_cols, reached by contracting over a depth. lhs supplies the
// rows, rhs the columns.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "groupgemm/groupgemm.h"
#include "kernels/portable/operand_decode.h"
#include "kernels/tile_scheduler.h"
#include "plan/plan.h"

namespace gg::portable {

// Which index of an operand is contiguous in memory: the contraction depth or
// the outer (output-side) index.
enum class Major { kDepth, kOuter };

struct GemmParams {
  gg_op op;
  int32_t groups;
  const GroupRecord* records;    // [groups], written by the metadata kernel
  const int64_t* total_m_tiles;  // ragged-M m-tiles over all groups, likewise

  int64_t out_rows;  // ragged-K: P (ragged-M rows come from the groups)
  int64_t out_cols;  // ragged-M: N; ragged-K: Q
  int64_t depth;     // ragged-M: K (a ragged-K group contracts over its tokens)

  // ragged-M: [M, K]; ragged-K: [M, P] (Major::kOuter) or [P, M] (Major::kDepth).
  const void* lhs;
  int64_t lhs_stride;
  // ragged-M: [G, K, N] (kOuter) or [G, N, K] (kDepth), stacked or G pointers;
  // ragged-K: [M, Q] (kOuter) or [Q, M] (kDepth).
  const void* rhs;
  int64_t rhs_stride;
  int64_t rhs_group_stride;
  bool rhs_pointers;
  // ragged-M: [M, N]; ragged-K: [G, P, Q], stacked or G pointers.
  void* out;
  gg_dtype out_type;
  int64_t out_stride;
  int64_t out_group_stride;
  bool out_pointers;
  // GG_GEMM_ZERO_UNUSED_ROWS: M, and out rows from the last group's end to it
  // are zeroed (unused_rows.cuh); else 0.
  int64_t zero_rows_end;
  // ragged-M only: [G, N], or null.
  const void* bias;
  gg_dtype bias_type;
  int64_t bias_stride;

  float alpha;
  float beta;
  const float* alpha_per_group;  // null: use alpha
  const float* beta_per_group;   // null: use beta

  // Quantized operands (a 16-bit operand keeps the defaults): the kernels
  // that decode an operand read its format here (operand_decode.h).
  QuantOperand lhs_quant;
  QuantOperand rhs_quant;
};

// Inputs of the metadata kernel, which clamps the device sizes once per launch.
struct MetadataParams {
  const void* sizes;
  const void* offsets;  // null: prefix-sum layout
  gg_index_type index_type;
  int32_t groups;
  int64_t rows;  // the ragged dimension's capacity M
  int block_m;   // rows per m-tile, for the ragged-M tile numbering
  GroupRecord* records;
  int64_t* total_m_tiles;
  uint32_t* flags;  // the workspace's GG_DEVICE_* word
};

// Scratch layout, from gg::kWorkspaceScratchOffset: the m-tile total, then
// one 32-byte record per group.
constexpr size_t kRecordsOffset = 32;

constexpr size_t metadata_scratch_bytes(int32_t groups) {
  return kRecordsOffset + static_cast<size_t>(groups) * sizeof(GroupRecord);
}

// The kernels' view of a validated descriptor whose plan shape is `shape`,
// with the metadata scratch at `scratch` (host code: portable_gemm.cpp).
GemmParams gemm_params_of(const gg_gemm_desc& d, const GemmShape& shape, void* scratch);

}  // namespace gg::portable

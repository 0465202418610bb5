// The group extents of one call, read once from the sizes (and offsets)
// arrays through gg::clamp_group, in group order, as every kernel reads them.
//
// A stacked tensor (quantize of [G, N, K] weights) is described by the same
// table with every group spanning all N rows of its own matrix, so the
// callers walk ragged and stacked inputs with one loop. `ragged` says which
// of the two it is: only a ragged dimension restarts its scale blocks at
// every group start.
#pragma once

#include <stdint.h>

#include <vector>

#include "common/groups.h"
#include "groupgemm/groupgemm.h"
#include "reference/matrix_view.h"

namespace gg::ref {

struct GroupTable {
  bool ragged;                      // groups share one matrix (else: one matrix each)
  int64_t rows;                     // rows of the (each) matrix: the capacity M, or N
  std::vector<GroupExtent> groups;  // clamped extents, in group order
};

// Which dimension of a matrix holds the tokens of a group table (none for
// GEMM weights, which belong to their group whole).
enum class TokenDim { kNone, kRows, kCols };

// Ragged rows: clamps every group as a kernel does, ORing GG_DEVICE_* bits.
GroupTable read_groups(const gg_group_sizes& sizes, int32_t num_groups, int64_t rows,
                       uint32_t* flags);

// Stacked matrices: group g is all `rows` rows of matrix g.
GroupTable stacked_groups(int32_t num_groups, int64_t rows);

// First block of group g along its rows when blocks of `block` rows restart
// at every group start: the blocks of all earlier groups come first.
int64_t first_block(const GroupTable& table, int32_t g, int64_t block);

// The part of a `rows x cols` matrix that group `extent` owns along `tokens`.
Region group_region(int64_t rows, int64_t cols, TokenDim tokens, const GroupExtent& extent);

}  // namespace gg::ref

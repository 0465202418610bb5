// Per-group TMA descriptors for the token operands of a ragged-K product
// (lhs [M, P] and rhs [M, Q], tokens as rows: both MN-major). A group's
// maps start at its first token and end at its last, so TMA reads only the
// group's rows and fills every row past its end with zeros: the kernel's
// k-steps need no zeroing of the neighbouring groups' tokens in shared
// memory, and no barrier for it (skewed wgrad ran 1.07-1.29x
// faster without that zeroing; decode wgrad with 4-8 tokens a group ran
// 1.18-1.22x faster on an H200 but 0.94-0.96x on an H100, which no static
// fact tells apart, so the maps serve both). Group starts need no
// alignment: a row of an MN-major operand is a multiple of 16 bytes long
// (TMA requires it of every stride), so any row is a valid base address.
//
// The host cannot read the device sizes without a sync, so it encodes one
// map of each whole operand and a one-CTA kernel, launched just before the
// GEMM on the same stream, builds the clamped group table (group_table.cuh,
// the rule the GEMM's own table follows) and writes 2 G copies into the
// workspace, each with its group's base address and row count
// (tensormap.replace). As with the per-expert maps (expert_maps.h), the
// GEMM is launched as the writer's programmatic dependent, so it starts
// while the writer runs, and acquires a map before its first use
// (acquire_written_map, which first waits for the writer). A group that
// starts 16-byte aligned and fills whole k-steps has nothing to zero, and the
// GEMM loads it through the whole operand's map instead, sparing the acquire
// (uniform lists of such groups ran up to 4% slower through token maps).
// Capturable: a replay re-reads the sizes.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#include "groupgemm/groupgemm.h"

namespace gg::sm90 {

// Workspace bytes of the maps of `groups` groups: [G] lhs maps, then [G] rhs.
constexpr size_t token_maps_bytes(int groups) { return 2 * size_t(groups) * sizeof(CUtensorMap); }

// One token operand: its whole-matrix map (tokens its outer dimension), its
// base address and the bytes from one token's row to the next.
struct TokenOperand {
  CUtensorMap map;
  const void* data;
  int64_t row_bytes;
};

// maps[g] = lhs.map over group g's rows, maps[groups + g] = rhs.map over
// them, the groups clamped to `rows_capacity` rows as the GEMM clamps them.
// `maps` must be 64-byte aligned device memory.
cudaError_t write_token_maps(const TokenOperand& lhs, const TokenOperand& rhs, const void* sizes,
                             const void* offsets, gg_index_type index_type, int groups,
                             int64_t rows_capacity, CUtensorMap* maps, cudaStream_t stream);

}  // namespace gg::sm90

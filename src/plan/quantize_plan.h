// The grouped quantizer's tile height, from static facts only.
//
// A CTA of the quantize kernels (kernels/quantize/) codes tiles of kTm
// tokens x 128 K-elements with 2 kTm threads, and a tile never crosses a
// group, so each group's last tile is partly empty (unless the tiles are
// cut from spans of the groups' rows: codes_ignore_groups,
// group_scales_by_row). Like the GEMM plan
// (plan.h), this one sees what the host knows before a launch -- the rows
// (M of a ragged input, N of each stacked matrix), the group count, the
// input type and the block shapes asked for -- and never the device-side
// sizes, so one plan holds for every replay of a captured graph. Pure
// functions, tested on the CPU (tests/plan/).
#pragma once

#include <stdint.h>

#include <string>

#include "groupgemm/groupgemm.h"

namespace gg {

struct QuantizeShape {
  int64_t rows;    // ragged: M, the token capacity; stacked: N, each matrix's rows
  int32_t groups;
  bool stacked;
  gg_dtype input;
  bool square_blocks;       // an output of 128 x 128 blocks: a tile is one block high
  bool long_column_blocks;  // a columnwise 1 x 128 output
  bool e2m1_codes;          // an output of e2m1 codes (nvfp4, mxfp4)
  int64_t shared_bytes_per_block;  // the device's: what a CTA may opt in to
  // Both launches take each chunk's rows as one span (codes_ignore_groups,
  // and no per-group amax asked for): the tiles see one group of M rows.
  bool one_span = false;
};

// Whether no requested output's codes or scales depend on where the groups
// start or end: ragged input placed by the prefix sum of its sizes (no
// offsets), no group scales, and every output rowwise with blocks along K
// (within a token) or none, or columnwise without blocks (fp8 under a
// tensor scale). Then the groups' rows code as one group: the quantize
// launch takes its tiles from each chunk's rows (128 groups') as one
// span, so a group boundary costs no partial tile and the columnwise rows
// stay on 16-byte chunks.
bool codes_ignore_groups(const gg_quantize_desc& desc);

// Whether the outputs are fp8 under group scales without blocks, rowwise
// alone or both under one dtype (the columnwise codes the rowwise ones,
// transposed), from prefix-sum groups: the quantize launch then takes each
// chunk's rows as one span, each row coded under its own group's scale.
// The amax launch still runs per group (it writes each group's amax), so
// the tile height stays the groups' (QuantizeShape::one_span false); on
// DeepSeek-V3 and Qwen3-30B-A3B at 16384 and 65536 tokens the span's rule
// picks the same heights (128, 256).
bool group_scales_by_row(const gg_quantize_desc& desc);

// Whether the only thing the groups change in the outputs is where a
// columnwise output's blocks along tokens (1 x 128, mxfp8, nvfp4) restart:
// prefix-sum groups, no group scales, the rowwise output as
// codes_ignore_groups allows. Then a chunk (128 groups) whose non-empty
// groups all start on the grid of those blocks from the chunk's first row
// -- groups padded to the block, as routers that pad to 16, 32 or 128
// tokens leave them -- codes its rows as one group: its tiles run across
// the groups' ends, which are block ends, so only its last tile is
// partial. The quantize launch tests this on the device, chunk by chunk
// (quantize_kernel.cuh), so that it holds for every replay of a graph.
bool groups_only_restart_column_blocks(const gg_quantize_desc& desc);

// Whether the amax launch needs only the tensor's amax: no amax output, no
// group scale, no row scales (GG_BLOCK_ROWWISE: each row's max), groups
// back to back (prefix sums). It then reads all the
// groups' rows as one stream, whatever the quantize launch's tiles are
// (nvfp4 under a tensor scale, fp8 under a tensor scale beside columnwise
// blocks), instead of each group's rows in pieces of their own.
bool needs_tensor_amax_only(const gg_quantize_desc& desc);

// Shared memory of a quantize CTA whose tiles are `tile_rows` tokens of
// `input_bytes`-byte elements by 128 (quantize_kernel.cuh checks its layout
// against these). Dynamic: 128 bytes of alignment slack, two stages of raw
// input rows and the code stage (columnwise codes, a byte a token and K
// column; the amaxes of each 32-token chunk of each column and of each
// warp; the columnwise byte scales of blocks of 16 or more tokens).
// Static: the table of 128 groups, the scans' scratch and the tile ring,
// within kQuantizeStaticSmem.
constexpr int64_t quantize_code_stage_bytes(int tile_rows) {
  return int64_t{128} * tile_rows + tile_rows / 32 * 128 * 4 + tile_rows / 16 * 4 +
         128 * (tile_rows / 16);
}
constexpr int64_t quantize_dynamic_smem_bytes(int input_bytes, int tile_rows) {
  return 128 + 2 * int64_t{tile_rows} * 128 * input_bytes + quantize_code_stage_bytes(tile_rows);
}
constexpr int64_t kQuantizeStaticSmem = 6 * 1024;

// Whether a CTA of that height fits the device's shared memory.
constexpr bool quantize_tiles_fit(int input_bytes, int tile_rows, int64_t shared_bytes_per_block) {
  return quantize_dynamic_smem_bytes(input_bytes, tile_rows) + kQuantizeStaticSmem <=
         shared_bytes_per_block;
}

// Groups averaging at most kQuantizeShortGroupRows take 64-token tiles,
// which keep all of a CTA's threads on the group's rows; groups averaging at least
// kQuantizeLongGroupRows take 256-token tiles, whose columnwise code rows
// leave as 256-byte runs (fp8) instead of 128. 128 is the default. On an
// H200, against 128-token tiles (bench-quantize, bf16): at 64 rows a group
// (DeepSeek-V3, 16384 tokens) 64-token tiles ran 1.17x (mxfp8) to 1.36x
// (fp8 with a tensor scale); at 128 rows (Qwen3-30B-A3B, 16384) 0.97-1.00x;
// at 256 and 512 rows 256-token tiles ran mxfp8 1.05-1.10x, fp8 with a
// tensor scale 1.02-1.04x and nvfp4 1.00-1.02x, where 64-token tiles lost
// (0.85-0.93x) and 256-token tiles lost at 64-128 rows (0.58-0.80x). A
// columnwise 1 x 128 output never takes 64-token tiles, which would split
// its blocks, and takes 256 from the same average: on an H200 (bf16,
// against 128-token tiles) 1.05-1.42x under skewed routing and 1.00-1.44x
// under random routing at 65536-131072 rows (DeepSeek-V3 131072 random
// 2.97 -> 2.06 ms; fp16 input 1.06-1.51x), where groups start anywhere and
// the tiles that pay for it (a group's partial last one, rows shifted to
// the output's alignment) are half as many; 0.92-1.00x under uniform
// routing, whose 256- to 1024-row groups start 256-aligned, while a
// tile's sixteen warps met at a CTA barrier to exchange its blocks' chunk
// maxima. Since each block's four warps wait only for each other
// (tile_writers.cuh), 1.08-1.13x faster again there and 1.04-1.07x under
// random routing (on an H200).
//
// Outputs that ignore the groups (codes_ignore_groups), whose tiles are all
// whole but each chunk's span's first and last, take 256-token tiles only from
// kQuantizeTallSpanRows rows: on an H200 (fp8 with a tensor scale, bf16,
// one span under both uniform and random routing) 128-token tiles ran
// 1.04-1.07x faster at 16384 rows (DeepSeek-V3 0.210 against 0.218 ms,
// Qwen3-30B-A3B 0.074 against 0.079), 1.01-1.04x at 32768, and 0.98-1.00x
// at 65536 (why the shorter tiles win on small spans was not traced).
//
// Those figures are for groups of exactly the average. Routed groups
// spread around it, and at an average of 64 rows half of them spill a few
// rows into a second 64-token tile, which costs nearly a whole tile. So
// ragged fp8 outputs of 16-bit input take 64-token tiles only for groups
// averaging at most kQuantizeShortGroupRowsFp8 (H200, 64-token tiles over
// 128-token ones, fp8 with a tensor scale and mxfp8: at 32 rows a group
// 1.02-1.24x under random and skewed routing, 1.59-1.67x uniform; at 48
// rows 0.85-0.94x random and skewed; at 64 rows on DeepSeek-V3 and
// Qwen3-30B-A3B 0.76-0.90x random, 0.83-1.05x skewed, 1.12-1.27x uniform).
// e2m1 codes (nvfp4) keep 64-token tiles up to 64 rows under every routing
// (1.12-1.52x), as do fp32 input (not measured under routing) and stacked
// matrices, whose rows are exact.
constexpr int64_t kQuantizeShortGroupRows = 64;
constexpr int64_t kQuantizeShortGroupRowsFp8 = 32;
constexpr int64_t kQuantizeLongGroupRows = 256;
constexpr int64_t kQuantizeTallSpanRows = 65536;

struct QuantizePlan {
  QuantizeShape shape;
  int tile_rows;       // 64, 128 or 256; 0 where no height fits the device
  std::string reason;  // why, in a few words

  // One line for GROUPGEMM_LOG=1.
  std::string describe() const;
};

// 128-token tiles where an output has 128 x 128 blocks, or a columnwise
// output has 1 x 128 blocks and the groups are not long; else 64 for short
// groups, 256 for long ones of 16-bit input (two stages of 256 fp32
// tokens exceed every device's shared memory) where they fit the device's
// shared memory (227 KB a CTA on sm_90, not the 163 KB of sm_80 or the 99
// KB of sm_86 and sm_89), 128 between. Where 128-token tiles do not fit
// (fp32 input on sm_86 and sm_89: 153 KB) 64 instead, or, for the block
// shapes that need 128, none: tile_rows 0, and the reason says what it
// would take.
QuantizePlan plan_quantize(const QuantizeShape& shape);

// The problem of a validated (normalized) descriptor in plan terms, on a
// device whose CTAs may opt in to `shared_bytes_per_block`.
QuantizeShape quantize_shape(const gg_quantize_desc& desc, int64_t shared_bytes_per_block);

}  // namespace gg

// Where each depth of a weight row and of a token meets in the skinny
// kernel's mma.sync.m16n8k16 (skinny_kernel.cuh). GG_HD, so tests/plan
// checks on the CPU that every A element meets the B element of the same
// depth, and that a block's depths are each used once.
//
// The weights are the A operand (16 rows of output columns), the tokens the
// B operand (8 columns). A contraction may sum its terms in any order, so
// the depths need not reach the mma in order, only in the same order in A
// and B: lane 4 g + q (q = lane % 4) takes, of each weight row it holds,
// 16-byte chunks of codes, and the elements of its 4 k-values of an mma are
// 4 consecutive elements of a chunk in the decode's order (skinny_decode.h;
// e2m1: pairs j and j + 4 of each 8). A thread's chunks go two by two (a
// step: 32 bytes of codes a row): step s of a 512-deep block gives quad
// position q its chunks at depth s x 8 c + q x 2 c and + c, c the elements
// of a chunk (32 e2m1, 16 fp8). So a 512-deep block is 32 mmas whatever
// the format: 4 chunks of 8 mmas (e2m1) or 8 of 4 (fp8).
//
// The B side: the CTA's 256 threads fill a shared-memory block of the
// token tile's fragments, each thread one token's 32 depths (a fill unit),
// decoded or read as bf16 and put in the A side's order; lane L's B
// registers of mma m of 8-token tile t are the two words at
// b_slot(m, t, L), so a warp reads a fragment as 256 contiguous bytes.
#pragma once

#include "common/hd.h"

namespace gg::skinny {

constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kWarpRows = 32;                   // weight rows (output columns) a warp takes
constexpr int kCtaRows = kWarps * kWarpRows;    // 256
constexpr int kTileTokens = 16;                 // two 8-token mma columns
constexpr int kBlockDepth = 512;                // depths of one shared-memory B block
constexpr int kBlockMmas = kBlockDepth / 16;    // 32
constexpr int kBlockWords = kBlockMmas * 2 * 32 * 2;  // 4096: 16 KB
constexpr int kFillElements = 32;               // depths of a fill unit

GG_HD constexpr int chunk_elements(bool e2m1) { return e2m1 ? 32 : 16; }

// Chunks of one row a thread takes in a block: 4 (e2m1) or 8 (fp8).
GG_HD constexpr int block_chunks(bool e2m1) { return kBlockDepth / (4 * chunk_elements(e2m1)); }

// mmas of one chunk: 8 (e2m1) or 4 (fp8).
GG_HD constexpr int chunk_mmas(bool e2m1) { return chunk_elements(e2m1) / 4; }

// Depth within its block of chunk c of quad position q.
GG_HD int chunk_depth(bool e2m1, int q, int c) {
  const int e = chunk_elements(e2m1);
  return (c / 2) * 8 * e + q * 2 * e + (c % 2) * e;
}

// The two elements of decoded word `word` of a chunk (0-15 e2m1, 0-7 fp8),
// as depths within the chunk; low half first.
struct DepthPair {
  int low;
  int high;
};

GG_HD DepthPair word_depths(bool e2m1, int word) {
  if (e2m1) {
    const int low = 8 * (word / 4) + word % 4;
    return DepthPair{low, low + 4};
  }
  return DepthPair{2 * word, 2 * word + 1};
}

// mma j of a chunk reads words 2 j (its A registers 0 and 1: k-values 0-7
// of the mma) and 2 j + 1 (registers 2 and 3) of each of its two rows.

// The fill unit of thread `thread`: token `token` of the tile (0-15), the
// 32 depths from `depth` within the block, which lane `lane` reads as
// mmas mma0 .. mma0 + 7, word 2 j + r of the unit (in the A side's order:
// one e2m1 chunk, or two fp8 chunks) as register r of mma mma0 + j.
struct FillUnit {
  int token;
  int lane;
  int depth;
  int mma0;
};

GG_HD FillUnit fill_unit(bool e2m1, int thread) {
  const int lane = thread % 32;
  const int h = thread / 64;  // which 32 depths of each quad position
  const int token = 8 * ((thread / 32) % 2) + lane / 4;
  const int q = lane % 4;
  return FillUnit{token, lane, chunk_depth(e2m1, q, e2m1 ? h : 2 * h), 8 * h};
}

// Depths of word `word` (0-15) of a fill unit, within the unit.
GG_HD DepthPair unit_word_depths(bool e2m1, int word) {
  if (e2m1) return word_depths(true, word);
  const DepthPair p = word_depths(false, word % 8);
  return DepthPair{p.low + 16 * (word / 8), p.high + 16 * (word / 8)};
}

// Word index in a B block of register r (0-1) of mma m, 8-token tile t,
// lane `lane`.
GG_HD int b_slot(int m, int t, int lane, int r) { return ((m * 2 + t) * 32 + lane) * 2 + r; }

// ---- Work items ----
// Item i of the grid's walk is (group, block of kCtaRows columns, tile of
// kTileTokens tokens). Group g's token tiles are tiles_before = the tiles of
// the groups before it .. + group_tiles, and its items are tiles_before x
// n_blocks .. (tiles_before + group_tiles) x n_blocks, so the group holding
// item i is the one whose tiles hold i / n_blocks (the group table's
// search); within it, the token tiles of one block of columns come one
// after another, so the CTAs reading a block's weights run together and
// share them in L2.
struct ItemPlace {
  int64_t n_block;
  int64_t token_tile;
};

GG_HD ItemPlace item_place(int64_t item, int64_t n_blocks, int64_t tiles_before,
                           int64_t group_tiles) {
  const int64_t in_group = item - tiles_before * n_blocks;
  return ItemPlace{in_group / group_tiles, in_group % group_tiles};
}

// ---- The epilogue's pairs ----
// Accumulator e of lane L's mma block (mi, t) is weight row (output column)
// 16 mi + 8 (e / 2) + L / 4 and token 8 t + 2 (L % 4) + e % 2 of the
// warp's. Output rows are tokens, so a lane's two accumulators of one row
// (e, e + 1) are two tokens of one column: lanes L and L ^ 4, holding
// adjacent columns, trade one value each, after which a lane of even
// L / 4 holds token 2 (L % 4) of its column and the next, and a lane of
// odd L / 4 token 2 (L % 4) + 1 of the column before and its own.
struct StorePair {
  int token;  // within the warp's tile
  int col;    // within the warp's rows, even
};

// Whether lane `lane` gives its partner its low accumulator (e even), else
// its high one, and keeps the other.
GG_HD bool gives_low(int lane) { return (lane / 4) % 2 != 0; }

// Lane `lane`'s pair h (accumulators 2 h and 2 h + 1) of block (mi, t).
GG_HD StorePair store_pair(int lane, int mi, int t, int h) {
  const int odd = gives_low(lane) ? 1 : 0;
  return StorePair{8 * t + 2 * (lane % 4) + odd, 16 * mi + 8 * h + lane / 4 - odd};
}

}  // namespace gg::skinny

// Index math of one operand slice in shared memory: where each 16-byte copy
// lands and what it reads, and which row each lane hands to ldmatrix. GG_HD,
// so tests/plan checks it on the CPU against the PTX definition of ldmatrix.
//
// An operand is kOuter indices of the output side (rows m for lhs, columns n
// for rhs) by kDepth steps of the contraction. In global memory either the
// depth is contiguous (Major::kDepth: lhs [M, K], rhs [N, K], token-contiguous
// ragged-K operands) or the outer index is (Major::kOuter: rhs [K, N],
// token-major ragged-K operands [M, P]). Shared memory keeps the global
// orientation, so every 16-byte global segment is one copy, and pads each row
// by one 16-byte chunk: a row pitch of an odd number of 16-byte units puts the
// 8 rows that one ldmatrix phase reads in 8 different bank quads.
//
// Fragments come out the same for both orientations: ldmatrix reads
// depth-contiguous rows as they are and outer-contiguous rows with .trans, and
// either way lane t holds (outer t/4, depths 2(t%4) and 2(t%4)+1) of each 8x8
// block, the lower depth in the low half of the register. That is the
// mma.sync A layout for lhs and, read as columns, its B layout for rhs.
//
// Bounds are kept at the copy: a chunk copies only its elements inside the
// operand and the rest is zero-filled; a chunk with none inside reads nothing.
// One exception, by design: a depth-contiguous chunk that starts before
// depth_begin (a ragged-K group start need not be chunk-aligned) is copied
// whole, and the kernel zeroes its leading elements in the fragments
// (mask_depth_before).
#pragma once

#include <stdint.h>

#include "common/hd.h"
#include "kernels/portable/gemm_params.h"

namespace gg::portable {

// Which elements of an operand exist, in a matrix whose memory rows are
// row_stride elements apart: outer indices [outer_begin, outer_end) and depths
// [depth_begin, depth_end). outer_begin is also the tile's first outer index.
struct OperandExtent {
  int64_t row_stride;
  int64_t outer_begin;
  int64_t outer_end;
  int64_t depth_begin;
  int64_t depth_end;
};

// One 16-byte copy: `valid` elements from `source_offset` (elements from the
// matrix's base) to `stage_element` of the stage; the rest zero-filled.
struct ChunkCopy {
  int stage_element;
  int64_t source_offset;
  int valid;
};

// The first element of one 16-byte chunk of a stage.
struct ChunkOrigin {
  int stage_element;
  int64_t outer;
  int64_t depth;
};

template <int kOuter, int kDepth, Major kMajor, int kElementBytes>
struct OperandLayout {
  static constexpr int kChunk = 16 / kElementBytes;  // elements per copy
  static constexpr bool kDepthMajor = kMajor == Major::kDepth;
  static constexpr int kRowElements = kDepthMajor ? kDepth : kOuter;  // contiguous run
  static constexpr int kRows = kDepthMajor ? kOuter : kDepth;
  static constexpr int kPitch = kRowElements + kChunk;           // padded row, in elements
  static constexpr int kBytes = kRows * kPitch * kElementBytes;  // one stage
  static constexpr int kChunksPerRow = kRowElements / kChunk;
  static constexpr int kChunks = kRows * kChunksPerRow;

  static_assert(kOuter % 16 == 0 && kDepth % 16 == 0, "fragments are 16 x 16 blocks");
  static_assert(kPitch * kElementBytes / 16 % 2 == 1, "pitch must be an odd number of chunks");

  // Elements of the chunk starting at `index` that lie before `end`.
  static GG_HD int elements_before(int64_t end, int64_t index) {
    const int64_t n = end - index;
    return n <= 0 ? 0 : (n >= kChunk ? kChunk : static_cast<int>(n));
  }

  // Where chunk number `chunk` (0 .. kChunks - 1) of the slice at depths
  // [depth0, depth0 + kDepth) starts: its stage element, and the outer
  // index and depth of its first element (the chunk runs along the depth
  // when kDepthMajor, along the outer index otherwise).
  static GG_HD ChunkOrigin chunk_origin(const OperandExtent& e, int64_t depth0, int chunk) {
    const int row = chunk / kChunksPerRow;
    const int column = chunk % kChunksPerRow * kChunk;
    if constexpr (kDepthMajor) {
      return ChunkOrigin{row * kPitch + column, e.outer_begin + row, depth0 + column};
    } else {
      return ChunkOrigin{row * kPitch + column, e.outer_begin + column, depth0 + row};
    }
  }

  // Copy number `chunk` of the slice at depths [depth0, depth0 + kDepth).
  static GG_HD ChunkCopy chunk_copy(const OperandExtent& e, int64_t depth0, int chunk) {
    const ChunkOrigin o = chunk_origin(e, depth0, chunk);
    if constexpr (kDepthMajor) {
      const int valid = o.outer < e.outer_end ? elements_before(e.depth_end, o.depth) : 0;
      return ChunkCopy{o.stage_element, o.outer * e.row_stride + o.depth, valid};
    } else {
      const bool depth_inside = o.depth >= e.depth_begin && o.depth < e.depth_end;
      const int valid = depth_inside ? elements_before(e.outer_end, o.outer) : 0;
      return ChunkCopy{o.stage_element, o.depth * e.row_stride + o.outer, valid};
    }
  }

  // The stage element at which `lane` points ldmatrix (x4) for the 16 x 16
  // block at (outer0, depth0): lanes 8j .. 8j+7 give the rows of 8x8 block j,
  // and block j covers outers outer0 + 8 (j & 1), depths depth0 + 8 (j >> 1).
  // Depth-major rows are outers; outer-major rows are depths (read .trans).
  static GG_HD int fragment_row(int outer0, int depth0, int lane) {
    const int block = lane / 8;
    const int outer = outer0 + (block & 1) * 8;
    const int depth = depth0 + (block >> 1) * 8;
    return kDepthMajor ? (outer + lane % 8) * kPitch + depth : (depth + lane % 8) * kPitch + outer;
  }
};

// Two 16-bit halves of a register, kept (all ones) where their depth is at or
// past depth_begin: the low half holds `depth`, the high half depth + 1.
GG_HD uint32_t keep_mask(int64_t depth, int64_t depth_begin) {
  return (depth >= depth_begin ? 0x0000ffffu : 0u) | (depth + 1 >= depth_begin ? 0xffff0000u : 0u);
}

// Zeroes the elements before depth_begin in a 16 x 16 block's registers as
// ldmatrix left them (r[0], r[1]: depths 0-7; r[2], r[3]: depths 8-15);
// block_depth0 is the global depth of the block's depth 0.
GG_HD void mask_depth_before(uint32_t (&r)[4], int64_t block_depth0, int64_t depth_begin,
                             int lane) {
  const int64_t depth = block_depth0 + 2 * (lane % 4);
  const uint32_t low = keep_mask(depth, depth_begin);
  const uint32_t high = keep_mask(depth + 8, depth_begin);
  r[0] &= low;
  r[1] &= low;
  r[2] &= high;
  r[3] &= high;
}

}  // namespace gg::portable

// Epilogue of the Hopper grouped GEMM: one consumer warpgroup's 64 x BN
// block of fp32 accumulators to the output, with alpha, beta and bias applied
// in fp32, in that order, then one rounding.
//
// Every block goes through a staging buffer in shared memory, laid out as
// the TMA unit reads it: boxes of 64 rows x kChunks 128-byte chunks,
// 128-byte swizzled (chunk c of row r is swizzle row kChunks r + c). Each
// thread writes its accumulator pairs straight into it (an accumulator pair
// of the wgmma fragment is two adjacent columns of one row), so there is no
// exchange between lanes. One chunk a box (a 3-D map) is the usual layout,
// where the swizzle puts a warp's 8 rows x 4 pairs on distinct banks. Two
// (a 4-D map) write 256 contiguous bytes of each output row, which a
// write-only stream on an H200 ran at 1.13x the rate of 128-byte rows, at
// the price of two-way bank conflicts in the staging writes: the layout of
// the sparse-K instance, whose tiles are nearly all epilogue (on an H200,
// decode weight gradients up to 1.10x faster), not of the
// others (0.96-1.01x with it). Then:
//   - TMA store (the usual way): one thread hands the boxes to the TMA unit,
//     and the warpgroup goes straight on to its next tile's mainloop while
//     the stores drain; the memory system sees whole lines. A block may go
//     out this way when all of its 64 rows belong to its group or (ragged-K)
//     lie in the group's own matrix: the tensor map clips rows and columns
//     past the output's edge, but knows nothing of where a group's rows end
//     inside a ragged-M output. With `evict_first` the stored lines are the
//     first L2 gives up (the host sets it for outputs this launch never reads
//     again and that would otherwise push its operands out of L2). Per-expert
//     outputs (a pointer array) go out through their expert's own map.
//   - Copy-out, for a ragged-M block that ends inside its group's last tile,
//     and outputs TMA cannot address: the warpgroup copies the buffer to
//     global memory row by row, a warp writing 512 contiguous bytes per
//     instruction, masked to the valid rows and columns, so no write leaves
//     the group or the output view.
// With beta != 0 the old output is first read into the buffer the same way
// (coalesced, masked) and each thread combines it in place. That read is
// asynchronous (cp.async): a thread's 16-byte loads of a pass are all in
// flight together, one DRAM round trip per pass instead of one per load,
// which is what an fp32 main-grad accumulation (beta = 1) waits on. fp32
// outputs are twice the buffer's width and go out in two passes of BN/2
// columns.
#pragma once

#include <cuda.h>
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline_primitives.h>
#include <stdint.h>

#include <type_traits>

#include "groupgemm/groupgemm.h"
#include "kernels/sm90/sm90_primitives.cuh"

namespace gg::sm90 {

// Where a kernel's results go and how they are scaled.
struct OutputParams {
  // When `bulk`: {cols, rows, groups} or {128-byte chunk, chunks, rows,
  // groups}, boxed as StagingLayout's.
  CUtensorMap map;
  const CUtensorMap* maps;  // per-expert outputs: group g's map (expert_maps.h); else null
  bool bulk;        // TMA stores can address the output (`map` is set)
  int tma_cols;     // the columns `map` covers: cols, rounded down to whole chunks
  bool evict_first;  // TMA stores mark their lines evict-first in L2
  void* data;       // [rows, cols]; [G, rows, cols]; or a device array of G pointers
  int64_t ld;
  int64_t group_stride;  // elements between the groups' matrices (ragged-K)
  bool pointer_array;
  gg_dtype dtype;
  int cols;
  const void* bias;  // ragged-M [G, cols] or null
  int64_t bias_ld;
  gg_dtype bias_dtype;
  float alpha;
  float beta;
  const float* alpha_per_group;
  const float* beta_per_group;
};

// The staging buffer's boxes of 64 rows x kChunks 128-byte chunks: a TMA
// store of one box writes kChunks x 128 contiguous bytes of each row.
template <int kChunks>
struct StagingLayout {
  static_assert(kChunks == 1 || kChunks == 2, "a box is one or two chunks wide");
  static constexpr int kBoxBytes = 64 * 128 * kChunks;
  // Byte offset of the element at row r, byte b of a block row: box
  // b / (128 kChunks); there, chunk c = b / 128 % kChunks of row r is
  // swizzle row s = kChunks r + c, whose 16-byte granule k lies at k ^ (s % 8)
  // (the TMA 128-byte swizzle; boxes start 1024-byte aligned).
  static __device__ __forceinline__ int offset(int r, int b) {
    const int s = kChunks * r + (b / 128) % kChunks;
    return (b / (128 * kChunks)) * kBoxBytes + s * 128 + ((((b % 128) / 16) ^ (s & 7)) << 4) +
           b % 16;
  }
};

// Waits until the TMA unit has read the staging buffer's previous contents,
// and every thread of the warpgroup is done with them; then the warpgroup
// may write it again.
__device__ __forceinline__ void claim_staging(int thread, int barrier) {
  if (thread == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>{});
  sync_warpgroup(barrier);
}

// Moves a pass of the block between the staging buffer and global memory,
// 16 bytes per thread and step in row-major order (a warp covers 512
// contiguous bytes of a row), skipping rows >= rows and columns >= cols.
// kToGlobal: buffer -> out; else out -> buffer (the old output, for beta),
// whole chunks by cp.async, complete for this thread on return.
template <int kBytes, int kChunks, bool kToGlobal>
__device__ __forceinline__ void copy_block(uint8_t* staging, void* out, int64_t ld, int64_t row,
                                           int rows, int col, int pass_cols, int cols,
                                           int thread) {
  constexpr int kChunkCols = 16 / kBytes;
  const int chunks_per_row = pass_cols / kChunkCols;
  for (int j = thread; j < 64 * chunks_per_row; j += 128) {
    const int r = j / chunks_per_row;
    const int c = (j % chunks_per_row) * kChunkCols;
    if (r >= rows || col + c >= cols) continue;
    uint8_t* shared = staging + StagingLayout<kChunks>::offset(r, c * kBytes);
    uint8_t* global = static_cast<uint8_t*>(out) + ((row + r) * ld + col + c) * kBytes;
    if (col + c + kChunkCols <= cols) {
      if constexpr (kToGlobal) {
        *reinterpret_cast<uint4*>(global) = *reinterpret_cast<const uint4*>(shared);
      } else {
        __pipeline_memcpy_async(shared, global, 16);
      }
    } else {
      for (int b = 0; b < (cols - col - c) * kBytes; ++b) {  // the row's last, partial chunk
        if constexpr (kToGlobal) {
          global[b] = shared[b];
        } else {
          shared[b] = global[b];
        }
      }
    }
  }
  if constexpr (!kToGlobal) {
    __pipeline_commit();
    __pipeline_wait_prior(0);
  }
}

// One box to the output, evict-first in L2 where the output asks for it.
template <int kRank>
__device__ __forceinline__ void tma_store(const OutputParams& o, const CUtensorMap* map,
                                          const int32_t (&coords)[kRank], const uint8_t* box) {
  if (o.evict_first) {
    tma_store_evict_first(map, coords, box);
  } else {
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, map, coords,
                                    box);
  }
}

// Hands `columns` columns of the staging buffer, starting at output column
// `col`, to the TMA unit.
template <int kChunks>
__device__ __forceinline__ void tma_store_block(const OutputParams& o, const uint8_t* staging,
                                                int col, int columns, int64_t row, int group,
                                                int thread, int barrier) {
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the writes, to the TMA unit
  sync_warpgroup(barrier);
  if (thread != 0) return;
  const int chunk_cols = o.dtype == GG_DTYPE_FP32 ? 32 : 64;
  const CUtensorMap* map = o.maps != nullptr ? o.maps + group : &o.map;
  const int32_t matrix = o.maps != nullptr ? 0 : group;  // a per-expert map holds one matrix
  const int box_cols = kChunks * chunk_cols;
  for (int box = 0; box * box_cols < columns && col + box * box_cols < o.cols; ++box) {
    const uint8_t* box_data = staging + box * StagingLayout<kChunks>::kBoxBytes;
    const int32_t r = static_cast<int32_t>(row);
    if constexpr (kChunks == 1) {
      tma_store(o, map, {col + box * box_cols, r, matrix}, box_data);
    } else {
      tma_store(o, map, {0, col / chunk_cols + box * kChunks, r, matrix}, box_data);
    }
  }
  cuda::ptx::cp_async_bulk_commit_group();
}

// Two adjacent values of the output or bias, as fp32 (the second 0 past `cols`).
__device__ __forceinline__ float2 load_pair(const void* base, gg_dtype type, int64_t i, bool second) {
  if (type == GG_DTYPE_FP32) {
    const float* p = static_cast<const float*>(base) + i;
    return make_float2(p[0], second ? p[1] : 0.0f);
  }
  const uint16_t* p = static_cast<const uint16_t*>(base) + i;
  const uint16_t lo = p[0];
  const uint16_t hi = second ? p[1] : 0;
  return type == GG_DTYPE_BF16 ? make_float2(__bfloat162float(__ushort_as_bfloat16(lo)),
                                             __bfloat162float(__ushort_as_bfloat16(hi)))
                               : make_float2(__half2float(__ushort_as_half(lo)),
                                             __half2float(__ushort_as_half(hi)));
}

// A pair of Out values in the staging buffer, as fp32; and back, with one
// rounding.
template <typename Out>
__device__ __forceinline__ float2 read_staged(const uint8_t* at) {
  if constexpr (sizeof(Out) == 4) {
    return *reinterpret_cast<const float2*>(at);
  } else if constexpr (std::is_same_v<Out, __nv_bfloat16>) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(at));
  } else {
    return __half22float2(*reinterpret_cast<const __half2*>(at));
  }
}
template <typename Out>
__device__ __forceinline__ void write_staged(uint8_t* at, float2 v) {
  if constexpr (sizeof(Out) == 4) {
    *reinterpret_cast<float2*>(at) = v;
  } else if constexpr (std::is_same_v<Out, __nv_bfloat16>) {
    *reinterpret_cast<__nv_bfloat162*>(at) = __floats2bfloat162_rn(v.x, v.y);
  } else {
    *reinterpret_cast<__half2*>(at) = __floats2half2_rn(v.x, v.y);
  }
}

// A warpgroup's block of the output, as the epilogue sees it: rows
// [row, row + rows) of `out` (rows is at most 64 and the same for the whole
// warpgroup), columns [col, col + BN).
struct Block {
  void* out;
  float alpha;
  float beta;
  int group;
  int64_t row;
  int rows;
  int col;
  bool bulk;  // leaves by TMA store
};

// Pass kPass of a block of Out elements: its kPassCols columns through the
// staging buffer to the output; kBeta: with beta * the old output. `thread`
// is 0..127. Accumulator i of a thread is row warp*16 + lane/4 +
// 8*((i/2)%2), column 8*(i/4) + 2*(lane%4) + i%2 of the block.
template <typename Out, bool kBeta, int kPass, bool kGroupMatrix, int kBlockN, int kChunks,
          int kAccumulators>
__device__ __forceinline__ void store_pass(const OutputParams& o, const Block& k, int thread,
                                           int barrier, uint8_t* staging,
                                           const float (&acc)[kAccumulators]) {
  constexpr int kBytes = sizeof(Out);
  constexpr int kPassCols = kBlockN * 2 / kBytes;  // the buffer holds BN 16-bit columns
  const int pass_col = k.col + kPass * kPassCols;
  claim_staging(thread, barrier);
  if constexpr (kBeta) {
    copy_block<kBytes, kChunks, false>(staging, k.out, o.ld, k.row, k.rows, pass_col, kPassCols,
                                       o.cols, thread);
    sync_warpgroup(barrier);
  }
  // A thread's pairs all lie at its rows r and r + 8 and at one position
  // within their 16-byte granule; granule k of chunk c of row r lies at
  // k ^ (kChunks r + c) % 8, the same for rows r and r + 8. With two chunks
  // a box, rows r and r + 4 of a warp's 8 share banks, so a store takes two
  // wavefronts; lanes that wrote the other chunk first made every store
  // conflict-free but the kernel 0.87-1.0x as fast.
  using Layout = StagingLayout<kChunks>;
  constexpr int kBlockBytes = 8 * kBytes;
  static_assert(kPassCols * kBytes % (128 * kChunks) == 0, "a pass fills whole boxes");
  const int lane = thread % 32;
  const int fragment_row = (thread / 32) * 16 + lane / 4;  // + 8 for the second half
  const int pair_byte = 2 * (lane % 4) * kBytes;           // within 8 columns
  uint8_t* row_base = staging + kChunks * fragment_row * 128 + pair_byte % 16;
  const int swizzle = (pair_byte / 16) ^ (kChunks * fragment_row & 7);  // chunk 0's; chunk c's ^ c
  const bool has_bias = !kGroupMatrix && o.bias != nullptr;
#pragma unroll
  for (int block = 0; block < kPassCols / 8; ++block) {
    const int c = block * 8 + 2 * (lane % 4);  // column in the pass
    float2 b = make_float2(0.0f, 0.0f);
    if (has_bias && pass_col + c < o.cols) {
      b = load_pair(o.bias, o.bias_dtype, int64_t(k.group) * o.bias_ld + pass_col + c,
                    pass_col + c + 1 < o.cols);
    }
    const int chunk = block * kBlockBytes / 128 % kChunks;
    uint8_t* at_block = row_base + (block * kBlockBytes / (128 * kChunks)) * Layout::kBoxBytes +
                        chunk * 128 + ((((block * kBlockBytes % 128) / 16) ^ swizzle ^ chunk) << 4);
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int i = (kPass * kPassCols / 8 + block) * 4 + half * 2;
      uint8_t* at = at_block + half * 8 * kChunks * 128;
      float2 v = make_float2(k.alpha * acc[i], k.alpha * acc[i + 1]);
      if constexpr (kBeta) {
        const float2 old = read_staged<Out>(at);
        v.x += k.beta * old.x;
        v.y += k.beta * old.y;
      }
      v.x += b.x;
      v.y += b.y;
      write_staged<Out>(at, v);
    }
  }
  if (k.bulk) {
    tma_store_block<kChunks>(o, staging, pass_col, kPassCols, k.row, kGroupMatrix ? k.group : 0,
                             thread, barrier);
  } else {
    sync_warpgroup(barrier);
    copy_block<kBytes, kChunks, true>(staging, k.out, o.ld, k.row, k.rows, pass_col, kPassCols,
                                      o.cols, thread);
  }
}

// Every pass of a block of Out elements: fp32 rows are twice the buffer's
// width and go in two.
template <typename Out, bool kBeta, bool kGroupMatrix, int kBlockN, int kChunks,
          int kAccumulators>
__device__ __forceinline__ void store_passes(const OutputParams& o, const Block& k, int thread,
                                             int barrier, uint8_t* staging,
                                             const float (&acc)[kAccumulators]) {
  store_pass<Out, kBeta, 0, kGroupMatrix, kBlockN, kChunks>(o, k, thread, barrier, staging, acc);
  if constexpr (sizeof(Out) == 4) {
    store_pass<Out, kBeta, 1, kGroupMatrix, kBlockN, kChunks>(o, k, thread, barrier, staging, acc);
  }
}

template <typename Out, bool kGroupMatrix, int kBlockN, int kChunks, int kAccumulators>
__device__ __forceinline__ void store_block_of(const OutputParams& o, const Block& k, int thread,
                                               int barrier, uint8_t* staging,
                                               const float (&acc)[kAccumulators]) {
  if (k.beta != 0.0f) {
    store_passes<Out, true, kGroupMatrix, kBlockN, kChunks>(o, k, thread, barrier, staging, acc);
  } else {
    store_passes<Out, false, kGroupMatrix, kBlockN, kChunks>(o, k, thread, barrier, staging, acc);
  }
}

// Stores one warpgroup's block: rows [row, row + rows) of the output (of
// group `group`'s matrix when kGroupMatrix), columns [col, col + BN).
template <bool kGroupMatrix, int kBlockN, int kChunks, int kAccumulators>
__device__ __forceinline__ void store_block(const OutputParams& o, int group, int64_t row, int rows,
                                            int col, int thread, int barrier, uint8_t* staging,
                                            const float (&acc)[kAccumulators]) {
  if (rows <= 0) return;
  const bool fp32 = o.dtype == GG_DTYPE_FP32;
  Block k;
  k.out = o.data;
  if constexpr (kGroupMatrix) {
    k.out = o.pointer_array ? static_cast<void* const*>(o.data)[group]
                            : static_cast<char*>(o.data) + group * o.group_stride * (fp32 ? 4 : 2);
  }
  k.alpha = o.alpha_per_group ? o.alpha_per_group[group] : o.alpha;
  k.beta = o.beta_per_group ? o.beta_per_group[group] : o.beta;
  k.group = group;
  k.row = row;
  k.rows = rows;
  k.col = col;
  // A 4-D map covers a row's whole chunks; a block reaching into its last,
  // partial chunk is copied out.
  k.bulk = o.bulk && (kGroupMatrix || rows == 64) &&
           (o.tma_cols == o.cols || col + kBlockN <= o.tma_cols);
  switch (o.dtype) {
    case GG_DTYPE_FP32:
      store_block_of<float, kGroupMatrix, kBlockN, kChunks>(o, k, thread, barrier, staging, acc);
      break;
    case GG_DTYPE_BF16:
      store_block_of<__nv_bfloat16, kGroupMatrix, kBlockN, kChunks>(o, k, thread, barrier, staging,
                                                                    acc);
      break;
    default:
      store_block_of<__half, kGroupMatrix, kBlockN, kChunks>(o, k, thread, barrier, staging, acc);
      break;
  }
}

// Before a CTA exits: its TMA stores are complete.
__device__ __forceinline__ void drain_stores(int thread) {
  if (thread == 0) cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>{});
}

}  // namespace gg::sm90

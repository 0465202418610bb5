// One operand of a CTA tile in shared memory, on the device: the cp.async
// copies in from global memory and the ldmatrix loads out to the tensor
// cores, placed by operand_layout.h (which explains the layout).
#pragma once

#include <stdint.h>

#include "kernels/portable/gemm_params.h"
#include "kernels/portable/operand_layout.h"
#include "kernels/portable/sm80_ptx.cuh"

namespace gg::portable {

// A 16-bit operand has no decode format (DecodedTile's has one).
struct CopiedFormat {};

// Where one operand of the current tile lives: a 16-byte aligned base (the
// element at outer 0, depth 0) and which of its elements exist.
template <class T>
struct OperandSource {
  const T* matrix;
  OperandExtent extent;
  CopiedFormat format;
};

template <class T, int kOuter, int kDepth, Major kMajor>
struct OperandTile {
  static constexpr int kElementBytes = static_cast<int>(sizeof(T));
  using Layout = OperandLayout<kOuter, kDepth, kMajor, kElementBytes>;
  using Element = T;
  using Source = OperandSource<T>;
  static constexpr bool kDecoded = false;
  static constexpr int kChunk = Layout::kChunk;
  static constexpr int kBytes = Layout::kBytes;

  static __device__ __forceinline__ CopiedFormat format(const QuantOperand&, int64_t,
                                                        const GroupRecord&) {
    return {};
  }

  // Issues this thread's copies of depths [depth0, depth0 + kDepth) into the
  // stage at shared address `stage`. All kThreads threads call it.
  template <int kThreads>
  static __device__ __forceinline__ void copy(const OperandSource<T>& source, int64_t depth0,
                                              uint32_t stage, int thread) {
    static_assert(Layout::kChunks % kThreads == 0, "every thread copies as many chunks");
#pragma unroll
    for (int i = 0; i < Layout::kChunks / kThreads; ++i) {
      const ChunkCopy c = Layout::chunk_copy(source.extent, depth0, thread + i * kThreads);
      // A chunk with nothing to copy still names a valid, aligned address.
      const T* from = c.valid > 0 ? source.matrix + c.source_offset : source.matrix;
      cp_async_16(stage + static_cast<uint32_t>(c.stage_element * kElementBytes), from,
                  c.valid * kElementBytes);
    }
  }

  // Loads the 16 (outer) x 16 (depth) block at (outer0, depth0) of a stage:
  // r[0] = outers 0-7 x depths 0-7, r[1] = outers 8-15 x depths 0-7,
  // r[2] = outers 0-7 x depths 8-15, r[3] = outers 8-15 x depths 8-15.
  static __device__ __forceinline__ void load_block(uint32_t stage, int outer0, int depth0,
                                                    int lane, uint32_t (&r)[4]) {
    const uint32_t row =
        stage + static_cast<uint32_t>(Layout::fragment_row(outer0, depth0, lane) * kElementBytes);
    if constexpr (Layout::kDepthMajor) {
      ldmatrix_x4(r, row);
    } else {
      ldmatrix_x4_trans(r, row);
    }
  }
};

}  // namespace gg::portable

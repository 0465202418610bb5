// The one piece of device code the JAX handlers own: before the library
// runs, zero the start of the XLA-allocated workspace that must begin at
// zero (the device flags when they are read, the quantizer's accumulators)
// and the rows of a ragged-M output that lie past the last group. See
// prepare.cu.
#pragma once

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

namespace gg_jax {

// sizes: [groups] int32 (index_bytes 4) or int64 (8), device memory (groups
// 0: none are read). out: [rows, row_bytes] bytes of a ragged-M output, or
// nullptr for none.
// Rows from the clamped sum of the sizes (negative sizes count 0, the sum is
// cut at rows: the library's own rule) to rows are zeroed, as are the first
// head_bytes of workspace. One launch on `stream`, no host sync.
cudaError_t launch_prepare(const void* sizes, int index_bytes, int32_t groups, void* out,
                           int64_t rows, int64_t row_bytes, void* workspace, size_t head_bytes,
                           cudaStream_t stream);

}  // namespace gg_jax

// Zeroes a ragged-M output's rows past the last group, and the start of the
// workspace that must begin at zero (the flags word when it is read; the
// quantizer's accumulators), in one small launch before the library runs.
//
// jax.lax.ragged_dot defines rows past sum(group_sizes) as zeros, while the
// library never writes them (its ragged tensors have a capacity, and rows
// past the last group belong to nobody). The sum is known only on the
// device, so the tail is cleared here: every block sums the sizes itself
// (G loads, cheap beside the product) and the grid strides over the tail,
// which is empty when the groups fill the buffer, the usual MoE case.
// Clearing the whole output instead would write M x N bytes more per call.
#include "jax/prepare.h"

#include <algorithm>

namespace gg_jax {
namespace {

constexpr int kThreads = 256;

__global__ void __launch_bounds__(kThreads)
    prepare_kernel(const void* sizes, int index_bytes, int32_t groups, unsigned char* out,
                   int64_t rows, int64_t row_bytes, unsigned char* workspace, size_t head_bytes) {
  __shared__ long long partial[kThreads / 32];
  long long sum = 0;
  for (int32_t g = static_cast<int32_t>(threadIdx.x); g < groups; g += kThreads) {
    const long long size = index_bytes == 8 ? static_cast<const long long*>(sizes)[g]
                                            : static_cast<const int*>(sizes)[g];
    sum += size > 0 ? size : 0;  // a negative size counts as 0
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_down_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  sum = 0;
  for (int w = 0; w < kThreads / 32; ++w) sum += partial[w];
  const long long start = sum < rows ? sum : rows;  // the sum is cut at M

  const long long stride = static_cast<long long>(gridDim.x) * kThreads;
  const long long first = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (blockIdx.x == 0) {
    for (size_t i = threadIdx.x; i < head_bytes; i += kThreads) workspace[i] = 0;
  }
  if (out == nullptr) return;
  const long long begin = start * row_bytes, end = rows * row_bytes;
  if (row_bytes % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0) {
    uint4* vectors = reinterpret_cast<uint4*>(out + begin);
    const long long count = (end - begin) / 16;
    for (long long i = first; i < count; i += stride) vectors[i] = make_uint4(0, 0, 0, 0);
  } else {
    for (long long i = begin + first; i < end; i += stride) out[i] = 0;
  }
}

}  // namespace

cudaError_t launch_prepare(const void* sizes, int index_bytes, int32_t groups, void* out,
                           int64_t rows, int64_t row_bytes, void* workspace, size_t head_bytes,
                           cudaStream_t stream) {
  // Enough blocks for the worst case (every row in the tail) to take a few
  // strides, few enough that summing the sizes per block stays negligible.
  const int64_t worst = out == nullptr ? 0 : rows * row_bytes;
  const int64_t per_block = int64_t{kThreads} * 16 * 4;
  const int blocks =
      static_cast<int>(std::clamp<int64_t>((worst + per_block - 1) / per_block, 1, 1024));
  prepare_kernel<<<blocks, kThreads, 0, stream>>>(
      sizes, index_bytes, groups, static_cast<unsigned char*>(out), rows, row_bytes,
      static_cast<unsigned char*>(workspace), head_bytes);
  return cudaGetLastError();
}

}  // namespace gg_jax

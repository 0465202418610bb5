// The quantizer's partial-chunk store of e2m1 codes
// (kernels/quantize/tile_io.cuh, store_e2m1_chunk_range) writes exactly the
// elements of its range: every range [lo, hi) of a 16-byte chunk, each into
// a chunk of its own between two 16-byte guard bands, all poisoned first.
// Every nibble outside the range must keep its poison, every one inside
// must hold its code.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "kernels/device.h"
#include "kernels/quantize/tile_io.cuh"

namespace gg_test {
namespace {

constexpr int kChunkBytes = 16;
constexpr int kCaseBytes = 3 * kChunkBytes;  // guard, chunk, guard

__host__ __device__ uint8_t code_byte_at(int b) { return static_cast<uint8_t>(b * 37 + 11); }
// Byte b of a case before the store: each of its nibbles differs from the
// code's at the same place in a chunk (^ 0x88), so that a nibble written or
// left alone by mistake, in the chunk or a whole chunk off, always shows.
uint8_t poison_at(int b) { return static_cast<uint8_t>(code_byte_at(b % kChunkBytes) ^ 0x88); }

// The ranges of a chunk of `per_chunk` elements, in order.
std::vector<int2> all_ranges(int per_chunk) {
  std::vector<int2> ranges;
  for (int lo = 0; lo < per_chunk; ++lo) {
    for (int hi = lo + 1; hi <= per_chunk; ++hi) ranges.push_back(make_int2(lo, hi));
  }
  return ranges;
}

__global__ void store_ranges(uint8_t* cases, const int2* ranges, int count) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= count) return;
  uint32_t words[4];
  for (int w = 0; w < 4; ++w) {
    words[w] = 0;
    for (int b = 0; b < 4; ++b) words[w] |= static_cast<uint32_t>(code_byte_at(4 * w + b)) << (8 * b);
  }
  gg::quantize::store_e2m1_chunk_range(cases + static_cast<int64_t>(i) * kCaseBytes + kChunkBytes,
                                       words, ranges[i].x, ranges[i].y);
}

TEST(ChunkStore, E2m1RangesWriteTheirNibblesOnly) {
  int devices = 0;
  std::string no_device;
  if (!gg::count_cuda_devices(&devices, &no_device)) GTEST_SKIP() << no_device;
  const int per_chunk = 32;
  const std::vector<int2> ranges = all_ranges(per_chunk);
  const int count = static_cast<int>(ranges.size());
  std::vector<uint8_t> host(static_cast<size_t>(count) * kCaseBytes);
  for (size_t b = 0; b < host.size(); ++b) host[b] = poison_at(static_cast<int>(b % kCaseBytes));
  uint8_t* cases = nullptr;
  int2* device_ranges = nullptr;
  ASSERT_EQ(cudaMalloc(&cases, host.size()), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&device_ranges, ranges.size() * sizeof(int2)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(cases, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device_ranges, ranges.data(), ranges.size() * sizeof(int2),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  store_ranges<<<(count + 127) / 128, 128>>>(cases, device_ranges, count);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(host.data(), cases, host.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(cases);
  cudaFree(device_ranges);

  int failures = 0;
  for (int i = 0; i < count && failures < 10; ++i) {
    const int lo = ranges[i].x, hi = ranges[i].y;
    for (int b = 0; b < kCaseBytes; ++b) {
      uint8_t want = poison_at(b);
      const int in_chunk = b - kChunkBytes;
      if (in_chunk >= 0 && in_chunk < kChunkBytes) {
        for (int half = 0; half < 2; ++half) {  // the byte's elements
          const int element = in_chunk * 2 + half;
          if (element < lo || element >= hi) continue;
          const uint8_t mask = static_cast<uint8_t>(0xF << (4 * half));
          want = static_cast<uint8_t>((want & ~mask) | (code_byte_at(in_chunk) & mask));
        }
      }
      const uint8_t got = host[static_cast<size_t>(i) * kCaseBytes + b];
      if (got != want) {
        ADD_FAILURE() << "range [" << lo << ", " << hi << "): byte " << b - kChunkBytes
                      << " of the chunk is 0x" << std::hex << int(got) << ", want 0x" << int(want);
        ++failures;
        break;
      }
    }
  }
}

}  // namespace
}  // namespace gg_test

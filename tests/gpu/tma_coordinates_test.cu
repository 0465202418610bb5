// What the sm90 kernels ask of TMA: a 128-byte swizzled box of bytes (fp8
// codes, K-major) whose innermost start coordinate lies on any 16-byte
// boundary of a row, including boxes that run past the row's end or the
// last row (those elements read as zero). A start off a 16-byte boundary
// is an illegal instruction on an H100, which is why the ragged-K kernels
// start a group's boxes at the boundary before its first token
// (grouped_gemm_kernel.cuh, decoded_steps.h). Each start loads one box of
// 128 x 128 bytes into shared memory; the kernel writes it back unswizzled
// (chunk c of row r lies at c ^ (r % 8)), and the test compares every byte
// with the source.
#include <cuda.h>
#include <cuda/ptx>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "kernels/device.h"
#include "kernels/sm90/tensor_map.h"

namespace gg_test {
namespace {

constexpr int kBox = 128;        // rows and bytes of a box
constexpr int kCols = 300;       // bytes of a source row
constexpr int kStride = 304;     // a multiple of 16
constexpr int kRows = 130;       // a box's rows and two more: the last box runs past the end

uint8_t source_byte(int r, int c) { return static_cast<uint8_t>((r * 131 + c * 7 + 1) | 1); }

__global__ void load_boxes(const __grid_constant__ CUtensorMap map, const int* starts,
                           int row0, uint8_t* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  __shared__ alignas(1024) uint8_t tile[kBox * kBox];
  __shared__ alignas(8) uint64_t full;
  const int start = starts[blockIdx.x];
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_init(&full, 1);
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                         cuda::ptx::space_shared, &full, kBox * kBox);
    const int32_t coords[2] = {start, row0};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, tile, &map,
                                    coords, &full);
  }
  while (!cuda::ptx::mbarrier_try_wait_parity(&full, 0)) {
  }
  uint8_t* box_out = out + static_cast<size_t>(blockIdx.x) * kBox * kBox;
  for (int i = static_cast<int>(threadIdx.x); i < kBox * kBox; i += static_cast<int>(blockDim.x)) {
    const int r = i / kBox;
    const int c = i % kBox;
    box_out[i] = tile[r * kBox + (((c / 16) ^ (r % 8)) * 16) + c % 16];
  }
#endif
}

TEST(TmaCoordinates, BytesBoxesStartOnAny16ByteBoundary) {
  int devices = 0;
  std::string no_device;
  if (!gg::count_cuda_devices(&devices, &no_device)) GTEST_SKIP() << no_device;
  int major = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  if (major < 9) GTEST_SKIP() << "TMA needs compute capability 9.0";
  std::vector<uint8_t> host(static_cast<size_t>(kRows) * kStride, 0);
  for (int r = 0; r < kRows; ++r) {
    for (int c = 0; c < kCols; ++c) host[size_t(r) * kStride + c] = source_byte(r, c);
  }
  std::vector<int> starts;
  for (int s = 0; s < kCols; s += 16) starts.push_back(s);
  const int boxes = static_cast<int>(starts.size());
  for (const int row0 : {0, kRows - kBox + 1}) {  // the second runs one row past the end
    uint8_t* source = nullptr;
    int* device_starts = nullptr;
    uint8_t* out = nullptr;
    ASSERT_EQ(cudaMalloc(&source, host.size()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&device_starts, starts.size() * sizeof(int)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&out, size_t(boxes) * kBox * kBox), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(source, host.data(), host.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(device_starts, starts.data(), starts.size() * sizeof(int),
                         cudaMemcpyHostToDevice),
              cudaSuccess);
    ASSERT_EQ(cudaMemset(out, 0xA5, size_t(boxes) * kBox * kBox), cudaSuccess);
    CUtensorMap map;
    const uint64_t dims[2] = {kCols, kRows};
    const uint64_t strides[1] = {kStride};
    const uint32_t box[2] = {kBox, kBox};
    std::string why_not;
    ASSERT_TRUE(gg::sm90::encode_tile_map(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, source, dims,
                                          strides, box, &why_not))
        << why_not;
    load_boxes<<<boxes, 256>>>(map, device_starts, row0, out);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint8_t> loaded(size_t(boxes) * kBox * kBox);
    ASSERT_EQ(cudaMemcpy(loaded.data(), out, loaded.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(source);
    cudaFree(device_starts);
    cudaFree(out);
    for (int b = 0; b < boxes; ++b) {
      int wrong = 0;
      std::string first;
      for (int r = 0; r < kBox; ++r) {
        for (int c = 0; c < kBox; ++c) {
          const int row = row0 + r;
          const int col = starts[b] + c;
          const bool inside = row < kRows && col >= 0 && col < kCols;
          const uint8_t want = inside ? source_byte(row, col) : 0;
          const uint8_t got = loaded[(size_t(b) * kBox + r) * kBox + c];
          if (got != want && wrong++ == 0) {
            first = "row " + std::to_string(r) + " byte " + std::to_string(c) + ": " +
                    std::to_string(got) + " != " + std::to_string(want);
          }
        }
      }
      EXPECT_EQ(wrong, 0) << "start " << starts[b] << ", first row " << row0 << ": " << first;
    }
  }
}

}  // namespace
}  // namespace gg_test

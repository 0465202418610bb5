// cuBLASLt's dense fp8 product of equal work: the peer of a quantized
// grouped GEMM in `groupgemm bench --format`, what one fp8 GEMM of all the
// routed rows costs on cuBLASLt (the ragged-M rows against one weight
// matrix; ragged-K's contraction over every routed token into one [P, Q]
// output). Its operands are e4m3, K-major (the one fp8 layout cuBLASLt
// runs on Hopper), random, with scales of 1, in as many copies as exceed
// twice `l2_bytes` (run in turn, like every other figure); the output is bf16.
//
// Scales: one fp32 scale per operand, or the DeepSeek-V3 block scales that
// cuBLASLt has on Hopper from CUDA 12.9 (ragged-M: 1x128 activations x
// 128x128 weights; ragged-K: 1x128 x 1x128 along the contraction).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

#include <vector>

#include "cli/args.h"
#include "cli/device_buffer.h"
#include "cli/problem.h"

namespace gg::cli {

// A cuBLASLt handle, destroyed with its owner.
class LtHandle {
 public:
  LtHandle();
  ~LtHandle();
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  cublasLtHandle_t get() const { return handle_; }

 private:
  cublasLtHandle_t handle_ = nullptr;
};

enum class Fp8Scales { kTensor, kBlocks };
extern const std::vector<Name<Fp8Scales>> kFp8ScalesNames;

class DenseFp8 {
 public:
  // Throws Failure when cuBLASLt refuses the product or has no algorithm
  // for it here (block scales before CUDA 12.9, or off Hopper).
  DenseFp8(cublasLtHandle_t handle, cudaStream_t stream, const Problem& problem, int64_t routed,
           Fp8Scales scales, int64_t l2_bytes);
  ~DenseFp8();
  DenseFp8(const DenseFp8&) = delete;
  DenseFp8& operator=(const DenseFp8&) = delete;

  // One product on copy `run` mod copies.
  void run(int run);
  double flops() const { return 2.0 * double(m_) * double(n_) * double(k_); }

 private:
  struct Copy {
    DeviceBuffer a, b, d;
  };
  cublasLtHandle_t handle_;
  cudaStream_t stream_;
  int64_t m_ = 0, n_ = 0, k_ = 0;  // column-major D[m, n] = A^T[m, k] B[k, n]
  std::vector<Copy> copies_;
  DeviceBuffer a_scales_, b_scales_, workspace_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_layout_ = nullptr, b_layout_ = nullptr, d_layout_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace gg::cli

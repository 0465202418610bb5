// The cuBLAS peers every benchmark figure is set against, run on the same
// buffers as the grouped GEMM:
//   dense       one GEMM of equal work: the routed rows as one M (ragged-M)
//               or one contraction (ragged-K), against expert 0's matrix;
//               the ceiling a grouped kernel aims at.
//   group loop  the common practice without a grouped kernel: copy the sizes
//               to the host (a sync), then one cublasGemmEx per non-empty
//               group.
// Row-major operands are handed to column-major cuBLAS as their transposes:
// out^T = op(rhs)^T · op(lhs)^T.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "cli/problem.h"

namespace gg::cli {

class CublasBaselines {
 public:
  explicit CublasBaselines(cudaStream_t stream);
  ~CublasBaselines();
  CublasBaselines(const CublasBaselines&) = delete;
  CublasBaselines& operator=(const CublasBaselines&) = delete;

  void dense(const Problem& problem, const ProblemData& data, int64_t routed);
  void group_loop(const Problem& problem, const ProblemData& data);

 private:
  // The product of one group: `size` ragged rows from `start`, matrix `g`.
  void group_gemm(const Problem& problem, const ProblemData& data, int32_t g, int64_t start,
                  int64_t size);

  cublasHandle_t handle_ = nullptr;
  cudaStream_t stream_;
  void* pinned_sizes_ = nullptr;  // page-locked, as frameworks copy sizes
  size_t pinned_bytes_ = 0;
};

}  // namespace gg::cli

// cuBLAS baselines: see cublas_baselines.h.
#include "cli/cublas_baselines.h"

#include <cublas_v2.h>

#include <cstring>

#include "cli/checks.h"
#include "cli/elements.h"

namespace gg::cli {

namespace {

cudaDataType cuda_type(gg_dtype dtype) {
  switch (dtype) {
    case GG_DTYPE_BF16:
      return CUDA_R_16BF;
    case GG_DTYPE_FP16:
      return CUDA_R_16F;
    case GG_DTYPE_FP32:
      return CUDA_R_32F;
    default:
      throw Failure("the cuBLAS baselines take bf16, fp16 or fp32 operands");
  }
}

// Row `start` of a row-major ragged matrix with `cols` columns.
void* ragged_row(void* base, gg_dtype dtype, int64_t cols, int64_t start) {
  return static_cast<char*>(base) + start * cols * static_cast<int64_t>(element_bytes(dtype));
}

// A ragged operand's block of rows from `start`, as cuBLAS sees it: a
// row-major [rows, cols] matrix is column-major [cols, rows] (ld = cols), a
// transposed copy [cols, rows] is column-major [rows, cols] (ld = rows).
struct RaggedBlock {
  const void* data;
  int64_t ld;
};

RaggedBlock ragged_block(void* base, gg_layout layout, gg_dtype dtype, int64_t rows, int64_t cols,
                         int64_t start) {
  if (layout == GG_LAYOUT_N) return {ragged_row(base, dtype, cols, start), cols};
  return {ragged_row(base, dtype, 1, start), rows};  // column `start` of [cols, rows]
}

void* matrix_of(void* base, gg_dtype dtype, const MatrixSet& set, int32_t g) {
  return static_cast<char*>(base) +
         g * set.rows * set.cols * static_cast<int64_t>(element_bytes(dtype));
}

int64_t load_size(const void* sizes, gg_index_type type, int32_t g) {
  if (type == GG_INDEX_INT32) {
    int32_t size;
    std::memcpy(&size, static_cast<const int32_t*>(sizes) + g, sizeof size);
    return size;
  }
  int64_t size;
  std::memcpy(&size, static_cast<const int64_t*>(sizes) + g, sizeof size);
  return size;
}

}  // namespace

CublasBaselines::CublasBaselines(cudaStream_t stream) : stream_(stream) {
  check_cublas(cublasCreate(&handle_), "cublasCreate");
  check_cublas(cublasSetStream(handle_, stream_), "cublasSetStream");
}

CublasBaselines::~CublasBaselines() {
  if (pinned_sizes_ != nullptr) cudaFreeHost(pinned_sizes_);
  cublasDestroy(handle_);
}

void CublasBaselines::group_gemm(const Problem& problem, const ProblemData& data, int32_t g,
                                 int64_t start, int64_t size) {
  const gg_dtype in = problem.input_dtype;
  const float alpha = static_cast<float>(problem.alpha);
  const float beta = static_cast<float>(problem.beta);
  const RaggedBlock lhs =
      ragged_block(data.lhs, problem.lhs_layout, in, problem.rows, problem.lhs_cols, start);
  const bool lhs_n = problem.lhs_layout == GG_LAYOUT_N;
  const bool rhs_n = problem.rhs_layout == GG_LAYOUT_N;
  int64_t m, n, k, lda;
  const void* a;
  const void* b = lhs.data;
  void* c;
  cublasOperation_t op_a, op_b;
  if (problem.op == GG_OP_RAGGED_M) {
    // out[size, N]^T = rhs[g]^T (N x K) · lhs^T (K x size)
    m = problem.rhs_cols;
    n = size;
    k = problem.lhs_cols;
    a = matrix_of(data.rhs, in, rhs_matrices(problem), g);
    lda = rhs_n ? problem.rhs_cols : problem.lhs_cols;
    op_a = rhs_n ? CUBLAS_OP_N : CUBLAS_OP_T;
    op_b = lhs_n ? CUBLAS_OP_N : CUBLAS_OP_T;
    c = ragged_row(data.out, problem.out_dtype, problem.rhs_cols, start);
  } else {
    // out[g] (P x Q)^T = rhs^T (Q x size) · lhs (size x P)
    const RaggedBlock rhs =
        ragged_block(data.rhs, problem.rhs_layout, in, problem.rows, problem.rhs_cols, start);
    m = problem.rhs_cols;
    n = problem.lhs_cols;
    k = size;
    a = rhs.data;
    lda = rhs.ld;
    op_a = rhs_n ? CUBLAS_OP_N : CUBLAS_OP_T;
    op_b = lhs_n ? CUBLAS_OP_T : CUBLAS_OP_N;
    c = matrix_of(data.out, problem.out_dtype, out_matrices(problem), g);
  }
  check_cublas(
      cublasGemmEx(handle_, op_a, op_b, static_cast<int>(m), static_cast<int>(n),
                   static_cast<int>(k), &alpha, a, cuda_type(in), static_cast<int>(lda), b,
                   cuda_type(in), static_cast<int>(lhs.ld), &beta, c, cuda_type(problem.out_dtype),
                   static_cast<int>(problem.rhs_cols), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "cublasGemmEx");
}

void CublasBaselines::dense(const Problem& problem, const ProblemData& data, int64_t routed) {
  if (routed > 0) group_gemm(problem, data, 0, 0, routed);
}

void CublasBaselines::group_loop(const Problem& problem, const ProblemData& data) {
  const size_t width = data.index_type == GG_INDEX_INT32 ? sizeof(int32_t) : sizeof(int64_t);
  const size_t bytes = width * static_cast<size_t>(problem.groups);
  if (bytes > pinned_bytes_) {
    if (pinned_sizes_ != nullptr) check_cuda(cudaFreeHost(pinned_sizes_), "cudaFreeHost");
    pinned_sizes_ = nullptr;
    check_cuda(cudaMallocHost(&pinned_sizes_, bytes), "cudaMallocHost");
    pinned_bytes_ = bytes;
  }
  check_cuda(cudaMemcpyAsync(pinned_sizes_, data.sizes, bytes, cudaMemcpyDeviceToHost, stream_),
             "cudaMemcpyAsync");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  int64_t start = 0;
  for (int32_t g = 0; g < problem.groups; ++g) {
    const int64_t size = load_size(pinned_sizes_, data.index_type, g);
    if (size > 0) group_gemm(problem, data, g, start, size);
    start += size;
  }
}

}  // namespace gg::cli

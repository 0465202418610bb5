// cuBLASLt dense fp8: see dense_fp8.h.
#include "cli/dense_fp8.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "cli/checks.h"
#include "cli/device_fill.h"

namespace gg::cli {

const std::vector<Name<Fp8Scales>> kFp8ScalesNames = {
    {"tensor scales", Fp8Scales::kTensor}, {"block scales", Fp8Scales::kBlocks}};

namespace {

constexpr int64_t kBlock = 128;
constexpr size_t kWorkspaceBytes = size_t{32} << 20;

int64_t blocks_of(int64_t extent) { return (extent + kBlock - 1) / kBlock; }
int64_t round_up(int64_t value, int64_t step) { return (value + step - 1) / step * step; }

// Device fp32 ones, `count` of them.
DeviceBuffer ones(int64_t count, cudaStream_t stream) {
  const std::vector<float> host(static_cast<size_t>(count), 1.0f);
  DeviceBuffer buffer(host.size() * sizeof(float));
  buffer.upload(host.data(), buffer.bytes());
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  return buffer;
}

template <typename T>
void set_attribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attribute,
                   const T& value) {
  check_cublas(cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof value),
               "cublasLtMatmulDescSetAttribute");
}

}  // namespace

LtHandle::LtHandle() { check_cublas(cublasLtCreate(&handle_), "cublasLtCreate"); }
LtHandle::~LtHandle() { cublasLtDestroy(handle_); }

DenseFp8::DenseFp8(cublasLtHandle_t handle, cudaStream_t stream, const Problem& problem,
                   int64_t routed, Fp8Scales scales, int64_t l2_bytes)
    : handle_(handle), stream_(stream) {
  // Row-major K-major operands as column-major cuBLASLt sees them (TN):
  // ragged-M  D^T[N, R] = W0[N, K] . X[R, K]^T;  ragged-K  D^T[Q, P] = rhs[Q, R] . lhs[P, R]^T.
  const bool ragged_m = problem.op == GG_OP_RAGGED_M;
  m_ = problem.rhs_cols;
  n_ = ragged_m ? routed : problem.lhs_cols;
  k_ = ragged_m ? problem.lhs_cols : routed;
  if (m_ == 0 || n_ == 0 || k_ == 0) return;
  const int64_t copy_bytes = m_ * k_ + k_ * n_ + 2 * m_ * n_;
  const int64_t copies = std::max<int64_t>(1, (2 * l2_bytes + copy_bytes - 1) / copy_bytes);
  for (int64_t c = 0; c < copies; ++c) {
    copies_.push_back({DeviceBuffer(static_cast<size_t>(m_ * k_)),
                       DeviceBuffer(static_cast<size_t>(k_ * n_)),
                       DeviceBuffer(static_cast<size_t>(m_ * n_) * 2)});
    fill_random(copies_.back().a, GG_DTYPE_E4M3, 2 * c + 11, stream);
    fill_random(copies_.back().b, GG_DTYPE_E4M3, 2 * c + 12, stream);
  }

  check_cublas(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
               "cublasLtMatmulDescCreate");
  set_attribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set_attribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
  if (scales == Fp8Scales::kTensor) {
    a_scales_ = ones(1, stream);
    b_scales_ = ones(1, stream);
  } else {
    // Scales of 1 for a 1x128 operand (`per_block_row` 1) or a 128x128
    // one (128) of `rows` rows, padded past any alignment cuBLASLt's
    // layouts ask of them.
    const auto block_scales = [&](int64_t rows, int64_t per_block_row) {
      const int64_t scale_rows = (rows + per_block_row - 1) / per_block_row;
      return ones(round_up(scale_rows, kBlock) * round_up(blocks_of(k_), 4), stream);
    };
    a_scales_ = block_scales(m_, ragged_m ? kBlock : 1);
    b_scales_ = block_scales(n_, 1);
    const cublasLtMatmulMatrixScale_t vec128 = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    set_attribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
                  ragged_m ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F : vec128);
    set_attribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, vec128);
  }
  set_attribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scales_.data());
  set_attribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scales_.data());

  const auto layout = [](cublasLtMatrixLayout_t* out, cudaDataType type, int64_t rows,
                         int64_t cols) {
    check_cublas(cublasLtMatrixLayoutCreate(out, type, static_cast<uint64_t>(rows),
                                            static_cast<uint64_t>(cols), rows),
                 "cublasLtMatrixLayoutCreate");
  };
  layout(&a_layout_, CUDA_R_8F_E4M3, k_, m_);  // A stored [k, m] column-major, read transposed
  layout(&b_layout_, CUDA_R_8F_E4M3, k_, n_);
  layout(&d_layout_, CUDA_R_16BF, m_, n_);

  workspace_ = DeviceBuffer(kWorkspaceBytes);
  cublasLtMatmulPreference_t preference = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
  const uint64_t workspace_bytes = kWorkspaceBytes;
  check_cublas(cublasLtMatmulPreferenceSetAttribute(preference,
                                                    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &workspace_bytes, sizeof workspace_bytes),
               "cublasLtMatmulPreferenceSetAttribute");
  cublasLtMatmulHeuristicResult_t result;
  std::memset(&result, 0, sizeof result);
  int found = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
      handle_, desc_, a_layout_, b_layout_, d_layout_, d_layout_, preference, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
    throw Failure(std::string("cuBLASLt has no dense fp8 algorithm with ") +
                  name_of(kFp8ScalesNames, scales) + " here (" +
                  cublasLtGetStatusString(status) + ")");
  }
  algo_ = result.algo;
}

DenseFp8::~DenseFp8() {
  if (d_layout_ != nullptr) cublasLtMatrixLayoutDestroy(d_layout_);
  if (b_layout_ != nullptr) cublasLtMatrixLayoutDestroy(b_layout_);
  if (a_layout_ != nullptr) cublasLtMatrixLayoutDestroy(a_layout_);
  if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
}

void DenseFp8::run(int run) {
  if (copies_.empty()) return;
  Copy& copy = copies_[static_cast<size_t>(run) % copies_.size()];
  const float alpha = 1.0f;
  const float beta = 0.0f;
  check_cublas(cublasLtMatmul(handle_, desc_, &alpha, copy.a.data(), a_layout_, copy.b.data(),
                              b_layout_, &beta, copy.d.data(), d_layout_, copy.d.data(), d_layout_,
                              &algo_, workspace_.data(), kWorkspaceBytes, stream_),
               "cublasLtMatmul");
}

}  // namespace gg::cli

// Status checks: see checks.h.
#include "cli/checks.h"

namespace gg::cli {

void check_cuda(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw Failure(std::string(call) + ": " + cudaGetErrorName(status) + ": " +
                  cudaGetErrorString(status));
  }
}

void check_cublas(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw Failure(std::string(call) + ": cuBLAS status " +
                  std::to_string(static_cast<int>(status)));
  }
}

std::string gg_failure_text(gg_status status, const char* call) {
  return std::string(call) + ": " + gg_status_string(status) + ": " + gg_last_error();
}

void check_gg(gg_status status, const char* call) {
  if (status != GG_STATUS_SUCCESS) throw LibraryFailure(status, gg_failure_text(status, call));
}

}  // namespace gg::cli

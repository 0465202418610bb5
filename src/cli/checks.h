// Failures of the libraries the CLI calls, as exceptions.
//
// A failing CUDA, cuBLAS or groupgemm call throws Failure with the call's
// name and the library's own message (for groupgemm, gg_last_error(), and
// LibraryFailure); main prints it and exits with code 1.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "groupgemm/groupgemm.h"

namespace gg::cli {

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A failed groupgemm call, with its status: verify tells "no GPU" and "not
// supported" apart from a failure by it.
struct LibraryFailure : Failure {
  LibraryFailure(gg_status failed_status, const std::string& text)
      : Failure(text), status(failed_status) {}
  gg_status status;
};

void check_cuda(cudaError_t status, const char* call);
void check_cublas(cublasStatus_t status, const char* call);
void check_gg(gg_status status, const char* call);

// "<call>: <status name>: <gg_last_error()>", for a failed groupgemm call.
std::string gg_failure_text(gg_status status, const char* call);

}  // namespace gg::cli

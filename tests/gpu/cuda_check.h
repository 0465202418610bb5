// CUDA runtime failures inside the test harness are not test verdicts but
// broken test machinery, so they throw: GoogleTest turns the exception into a
// failure of the running test that names the call and the CUDA error.
#pragma once

#include <cuda_runtime_api.h>

namespace gg::test {

// Throws std::runtime_error naming `what` when `status` is not cudaSuccess.
void check_cuda(cudaError_t status, const char* what);

}  // namespace gg::test

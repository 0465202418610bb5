// See cuda_check.h.
#include "gpu/cuda_check.h"

#include <stdexcept>
#include <string>

namespace gg::test {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(status) + " (" +
                             cudaGetErrorString(status) + ")");
  }
}

}  // namespace gg::test

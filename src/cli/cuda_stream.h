// An owned CUDA stream, destroyed when it goes out of scope. Declared
// before the objects that use it, it outlives them.
#pragma once

#include <cuda_runtime_api.h>

#include "cli/checks.h"

namespace gg::cli {

class CudaStream {
 public:
  CudaStream() {
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  ~CudaStream() { cudaStreamDestroy(stream_); }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;

  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace gg::cli

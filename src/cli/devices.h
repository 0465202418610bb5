// The CUDA devices this process can see, as `info` and `bench` report them.
#pragma once

#include <stddef.h>

#include <string>
#include <vector>

namespace gg::cli {

struct CudaDevice {
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  size_t memory_bytes = 0;
  int l2_bytes = 0;
};

// Every device, or none with the reason in *why_not: the library's own
// (gg::count_cuda_devices), so the tool and the library word it alike.
std::vector<CudaDevice> cuda_devices(std::string* why_not);

}  // namespace gg::cli

// Device enumeration: see devices.h.
#include "cli/devices.h"

#include <cuda_runtime_api.h>

#include "kernels/device.h"

namespace gg::cli {

std::vector<CudaDevice> cuda_devices(std::string* why_not) {
  int count = 0;
  std::vector<CudaDevice> devices;
  if (!count_cuda_devices(&count, why_not)) return devices;
  for (int ordinal = 0; ordinal < count; ++ordinal) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, ordinal) != cudaSuccess) continue;
    CudaDevice device;
    device.ordinal = ordinal;
    device.name = properties.name;
    device.sm_count = properties.multiProcessorCount;
    device.cc_major = properties.major;
    device.cc_minor = properties.minor;
    device.memory_bytes = properties.totalGlobalMem;
    device.l2_bytes = properties.l2CacheSize;
    devices.push_back(device);
  }
  return devices;
}

}  // namespace gg::cli

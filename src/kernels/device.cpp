// See device.h. Built on the CUDA runtime alone, and safe on machines without
// a GPU or a driver: cudaGetDeviceCount reports those as errors, which become
// the reason, and the runtime's sticky last error is reset so that a later
// CUDA call is not blamed for them. Whether a driver is installed at all is
// asked of the dynamic loader, only once the runtime has failed.
//
// Device properties never change while a process runs, so each ordinal is
// queried once and cached; the API asks for the current device on every call
// that launches work, and that must stay cheap.
#include "kernels/device.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <map>
#include <mutex>

namespace gg {
namespace {

bool fail_with(std::string* why_not, const std::string& reason) {
  if (why_not != nullptr) *why_not = reason;
  return false;
}

bool runtime_failed(cudaError_t error, const char* call, std::string* why_not) {
  if (error == cudaSuccess) return false;
  cudaGetLastError();
  fail_with(why_not, std::string(call) + " failed: " + cudaGetErrorString(error));
  return true;
}

bool query_properties(int ordinal, DeviceInfo* info, std::string* why_not) {
  cudaDeviceProp properties;
  if (runtime_failed(cudaGetDeviceProperties(&properties, ordinal), "cudaGetDeviceProperties",
                     why_not)) {
    return false;
  }
  info->ordinal = ordinal;
  info->sm_count = properties.multiProcessorCount;
  info->compute_capability = properties.major * 10 + properties.minor;
  info->shared_bytes_per_block = static_cast<int64_t>(properties.sharedMemPerBlockOptin);
  info->name = properties.name;
  return true;
}

bool driver_installed() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) return false;
  dlclose(driver);
  return true;
}

const char* const kNoGpu = "no NVIDIA driver/GPU found";

}  // namespace

bool count_cuda_devices(int* count, std::string* why_not) {
  *count = 0;
  const cudaError_t error = cudaGetDeviceCount(count);
  if (error == cudaSuccess) return *count > 0 || fail_with(why_not, kNoGpu);
  cudaGetLastError();
  *count = 0;
  const bool no_driver = error == cudaErrorInsufficientDriver && !driver_installed();
  if (error == cudaErrorNoDevice || no_driver) return fail_with(why_not, kNoGpu);
  return fail_with(why_not, std::string("no usable CUDA device: ") + cudaGetErrorString(error));
}

bool query_device(int device, DeviceInfo* info, std::string* why_not) {
  int count = 0;
  if (!count_cuda_devices(&count, why_not)) return false;
  int ordinal = device;
  if (device == -1 && runtime_failed(cudaGetDevice(&ordinal), "cudaGetDevice", why_not)) {
    return false;
  }
  if (ordinal < 0 || ordinal >= count) {
    return fail_with(why_not, "CUDA device " + std::to_string(device) + " does not exist (" +
                                  std::to_string(count) + " devices)");
  }

  static std::mutex mutex;
  static std::map<int, DeviceInfo> known;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto cached = known.find(ordinal);
  if (cached != known.end()) {
    *info = cached->second;
    return true;
  }
  if (!query_properties(ordinal, info, why_not)) return false;
  known.emplace(ordinal, *info);
  return true;
}

}  // namespace gg

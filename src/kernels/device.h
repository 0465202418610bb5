// What the host may ask of the CUDA device without touching problem data.
#pragma once

#include <stdint.h>

#include <string>

namespace gg {

struct DeviceInfo {
  int ordinal = -1;
  int sm_count = 0;
  int compute_capability = 0;  // major * 10 + minor, e.g. 90
  int64_t shared_bytes_per_block = 0;  // static + dynamic shared memory a CTA may opt in to
  std::string name;
};

// The number of CUDA devices in *count; false, with the reason in *why_not,
// when there is none. The reason is "no NVIDIA driver/GPU found" when the
// machine has no GPU, or no driver at all (libcuda.so.1 cannot be loaded:
// the runtime then reports an "insufficient" driver, which would mislead);
// otherwise the runtime's own message, as for a driver too old for it.
// Every place that tells a user why nothing runs on a GPU asks this.
bool count_cuda_devices(int* count, std::string* why_not);

// Fills *info for `device` (-1: the current device). Returns false, with the
// reason in *why_not, when there is no usable CUDA device.
bool query_device(int device, DeviceInfo* info, std::string* why_not);

}  // namespace gg

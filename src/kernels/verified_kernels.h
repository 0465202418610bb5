// A GPU kernel answers users only once its GPU tests have passed on a
// device. A kernel that was compiled and checked on the CPU but never run
// is refused by its path, with a message naming the environment variable
// that runs it anyway (GROUPGEMM_UNVERIFIED_KERNELS=1): the GPU tests set
// it, so that they can verify what users cannot yet reach. The list of
// verified kernels (verified_kernels.cpp) grows as their tests pass on a
// device; GG_PATH_AUTO skips a refused kernel like any other refusal.
#pragma once

#include <string>

namespace gg {

inline constexpr char kUnverifiedKernelsVariable[] = "GROUPGEMM_UNVERIFIED_KERNELS";

// "" when `kernel` may run: its GPU tests have passed on a device, or
// GROUPGEMM_UNVERIFIED_KERNELS is "1" (read at every call). Otherwise the
// reason, naming the kernel and the variable.
std::string unverified_kernel_refusal(const std::string& kernel);

}  // namespace gg

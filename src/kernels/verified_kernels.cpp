// The kernels whose GPU tests have passed on a device (verified_kernels.h).
#include "kernels/verified_kernels.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <iterator>

namespace gg {
namespace {

// Each entry names a kernel as its path does, the device and the date on
// which its GPU tests (tests/gpu) passed.
struct VerifiedKernel {
  const char* kernel;
  const char* passed_on;
};

constexpr VerifiedKernel kVerified[] = {
    {"", ""},
};

bool opted_in() {
  const char* value = getenv(kUnverifiedKernelsVariable);
  return value != nullptr && strcmp(value, "1") == 0;
}

}  // namespace

std::string unverified_kernel_refusal(const std::string& kernel) {
  const bool verified = std::any_of(std::begin(kVerified), std::end(kVerified),
                                    [&](const VerifiedKernel& v) { return kernel == v.kernel; });
  if (verified || opted_in()) return "";
  return kernel + " has not yet passed its GPU tests on a device, so it does not run by "
         "default; " + kUnverifiedKernelsVariable + "=1 runs it anyway";
}

}  // namespace gg

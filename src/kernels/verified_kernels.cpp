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

// The portable decode kernels: tests/gpu/quantized_test.cpp and
// python/tests/test_torch_{quantized,recipes}_cuda.py on an H100 80GB HBM3.
constexpr VerifiedKernel kVerified[] = {
    {"the decode kernel for fp8 x fp8", "H100, 2026-12-06"},
    {"the decode kernel for fp8 rowwise x fp8 rowwise", "H100, 2026-12-06"},
    {"the decode kernel for mxfp8 x mxfp8", "H100, 2026-12-06"},
    {"the decode kernel for mxfp8 x mxfp4", "H100, 2026-12-06"},
    {"the decode kernel for mxfp4 x mxfp4", "H100, 2026-12-06"},
    {"the decode kernel for nvfp4 x nvfp4", "H100, 2026-12-06"},
    {"the decode kernel for bf16 x fp8", "H100, 2026-12-06"},
    {"the decode kernel for bf16 x fp8 rowwise", "H100, 2026-12-06"},
    {"the decode kernel for bf16 x mxfp8", "H100, 2026-12-06"},
    {"the decode kernel for bf16 x mxfp4", "H100, 2026-12-06"},
    {"the decode kernel for bf16 x nvfp4", "H100, 2026-12-06"},
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

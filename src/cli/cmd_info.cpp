// `groupgemm info`: what this build is and what it can run here — the
// library version, the CUDA and cuBLAS versions it was built against and
// runs with, every CUDA device, and each path's availability with the
// library's reason when it is not.
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <cstdio>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/devices.h"
#include "cli/problem.h"

namespace gg::cli {

namespace {

// CUDA encodes versions as major * 1000 + minor * 10.
std::string cuda_version_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

void print_build() {
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  int cublas_loaded[3] = {0, 0, 0};
  cublasGetProperty(MAJOR_VERSION, &cublas_loaded[0]);
  cublasGetProperty(MINOR_VERSION, &cublas_loaded[1]);
  cublasGetProperty(PATCH_LEVEL, &cublas_loaded[2]);
  std::printf("groupgemm %s\n", gg_version_string());
  std::printf("build: %s, CUDA toolkit %s, cuBLAS %d.%d.%d\n", GG_CLI_BUILD_TYPE,
              cuda_version_text(CUDART_VERSION).c_str(), CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR,
              CUBLAS_VER_PATCH);
  std::printf("runtime: CUDA runtime %s, cuBLAS %d.%d.%d\n", cuda_version_text(runtime).c_str(),
              cublas_loaded[0], cublas_loaded[1], cublas_loaded[2]);
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
    std::printf("driver: supports CUDA %s\n", cuda_version_text(driver).c_str());
  } else {
    std::printf("driver: none\n");
  }
}

void print_devices(const std::vector<CudaDevice>& devices, const std::string& why_not) {
  std::printf("devices:\n");
  if (devices.empty()) std::printf("  %s\n", why_not.c_str());
  for (const CudaDevice& device : devices) {
    std::printf("  %d: %s, %d SMs, compute capability %d.%d, %.1f GiB, L2 %d MiB\n", device.ordinal,
                device.name.c_str(), device.sm_count, device.cc_major, device.cc_minor,
                static_cast<double>(device.memory_bytes) / (1 << 30), device.l2_bytes >> 20);
  }
}

// With a device, every path and whether it runs on device 0; without one,
// the reference alone, since every other path is a GPU path.
void print_paths(bool have_device) {
  std::printf(have_device ? "paths (device 0):\n" : "paths:\n");
  for (const Name<gg_path>& path : kPathNames) {
    if (!have_device && path.value != GG_PATH_REFERENCE) continue;
    int available = 0;
    const gg_status status = gg_path_available(path.value, 0, &available);
    if (status != GG_STATUS_SUCCESS) {
      std::printf("  %-10s error: %s: %s\n", path.text, gg_status_string(status), gg_last_error());
    } else if (available != 0) {
      std::printf("  %-10s available\n", path.text);
    } else {
      std::printf("  %-10s not available: %s\n", path.text, gg_last_error());
    }
  }
  if (!have_device) std::printf("  (the GPU paths need an NVIDIA driver and GPU)\n");
}

}  // namespace

std::string info_usage() {
  return std::string(
             "usage: groupgemm info\n"
             "\n"
             "Prints the library version, the CUDA toolkit and cuBLAS it was built with and\n"
             "runs with, the driver, every CUDA device, and which paths run here (with the\n"
             "library's reason for those that do not). Takes no options.\n\n") +
         kExitCodesText;
}

int run_info(const std::vector<std::string>& words) {
  const Options options(words, {});
  print_build();
  std::string why_not;
  const std::vector<CudaDevice> devices = cuda_devices(&why_not);
  print_devices(devices, why_not);
  print_paths(!devices.empty());
  return kExitSuccess;
}

}  // namespace gg::cli

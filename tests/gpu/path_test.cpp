// See path_test.h.
#include "gpu/path_test.h"

#include "api/names.h"
#include "gpu/cuda_check.h"
#include "gpu/values.h"
#include "kernels/device.h"

namespace gg::test {

const std::vector<gg_path>& gpu_paths() {
  static const std::vector<gg_path> paths = {GG_PATH_PORTABLE, GG_PATH_SM90};
  return paths;
}

std::string path_name(gg_path path) {
  switch (path) {
    case GG_PATH_AUTO:
      return "auto";
    case GG_PATH_REFERENCE:
      return "reference";
    case GG_PATH_PORTABLE:
      return "portable";
    case GG_PATH_SM90:
      return "sm90";
  }
  return "path" + std::to_string(static_cast<int>(path));
}

::testing::internal::ParamGenerator<PathDtypes> all_path_dtypes() {
  return ::testing::Combine(::testing::ValuesIn(gpu_paths()),
                            ::testing::Values(GG_DTYPE_BF16, GG_DTYPE_FP16),
                            ::testing::Values(GG_DTYPE_BF16, GG_DTYPE_FP16, GG_DTYPE_FP32));
}

std::string param_name(const ::testing::TestParamInfo<gg_path>& info) {
  return path_name(info.param);
}

std::string param_name(const ::testing::TestParamInfo<PathDtypes>& info) {
  return path_name(std::get<0>(info.param)) + "_" + api::dtype_name(std::get<1>(info.param)) +
         "_" + api::dtype_name(std::get<2>(info.param));
}

std::string unavailable_reason(gg_path path) {
  int devices = 0;
  std::string no_device;
  if (!count_cuda_devices(&devices, &no_device)) return no_device;
  int available = 0;
  const gg_status status = gg_path_available(path, 0, &available);
  if (status != GG_STATUS_SUCCESS) {
    return "path " + path_name(path) +
           " unavailable: gg_path_available failed: " + gg_status_string(status) + ": " +
           gg_last_error();
  }
  if (available == 0) return "path " + path_name(path) + " unavailable: " + gg_last_error();
  return "";
}

Stream::Stream() { check_cuda(cudaStreamCreate(&stream_), "cudaStreamCreate"); }

Stream::~Stream() { cudaStreamDestroy(stream_); }

}  // namespace gg::test

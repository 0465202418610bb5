// GPU tests are written once and run on every GPU path: a test's parameter
// is a path, or a tuple whose first element is one. The fixture skips, with
// the reason, when there is no CUDA device or the path cannot run on it (a
// path not built yet, or a GPU too old for it), and gives each test a stream.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "groupgemm/groupgemm.h"
#include "kernels/verified_kernels.h"

namespace gg::test {

// Every GPU path; each GPU test runs on all of them.
const std::vector<gg_path>& gpu_paths();
std::string path_name(gg_path path);

// Empty when `path` can run on device 0, else why not: gg::count_cuda_devices's
// reason ("no NVIDIA driver/GPU found", ...) or "path ... unavailable: ...".
std::string unavailable_reason(gg_path path);

// A blocking stream: it waits for the legacy default stream, which the
// harness's synchronous copies use, so uploads always land before launches.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
};

inline gg_path path_of(gg_path path) { return path; }
template <typename... Rest>
gg_path path_of(const std::tuple<gg_path, Rest...>& param) {
  return std::get<0>(param);
}

// The parameter of tests that also run over dtypes: path, input, output.
using PathDtypes = std::tuple<gg_path, gg_dtype, gg_dtype>;
// Every path x {bf16, fp16} inputs x {bf16, fp16, fp32} outputs.
::testing::internal::ParamGenerator<PathDtypes> all_path_dtypes();

// Test name suffixes: "portable", "portable_bf16_fp32".
std::string param_name(const ::testing::TestParamInfo<gg_path>& info);
std::string param_name(const ::testing::TestParamInfo<PathDtypes>& info);
// The name generator INSTANTIATE_TEST_SUITE_P takes.
struct ParamName {
  template <typename Param>
  std::string operator()(const ::testing::TestParamInfo<Param>& param_info) const {
    return param_name(param_info);
  }
};

template <typename Param>
class PathTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const std::string why = unavailable_reason(path());
    if (!why.empty()) GTEST_SKIP() << why;
    stream_ = std::make_unique<Stream>();
  }
  gg_path path() const { return path_of(this->GetParam()); }
  cudaStream_t stream() const { return stream_->get(); }

 private:
  std::unique_ptr<Stream> stream_;
};

class PathDtypeTest : public PathTest<PathDtypes> {
 protected:
  gg_dtype input() const { return std::get<1>(GetParam()); }
  gg_dtype out() const { return std::get<2>(GetParam()); }
};

// A PathTest that also runs kernels not yet on the verified list
// (kernels/verified_kernels.h): its tests are what verify them.
class UnverifiedKernelsPathTest : public PathTest<gg_path> {
 protected:
  void SetUp() override {
    setenv(kUnverifiedKernelsVariable, "1", 1);
    PathTest::SetUp();
  }
};

}  // namespace gg::test

// Why nothing runs on a GPU, as every tool says it: gg::count_cuda_devices.
// Without a driver the CUDA runtime reports an "insufficient" driver, which
// reads as a driver to upgrade; the reason must say that none is there.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "groupgemm/groupgemm.h"
#include "kernels/device.h"

namespace {

bool driver_loads() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver != nullptr) dlclose(driver);
  return driver != nullptr;
}

TEST(NoGpuReason, NoDriverIsNoDriverNotAnOldOne) {
  if (driver_loads()) GTEST_SKIP() << "an NVIDIA driver is installed here";
  int count = -1;
  std::string why_not;
  EXPECT_FALSE(gg::count_cuda_devices(&count, &why_not));
  EXPECT_EQ(count, 0);
  EXPECT_EQ(why_not, "no NVIDIA driver/GPU found");
}

// The library's own messages carry the same reason.
TEST(NoGpuReason, TheLibrarySaysTheSame) {
  int count = 0;
  std::string why_not;
  if (gg::count_cuda_devices(&count, &why_not)) GTEST_SKIP() << "a GPU is present";
  gg::DeviceInfo info;
  std::string query_why_not;
  EXPECT_FALSE(gg::query_device(0, &info, &query_why_not));
  EXPECT_EQ(query_why_not, why_not);
  int available = -1;
  ASSERT_EQ(gg_path_available(GG_PATH_PORTABLE, 0, &available), GG_STATUS_SUCCESS);
  EXPECT_EQ(available, 0);
  EXPECT_NE(std::string(gg_last_error()).find(why_not), std::string::npos) << gg_last_error();
}

}  // namespace

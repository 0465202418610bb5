// An owned block of device memory, freed when it goes out of scope, with
// the copies the CLI needs.
#pragma once

#include <cuda_runtime_api.h>
#include <stddef.h>

namespace gg::cli {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);  // uninitialized
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace gg::cli

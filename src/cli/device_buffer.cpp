// Device memory ownership: see device_buffer.h. Zero-byte buffers allocate
// nothing and copy nothing, so empty operands need no special case.
#include "cli/device_buffer.h"

#include <string>
#include <utility>

#include "cli/checks.h"
#include "cli/host_memory.h"

namespace gg::cli {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes > 0) {
    const std::string call = "cudaMalloc of " + byte_count_text(static_cast<double>(bytes));
    check_cuda(cudaMalloc(&data_, bytes), call.c_str());
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(bytes_, other.bytes_);
  return *this;
}

void DeviceBuffer::upload(const void* host, size_t bytes) {
  if (bytes > 0)
    check_cuda(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}

void DeviceBuffer::download(void* host, size_t bytes) const {
  if (bytes > 0)
    check_cuda(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}

}  // namespace gg::cli

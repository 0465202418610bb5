// See guarded_buffer.h.
#include "gpu/guarded_buffer.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <utility>

#include "gpu/cuda_check.h"

namespace gg::test {

GuardedBuffer::GuardedBuffer(std::string name, size_t bytes)
    : name_(std::move(name)), bytes_(bytes) {
  const size_t total = bytes + 2 * kGuardBytes;
  void* base = nullptr;
  check_cuda(cudaMalloc(&base, total), ("cudaMalloc for " + name_).c_str());
  base_ = static_cast<uint8_t*>(base);
  check_cuda(cudaMemset(base_, kGuardByte, total), "cudaMemset (guard pattern)");
}

GuardedBuffer::~GuardedBuffer() {
  if (base_ != nullptr) cudaFree(base_);
}

GuardedBuffer::GuardedBuffer(GuardedBuffer&& other) noexcept
    : name_(std::move(other.name_)),
      bytes_(other.bytes_),
      base_(std::exchange(other.base_, nullptr)) {}

void GuardedBuffer::upload(const std::vector<uint8_t>& host) {
  if (host.size() != bytes_) throw std::logic_error("upload size mismatch for " + name_);
  check_cuda(cudaMemcpy(data(), host.data(), bytes_, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  // Pageable H2D copies may return before the DMA lands; the test stream is
  // a blocking stream, but a device sync keeps the order obvious.
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize after upload");
}

std::vector<uint8_t> GuardedBuffer::download() const {
  std::vector<uint8_t> host(bytes_);
  check_cuda(cudaMemcpy(host.data(), data(), bytes_, cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return host;
}

void GuardedBuffer::zero() { check_cuda(cudaMemset(data(), 0, bytes_), "cudaMemset (zero)"); }

void GuardedBuffer::expect_guards_intact() const {
  std::vector<uint8_t> guard(kGuardBytes);
  const struct {
    const char* side;
    const uint8_t* start;
  } bands[] = {{"before", base_}, {"after", base_ + kGuardBytes + bytes_}};
  for (const auto& band : bands) {
    check_cuda(cudaMemcpy(guard.data(), band.start, kGuardBytes, cudaMemcpyDeviceToHost),
               "cudaMemcpy D2H (guard)");
    size_t changed = 0;
    size_t first = kGuardBytes;
    for (size_t i = 0; i < kGuardBytes; ++i) {
      if (guard[i] != kGuardByte) {
        ++changed;
        if (first == kGuardBytes) first = i;
      }
    }
    if (changed == 0) continue;
    // Offsets are relative to the payload's first byte: negative before it,
    // bytes() and up after it.
    const long long offset =
        band.start == base_ ? static_cast<long long>(first) - static_cast<long long>(kGuardBytes)
                            : static_cast<long long>(bytes_ + first);
    ADD_FAILURE() << "write outside buffer '" << name_ << "' (" << bytes_ << " bytes): " << changed
                  << " guard byte(s) changed " << band.side << " it, first at byte offset "
                  << offset;
  }
}

DeviceArray::DeviceArray(std::string name, std::vector<uint8_t> host)
    : host_(std::move(host)), device_(std::move(name), host_.size()) {
  device_.upload(host_);
}

void DeviceArray::assign(std::vector<uint8_t> host) {
  if (host.size() != host_.size()) {
    throw std::logic_error("assign size mismatch for " + device_.name());
  }
  host_ = std::move(host);
  device_.upload(host_);
}

void DeviceArray::expect_intact() const {
  device_.expect_guards_intact();
  EXPECT_TRUE(device_.download() == host_) << "input '" << device_.name() << "' was modified";
}

}  // namespace gg::test

// A device allocation with guard bands: kGuardBytes before and after the
// payload hold a fixed byte pattern, so any write a kernel makes just outside
// its tensor is caught afterwards, with the buffer's name and the offset.
// The pattern, 0xff bytes, reads as NaN in bf16, fp16 and fp32: a read past a
// tensor that reaches a result shows up there as well (compute-sanitizer
// cannot see such reads, the bands being part of the allocation). The payload
// keeps cudaMalloc's 256-byte alignment.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace gg::test {

class GuardedBuffer {
 public:
  static constexpr size_t kGuardBytes = 16384;
  static constexpr uint8_t kGuardByte = 0xff;

  GuardedBuffer(std::string name, size_t bytes);
  ~GuardedBuffer();
  GuardedBuffer(GuardedBuffer&& other) noexcept;
  GuardedBuffer& operator=(GuardedBuffer&&) = delete;
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  void* data() const { return base_ == nullptr ? nullptr : base_ + kGuardBytes; }
  size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }

  // Synchronous copies of the whole payload (host.size() must equal bytes()).
  void upload(const std::vector<uint8_t>& host);
  std::vector<uint8_t> download() const;
  void zero();

  // Adds a test failure for each damaged guard band, naming the buffer, the
  // side and the offset of the first changed byte relative to the payload.
  void expect_guards_intact() const;

 private:
  std::string name_;
  size_t bytes_;
  uint8_t* base_ = nullptr;
};

// A small read-only input (sizes, offsets, per-group scalars): host bytes and
// a guarded device copy, which must come back unchanged after a run.
class DeviceArray {
 public:
  DeviceArray(std::string name, std::vector<uint8_t> host);

  void* data() const { return device_.data(); }
  const std::vector<uint8_t>& host() const { return host_; }
  // New contents of the same size, uploaded.
  void assign(std::vector<uint8_t> host);
  void expect_intact() const;  // guards, and contents unchanged

 private:
  std::vector<uint8_t> host_;
  GuardedBuffer device_;
};

}  // namespace gg::test

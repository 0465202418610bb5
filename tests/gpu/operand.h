// A tensor the test owns on both sides: host bytes holding what the device
// copy should hold (the reference runs on them) and guarded device buffers.
//
// A tensor is [rows, cols] or [batches, rows, cols] as stored (a transposed
// operand is stored with its transposed shape). Rows may be padded: the row
// stride is cols + padding, and padding is filled with poison so that a kernel
// reading past a row's end produces NaN. A pointer-array tensor keeps each of
// its `batches` matrices in a separate allocation (each with its own guards)
// and passes a device array of their addresses, as per-expert parameters do.
#pragma once

#include <stdint.h>

#include <optional>
#include <string>
#include <vector>

#include "gpu/guarded_buffer.h"
#include "groupgemm/groupgemm.h"

namespace gg::test {

struct TensorLayout {
  gg_dtype dtype = GG_DTYPE_BF16;
  int64_t batches = 0;  // 0: a rank-2 tensor
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t padding = 0;  // extra elements at the end of every row
  bool pointer_array = false;
};

// Host bytes of a tensor: one block, or one per matrix of a pointer array.
struct HostImage {
  std::vector<std::vector<uint8_t>> blocks;
  std::vector<void*> pointers;  // filled by Operand::view_of for pointer arrays
};

class Operand {
 public:
  Operand(const std::string& name, const TensorLayout& layout);

  const TensorLayout& layout() const { return layout_; }
  int64_t row_stride() const { return layout_.cols + layout_.padding; }

  // The intended contents. Every element, padding included, starts poisoned.
  HostImage& host() { return host_; }
  const HostImage& host() const { return host_; }
  void poison_host();

  // Element (batch, row, col) of an image of this tensor (batch 0 for rank 2).
  float get(const HostImage& image, int64_t batch, int64_t row, int64_t col) const;
  void set(HostImage& image, int64_t batch, int64_t row, int64_t col, float value) const;
  // A quantized tensor's element code (values.h).
  void set_code(HostImage& image, int64_t batch, int64_t row, int64_t col, uint8_t code) const;
  // The image with every element replaced by its magnitude (a quantized
  // tensor's codes by their magnitude's codes).
  HostImage magnitudes(const HostImage& image) const;
  // Position of element (batch, row, col) in the image: block and element.
  int64_t block_of(int64_t batch) const;
  int64_t element_of(int64_t batch, int64_t row, int64_t col) const;

  // A view of `image` in host memory (for the reference path).
  gg_tensor view_of(HostImage& image) const;
  // A view of the device copy.
  gg_tensor device_view() const;

  void upload();  // host() -> device
  HostImage download() const;

  // A pointer array's matrices change places on the device: matrix b moves
  // to the allocation that held matrix b + 1 (and the last to the first's),
  // and the device pointer array is rewritten to match. The contents are the
  // caller's to upload again.
  void move_matrices();

  // Guards of every allocation, and (for inputs) that the device copy still
  // equals host() bit for bit.
  void expect_guards_intact() const;
  void expect_device_unchanged() const;

 private:
  gg_tensor view(void* data) const;
  std::vector<uint8_t> pointer_table() const;  // addresses of the device matrices

  GuardedBuffer& device_of(size_t block) { return device_[allocation_[block]]; }
  const GuardedBuffer& device_of(size_t block) const { return device_[allocation_[block]]; }

  TensorLayout layout_;
  int64_t block_elements_ = 0;  // elements (padding included) of each block
  HostImage host_;
  std::vector<GuardedBuffer> device_;
  std::vector<size_t> allocation_;  // block b lives in device_[allocation_[b]]
  std::optional<GuardedBuffer> device_pointers_;  // for a pointer array
};

}  // namespace gg::test

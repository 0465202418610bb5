// See operand.h.
#include "gpu/operand.h"

#include <gtest/gtest.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "gpu/values.h"

namespace gg::test {

Operand::Operand(const std::string& name, const TensorLayout& layout) : layout_(layout) {
  const int64_t matrix_elements = layout_.rows * row_stride();
  const int64_t matrices = layout_.batches == 0 ? 1 : layout_.batches;
  const int64_t blocks = layout_.pointer_array ? matrices : 1;
  const int64_t block_elements =
      layout_.pointer_array ? matrix_elements : matrices * matrix_elements;
  block_elements_ = block_elements;
  const size_t block_bytes = storage_bytes(layout_.dtype, block_elements);
  for (int64_t b = 0; b < blocks; ++b) {
    host_.blocks.emplace_back(block_bytes);
    device_.emplace_back(layout_.pointer_array ? name + "[" + std::to_string(b) + "]" : name,
                         block_bytes);
    allocation_.push_back(static_cast<size_t>(b));
  }
  poison_host();
  if (layout_.pointer_array) {
    const std::vector<uint8_t> table = pointer_table();
    device_pointers_.emplace(name + " pointer array", table.size());
    device_pointers_->upload(table);
  }
}

std::vector<uint8_t> Operand::pointer_table() const {
  std::vector<uint8_t> table(device_.size() * sizeof(void*));
  for (size_t b = 0; b < device_.size(); ++b) {
    void* address = device_of(b).data();
    memcpy(table.data() + b * sizeof(void*), &address, sizeof(void*));
  }
  return table;
}

void Operand::poison_host() {
  const bool codes = is_quantized_dtype(layout_.dtype);
  for (auto& block : host_.blocks) {
    for (int64_t i = 0; i < block_elements_; ++i) {
      if (codes) {
        store_code_poison(block.data(), layout_.dtype, i);
      } else {
        store_poison(block.data(), layout_.dtype, i);
      }
    }
  }
}

void Operand::set_code(HostImage& image, int64_t batch, int64_t row, int64_t col,
                       uint8_t code) const {
  store_code(image.blocks[static_cast<size_t>(block_of(batch))].data(), layout_.dtype,
             element_of(batch, row, col), code);
}

HostImage Operand::magnitudes(const HostImage& image) const {
  HostImage result = image;
  const bool codes = is_quantized_dtype(layout_.dtype);
  for (auto& block : result.blocks) {
    for (int64_t i = 0; i < block_elements_; ++i) {
      if (codes) {
        const uint8_t code = load_code(block.data(), layout_.dtype, i);
        store_code(block.data(), layout_.dtype, i, magnitude_code(layout_.dtype, code));
      } else {
        store_element(block.data(), layout_.dtype, i,
                      std::fabs(load_element(block.data(), layout_.dtype, i)));
      }
    }
  }
  return result;
}

int64_t Operand::block_of(int64_t batch) const { return layout_.pointer_array ? batch : 0; }

int64_t Operand::element_of(int64_t batch, int64_t row, int64_t col) const {
  const int64_t matrix_start = layout_.pointer_array ? 0 : batch * layout_.rows * row_stride();
  return matrix_start + row * row_stride() + col;
}

float Operand::get(const HostImage& image, int64_t batch, int64_t row, int64_t col) const {
  return load_element(image.blocks[static_cast<size_t>(block_of(batch))].data(), layout_.dtype,
                      element_of(batch, row, col));
}

void Operand::set(HostImage& image, int64_t batch, int64_t row, int64_t col, float value) const {
  store_element(image.blocks[static_cast<size_t>(block_of(batch))].data(), layout_.dtype,
                element_of(batch, row, col), value);
}

gg_tensor Operand::view(void* data) const {
  gg_tensor t{};
  t.data = data;
  t.dtype = layout_.dtype;
  t.rank = layout_.batches == 0 ? 2 : 3;
  const int64_t dims[3] = {layout_.batches, layout_.rows, layout_.cols};
  const int64_t* shape = layout_.batches == 0 ? dims + 1 : dims;
  for (int i = 0; i < t.rank; ++i) t.shape[i] = shape[i];
  // Unpadded tensors pass zero strides ("packed"), padded ones every stride,
  // so both ways of describing a tensor are exercised. A pointer array's
  // batch stride describes no memory; it is given as if the matrices were
  // stacked.
  if (layout_.padding != 0) {
    t.strides[t.rank - 1] = 1;
    t.strides[t.rank - 2] = row_stride();
    if (t.rank == 3) t.strides[0] = layout_.rows * row_stride();
  }
  t.flags = layout_.pointer_array ? GG_TENSOR_POINTER_ARRAY : 0u;
  // A view of no elements has no address, as a framework's empty tensor.
  if (!layout_.pointer_array && layout_.rows * layout_.cols == 0) t.data = nullptr;
  return t;
}

gg_tensor Operand::view_of(HostImage& image) const {
  if (!layout_.pointer_array) return view(image.blocks.front().data());
  image.pointers.clear();
  for (auto& block : image.blocks) image.pointers.push_back(block.data());
  return view(image.pointers.data());
}

gg_tensor Operand::device_view() const {
  return view(layout_.pointer_array ? device_pointers_->data() : device_.front().data());
}

void Operand::upload() {
  for (size_t b = 0; b < device_.size(); ++b) device_of(b).upload(host_.blocks[b]);
}

HostImage Operand::download() const {
  HostImage image;
  for (size_t b = 0; b < device_.size(); ++b) image.blocks.push_back(device_of(b).download());
  return image;
}

void Operand::move_matrices() {
  if (!layout_.pointer_array) throw std::logic_error("only a pointer array's matrices move");
  std::rotate(allocation_.begin(), allocation_.begin() + 1, allocation_.end());
  device_pointers_->upload(pointer_table());
}

void Operand::expect_guards_intact() const {
  for (const auto& buffer : device_) buffer.expect_guards_intact();
  if (device_pointers_) device_pointers_->expect_guards_intact();
}

void Operand::expect_device_unchanged() const {
  for (size_t b = 0; b < device_.size(); ++b) {
    EXPECT_TRUE(device_of(b).download() == host_.blocks[b])
        << "input '" << device_of(b).name() << "' was modified on the device";
  }
  if (device_pointers_) {
    EXPECT_TRUE(device_pointers_->download() == pointer_table())
        << "'" << device_pointers_->name() << "' was modified on the device";
  }
}

}  // namespace gg::test

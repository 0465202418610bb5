// See host_tensor.h.
#include "host_tensor.h"

#include <string.h>

#include "formats/codecs.h"

namespace gg::test {
namespace {

int64_t scale_entry_bytes(gg_block_scaling scaling) {
  return scaling == GG_BLOCK_1X128 || scaling == GG_BLOCK_128X128 || scaling == GG_BLOCK_ROWWISE
             ? 4
             : 1;
}

// Garbage for padding: every byte 0xFF is a NaN in every format but e2m1.
constexpr uint8_t kPadByte = 0xFF;

}  // namespace

HostTensor::HostTensor(gg_dtype dtype, int32_t groups, int64_t rows, int64_t cols, int64_t row_pad,
                       bool pointer_array)
    : groups_(groups), rows_(rows), cols_(cols), pointer_array_(pointer_array) {
  row_stride_ = cols + (row_pad + 1) / 2 * 2;
  matrix_stride_ = rows * row_stride_ + (row_pad > 0 ? 2 * row_stride_ : 0);
  const int64_t matrix_bytes = (matrix_stride_ * fmt::dtype_bits(dtype) + 7) / 8 + 1;
  if (pointer_array) {
    for (int32_t g = 0; g < groups; ++g) {
      data_.emplace_back(static_cast<size_t>(matrix_bytes), kPadByte);
      data_pointers_.push_back(data_.back().data());
    }
  } else {
    data_.emplace_back(static_cast<size_t>(matrix_bytes * matrices()), kPadByte);
  }
  view_.data = pointer_array ? static_cast<void*>(data_pointers_.data()) : data_[0].data();
  view_.dtype = dtype;
  view_.rank = groups == 0 ? 2 : 3;
  if (groups == 0) {
    view_.shape[0] = rows;
    view_.shape[1] = cols;
    view_.strides[0] = row_stride_;
    view_.strides[1] = 1;
  } else {
    view_.shape[0] = groups;
    view_.shape[1] = rows;
    view_.shape[2] = cols;
    view_.strides[0] = matrix_stride_;
    view_.strides[1] = row_stride_;
    view_.strides[2] = 1;
  }
  view_.flags = pointer_array ? GG_TENSOR_POINTER_ARRAY : 0u;
}

uint8_t* HostTensor::locate(int32_t g, int64_t r, int64_t c, int64_t* index) const {
  const int64_t in_matrix = r * row_stride_ + c;
  if (pointer_array_) {
    *index = in_matrix;
    return const_cast<uint8_t*>(data_[static_cast<size_t>(g)].data());
  }
  *index = (groups_ == 0 ? 0 : g * matrix_stride_) + in_matrix;
  return const_cast<uint8_t*>(data_[0].data());
}

uint32_t HostTensor::code(int32_t g, int64_t r, int64_t c) const {
  int64_t i;
  const uint8_t* base = locate(g, r, c, &i);
  switch (fmt::dtype_bits(dtype())) {
    case 4:
      return (i % 2 == 0) ? base[i / 2] & 0xFu : base[i / 2] >> 4;
    case 8:
      return base[i];
    case 16: {
      uint16_t v;
      memcpy(&v, base + 2 * i, 2);
      return v;
    }
    default: {
      uint32_t v;
      memcpy(&v, base + 4 * i, 4);
      return v;
    }
  }
}

void HostTensor::set_code(int32_t g, int64_t r, int64_t c, uint32_t code) {
  int64_t i;
  uint8_t* base = locate(g, r, c, &i);
  switch (fmt::dtype_bits(dtype())) {
    case 4: {
      uint8_t& byte = base[i / 2];
      byte = static_cast<uint8_t>(i % 2 == 0 ? (byte & 0xF0u) | (code & 0xFu)
                                             : (byte & 0x0Fu) | ((code & 0xFu) << 4));
      return;
    }
    case 8:
      base[i] = static_cast<uint8_t>(code);
      return;
    case 16: {
      const uint16_t v = static_cast<uint16_t>(code);
      memcpy(base + 2 * i, &v, 2);
      return;
    }
    default:
      memcpy(base + 4 * i, &code, 4);
  }
}

void HostTensor::fill(CodeRange range, std::mt19937& rng) {
  for (int32_t g = 0; g < matrices(); ++g)
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t c = 0; c < cols_; ++c) set_code(g, r, c, random_code(dtype(), range, rng));
}

void HostTensor::fill_code(uint32_t code) {
  for (int32_t g = 0; g < matrices(); ++g)
    for (int64_t r = 0; r < rows_; ++r)
      for (int64_t c = 0; c < cols_; ++c) set_code(g, r, c, code);
}

void HostTensor::allocate_block_scales(gg_block_scaling scaling, int64_t scale_rows,
                                       int64_t scale_cols) {
  view_.block_scaling = scaling;
  scale_cols_ = scale_cols;
  scale_matrix_ = scale_rows * scale_cols;
  // One pad byte after the packed scales of each buffer.
  const int64_t bytes = scale_matrix_ * scale_entry_bytes(scaling);
  scales_.clear();
  scale_pointers_.clear();
  if (pointer_array_) {
    for (int32_t g = 0; g < groups_; ++g) {
      scales_.emplace_back(static_cast<size_t>(bytes + 1), kPadByte);
      scale_pointers_.push_back(scales_.back().data());
    }
    view_.block_scales = scale_pointers_.data();
  } else {
    scales_.emplace_back(static_cast<size_t>(bytes * matrices() + 1), kPadByte);
    view_.block_scales = scales_[0].data();
  }
}

uint32_t HostTensor::scale_code(int32_t g, int64_t i, int64_t j) const {
  const int64_t entry = (pointer_array_ ? 0 : g * scale_matrix_) + i * scale_cols_ + j;
  const uint8_t* base = scales_[pointer_array_ ? static_cast<size_t>(g) : 0].data();
  if (scale_entry_bytes(view_.block_scaling) == 1) return base[entry];
  uint32_t v;
  memcpy(&v, base + 4 * entry, 4);
  return v;
}

void HostTensor::set_scale_code(int32_t g, int64_t i, int64_t j, uint32_t code) {
  const int64_t entry = (pointer_array_ ? 0 : g * scale_matrix_) + i * scale_cols_ + j;
  uint8_t* base = scales_[pointer_array_ ? static_cast<size_t>(g) : 0].data();
  if (scale_entry_bytes(view_.block_scaling) == 1) {
    base[entry] = static_cast<uint8_t>(code);
  } else {
    memcpy(base + 4 * entry, &code, 4);
  }
}

long double HostTensor::scale_value(int32_t g, int64_t i, int64_t j) const {
  const uint32_t code = scale_code(g, i, j);
  switch (view_.block_scaling) {
    case GG_BLOCK_MX32:
      return model_e8m0(static_cast<uint8_t>(code));
    case GG_BLOCK_NV16:
      return model_value(GG_DTYPE_E4M3, code & 0x7Fu);
    case GG_BLOCK_1X128:
    case GG_BLOCK_128X128:
    case GG_BLOCK_ROWWISE:
      return model_value(GG_DTYPE_FP32, code);
    case GG_BLOCK_NONE:
      break;
  }
  return 1.0L;
}

void HostTensor::set_scale(gg_scale_extent extent, std::vector<float> values) {
  scale_ = std::move(values);
  view_.scale_extent = extent;
  view_.scale = scale_.data();
}

int64_t HostTensor::scale_entries_changed() const {
  const uint32_t fill = scale_entry_bytes(view_.block_scaling) == 1 ? 0xFFu : 0xFFFFFFFFu;
  int64_t changed = 0;
  for (int32_t g = 0; g < matrices(); ++g)
    for (int64_t e = 0; e < scale_matrix_; ++e)
      if (scale_code(g, e / scale_cols_, e % scale_cols_) != fill) ++changed;
  return changed;
}

int64_t HostTensor::padding_changes() const {
  // Mark the bytes that hold elements or scale entries, then look at the rest.
  std::vector<std::vector<bool>> used;
  for (const auto& buffer : data_) used.emplace_back(buffer.size(), false);
  const int bits = fmt::dtype_bits(dtype());
  for (int32_t g = 0; g < matrices(); ++g) {
    for (int64_t r = 0; r < rows_; ++r) {
      for (int64_t c = 0; c < cols_; ++c) {
        int64_t i;
        locate(g, r, c, &i);
        const int64_t first = i * bits / 8;
        const int64_t last = ((i + 1) * bits - 1) / 8;
        for (int64_t b = first; b <= last; ++b) {
          used[pointer_array_ ? static_cast<size_t>(g) : 0][static_cast<size_t>(b)] = true;
        }
      }
    }
  }
  int64_t changes = 0;
  for (size_t buffer = 0; buffer < data_.size(); ++buffer) {
    for (size_t b = 0; b < data_[buffer].size(); ++b) {
      if (!used[buffer][b] && data_[buffer][b] != kPadByte) ++changes;
    }
  }
  // Scale matrices are packed: only the last byte of each buffer is padding.
  for (const auto& buffer : scales_) {
    if (buffer.back() != kPadByte) ++changes;
  }
  return changes;
}

}  // namespace gg::test

// Host tensors for the reference tests: storage, a gg_tensor view of it, and
// element access by code and by model value.
//
// A tensor is rank 2 ([rows, cols]) or rank 3 ([G, rows, cols]), stacked or
// through an array of G pointers. Rows are padded (row stride > cols, and
// stacked matrices further apart than their rows) and the padding is filled
// with NaN-like garbage, so a reader that strays outside the view shows up.
// Block scales follow the same stacked / pointer-array choice as the data;
// tests index them by (matrix, scale row, scale column) themselves.
#pragma once

#include <stdint.h>

#include <random>
#include <vector>

#include "format_model.h"
#include "groupgemm/groupgemm.h"

namespace gg::test {

class HostTensor {
 public:
  HostTensor() = default;
  // groups == 0: rank 2. row_pad: extra elements per row (kept even).
  HostTensor(gg_dtype dtype, int32_t groups, int64_t rows, int64_t cols, int64_t row_pad,
             bool pointer_array);
  HostTensor(const HostTensor&) = delete;
  HostTensor& operator=(const HostTensor&) = delete;
  HostTensor(HostTensor&&) = default;
  HostTensor& operator=(HostTensor&&) = default;

  const gg_tensor& view() const { return view_; }
  gg_dtype dtype() const { return view_.dtype; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }

  uint32_t code(int32_t g, int64_t r, int64_t c) const;
  void set_code(int32_t g, int64_t r, int64_t c, uint32_t code);
  long double value(int32_t g, int64_t r, int64_t c) const {
    return model_value(dtype(), code(g, r, c));
  }
  // Every element (padding excluded) drawn from random_code.
  void fill(CodeRange range, std::mt19937& rng);
  // Every element set to `code`.
  void fill_code(uint32_t code);

  // Block scales of `scaling`, a [scale_rows, scale_cols] matrix per tensor
  // matrix, every entry set to random codes from `draw`.
  template <class Draw>
  void add_block_scales(gg_block_scaling scaling, int64_t scale_rows, int64_t scale_cols,
                        Draw draw) {
    allocate_block_scales(scaling, scale_rows, scale_cols);
    for (int32_t g = 0; g < matrices(); ++g)
      for (int64_t i = 0; i < scale_rows; ++i)
        for (int64_t j = 0; j < scale_cols; ++j) set_scale_code(g, i, j, draw());
  }
  void allocate_block_scales(gg_block_scaling scaling, int64_t scale_rows, int64_t scale_cols);
  uint32_t scale_code(int32_t g, int64_t i, int64_t j) const;
  void set_scale_code(int32_t g, int64_t i, int64_t j, uint32_t code);
  // Value of a block scale entry, from the scale format's definition.
  long double scale_value(int32_t g, int64_t i, int64_t j) const;

  // The fp32 per-tensor / per-group scale array.
  void set_scale(gg_scale_extent extent, std::vector<float> values);
  const std::vector<float>& scale() const { return scale_; }

  // Block-scale entries that no longer hold the fill pattern (all ones).
  int64_t scale_entries_changed() const;
  // Bytes of data and block-scale storage outside every element and scale
  // entry (row and matrix padding) that no longer hold the fill pattern.
  int64_t padding_changes() const;

 private:
  int32_t matrices() const { return groups_ == 0 ? 1 : groups_; }
  // Storage buffer and element index of (g, r, c).
  uint8_t* locate(int32_t g, int64_t r, int64_t c, int64_t* index) const;

  gg_tensor view_{};
  int32_t groups_ = 0;
  int64_t rows_ = 0, cols_ = 0, row_stride_ = 0, matrix_stride_ = 0;
  bool pointer_array_ = false;
  std::vector<std::vector<uint8_t>> data_;  // one buffer, or one per matrix
  std::vector<void*> data_pointers_;
  std::vector<std::vector<uint8_t>> scales_;
  std::vector<void*> scale_pointers_;
  int64_t scale_cols_ = 0, scale_matrix_ = 0;
  std::vector<float> scale_;
};

}  // namespace gg::test

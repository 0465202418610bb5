// One matrix of a tensor view, addressed by (row, column).
//
// A rank-2 view is one matrix; a rank-3 view holds G of them, either stacked
// (matrix g starts strides[0] elements after matrix g - 1) or through an
// array of G pointers (GG_TENSOR_POINTER_ARRAY), each matrix using the view's
// row stride. Positions are element indices from `base`, the form
// fmt::decode and fmt::encode take, so packed e2m1 needs no special case.
// The innermost stride is 1: the API layer guarantees it.
#pragma once

#include <stdint.h>

#include "groupgemm/groupgemm.h"

namespace gg::ref {

// A rectangle [row_begin, row_end) x [col_begin, col_end) of one matrix.
struct Region {
  int64_t row_begin, row_end;
  int64_t col_begin, col_end;
};

struct MatrixView {
  gg_dtype dtype;
  void* base;
  int64_t offset;      // elements from base to element (0, 0)
  int64_t row_stride;  // elements
  int64_t rows, cols;
  int64_t index(int64_t row, int64_t col) const { return offset + row * row_stride + col; }
};

// Matrix g of a rank-3 view, or the matrix of a rank-2 view (g ignored).
MatrixView matrix_of(const gg_tensor& tensor, int32_t g);

// Matrix g's entry of an array that holds one matrix per group: stacked
// (`matrix_bytes` apart) or, for a pointer-array view, the g-th pointer.
void* group_pointer(void* array, const gg_tensor& tensor, int32_t g, int64_t matrix_bytes);

}  // namespace gg::ref

// See matrix_view.h.
#include "reference/matrix_view.h"

namespace gg::ref {

void* group_pointer(void* array, const gg_tensor& tensor, int32_t g, int64_t matrix_bytes) {
  if (tensor.rank == 2) return array;
  if (tensor.flags & GG_TENSOR_POINTER_ARRAY) return static_cast<void* const*>(array)[g];
  return static_cast<char*>(array) + g * matrix_bytes;
}

MatrixView matrix_of(const gg_tensor& tensor, int32_t g) {
  if (tensor.rank == 2) {
    return MatrixView{tensor.dtype,      tensor.data,     0,
                      tensor.strides[0], tensor.shape[0], tensor.shape[1]};
  }
  const bool pointer_array = (tensor.flags & GG_TENSOR_POINTER_ARRAY) != 0;
  return MatrixView{tensor.dtype,
                    pointer_array ? static_cast<void* const*>(tensor.data)[g] : tensor.data,
                    pointer_array ? 0 : g * tensor.strides[0],
                    tensor.strides[1],
                    tensor.shape[1],
                    tensor.shape[2]};
}

}  // namespace gg::ref

// See field_checks.h.
#include "api/field_checks.h"

#include <stdint.h>

#include <string>

#include "api/error.h"
#include "api/names.h"
#include "formats/codecs.h"

namespace gg::api {
namespace {

// Zero strides become packed ones: the product of the later dimensions.
gg_status fill_strides(const TensorRole& role, gg_tensor* tensor) {
  int64_t packed = 1;
  for (int i = tensor->rank - 1; i >= 0; --i) {
    if (tensor->strides[i] < 0) {
      return fail(GG_STATUS_INVALID_ARGUMENT, "%s.strides[%d] must be >= 0 (0: packed), got %lld",
                  role.name, i, ll(tensor->strides[i]));
    }
    if (tensor->strides[i] == 0) tensor->strides[i] = packed;
    if (__builtin_mul_overflow(packed, tensor->shape[i], &packed)) {
      return fail(GG_STATUS_INVALID_ARGUMENT, "%s.shape (%s) holds more than 2^63 elements",
                  role.name, role.shape_doc);
    }
  }
  return GG_STATUS_SUCCESS;
}

// The offset of the last element, in bytes of the widest dtype, must fit in
// int64: the kernels and the reference address elements with it.
gg_status check_extent(const TensorRole& role, const gg_tensor& tensor, int outermost) {
  constexpr int64_t kLimit = INT64_MAX / 4;
  int64_t last = 0;
  for (int i = outermost; i < tensor.rank; ++i) {
    int64_t step = 0;
    if (tensor.shape[i] == 0) return GG_STATUS_SUCCESS;  // no element at all
    if (__builtin_mul_overflow(tensor.shape[i] - 1, tensor.strides[i], &step) ||
        __builtin_add_overflow(last, step, &last) || last > kLimit) {
      return fail(GG_STATUS_INVALID_ARGUMENT,
                  "%s: its last element lies more than 2^61 elements past %s.data", role.name,
                  role.name);
    }
  }
  return GG_STATUS_SUCCESS;
}

// Rows must not overlap: a stride spans at least the dimension inside it.
// The outer stride of a pointer array is unused (each matrix has its own
// pointer), so it is not checked.
gg_status check_strides(const TensorRole& role, const gg_tensor& tensor) {
  const int inner = tensor.rank - 1;
  if (tensor.strides[inner] != 1) {
    return fail(GG_STATUS_INVALID_ARGUMENT,
                "%s.strides[%d] must be 1 (inner dimension contiguous), got %lld", role.name, inner,
                ll(tensor.strides[inner]));
  }
  const int outermost = is_pointer_array(tensor) ? 1 : 0;
  for (int i = inner - 1; i >= outermost; --i) {
    int64_t span = 0;
    if (__builtin_mul_overflow(tensor.shape[i + 1], tensor.strides[i + 1], &span)) {
      return fail(GG_STATUS_INVALID_ARGUMENT, "%s.shape[%d] * strides[%d] overflows int64",
                  role.name, i + 1, i + 1);
    }
    if (tensor.strides[i] < span) {
      return fail(GG_STATUS_INVALID_ARGUMENT,
                  "%s.strides[%d] (%lld) must be >= shape[%d] * strides[%d] (%lld): rows would "
                  "overlap",
                  role.name, i, ll(tensor.strides[i]), i + 1, i + 1, ll(span));
    }
  }
  return check_extent(role, tensor, outermost);
}

// e2m1 packs two elements per byte: every row must start on a byte.
gg_status check_e2m1_packing(const TensorRole& role, const gg_tensor& tensor) {
  const int inner = tensor.rank - 1;
  if (tensor.shape[inner] % 2 != 0) {
    return fail(GG_STATUS_INVALID_ARGUMENT,
                "%s.shape[%d] must be even for e2m1 (two elements per byte), got %lld", role.name,
                inner, ll(tensor.shape[inner]));
  }
  for (int i = is_pointer_array(tensor) ? 1 : 0; i < inner; ++i) {
    if (tensor.strides[i] % 2 != 0) {
      return fail(GG_STATUS_INVALID_ARGUMENT,
                  "%s.strides[%d] must be even for e2m1 (two elements per byte), got %lld",
                  role.name, i, ll(tensor.strides[i]));
    }
  }
  return GG_STATUS_SUCCESS;
}

// Whether `tensor` (its shape checked) is a plain view of no elements:
// nothing is read or written through its data or block scales, which may
// then be NULL (a framework's empty tensor has no address). A pointer array
// always holds G pointers.
bool holds_nothing(const gg_tensor& tensor) {
  if (is_pointer_array(tensor)) return false;
  for (int i = 0; i < tensor.rank; ++i) {
    if (tensor.shape[i] == 0) return true;
  }
  return false;
}

gg_status check_data_pointer(const TensorRole& role, const gg_tensor& tensor) {
  const std::string name = std::string(role.name) + ".data";
  if (tensor.data == nullptr) {
    if (holds_nothing(tensor)) return GG_STATUS_SUCCESS;
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s is NULL", name.c_str());
  }
  if (is_pointer_array(tensor)) {
    return check_aligned(name.c_str(), tensor.data, alignof(void*), "an array of pointers");
  }
  const size_t bytes = static_cast<size_t>(fmt::dtype_bits(tensor.dtype) / 8);
  return check_aligned(name.c_str(), tensor.data, bytes > 0 ? bytes : 1, dtype_name(tensor.dtype));
}

}  // namespace

gg_status check_num_groups(int32_t num_groups) {
  if (num_groups <= 0) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "desc->num_groups must be > 0 (got %d)", num_groups);
  }
  return GG_STATUS_SUCCESS;
}

gg_status check_group_sizes(const gg_group_sizes& sizes) {
  const char* type = index_type_name(sizes.type);
  if (type == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT,
                "desc->group_sizes.type must be GG_INDEX_INT32 or GG_INDEX_INT64 (got %d)",
                static_cast<int>(sizes.type));
  }
  if (sizes.sizes == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "desc->group_sizes.sizes is NULL");
  }
  const size_t bytes = sizes.type == GG_INDEX_INT32 ? sizeof(int32_t) : sizeof(int64_t);
  GG_RETURN_IF_ERROR(check_aligned("desc->group_sizes.sizes", sizes.sizes, bytes, type));
  if (sizes.offsets != nullptr) {
    GG_RETURN_IF_ERROR(check_aligned("desc->group_sizes.offsets", sizes.offsets, bytes, type));
  }
  return GG_STATUS_SUCCESS;
}

bool is_fp8(gg_dtype dtype) { return dtype == GG_DTYPE_E4M3 || dtype == GG_DTYPE_E5M2; }

bool is_pointer_array(const gg_tensor& tensor) {
  return (tensor.flags & GG_TENSOR_POINTER_ARRAY) != 0;
}

bool rows_aligned_16(const gg_tensor& tensor) {
  const int64_t bits = fmt::dtype_bits(tensor.dtype);
  const bool pointers = is_pointer_array(tensor);
  bool ok = pointers || reinterpret_cast<uintptr_t>(tensor.data) % 16 == 0;
  for (int i = pointers ? tensor.rank - 2 : 0; i + 1 < tensor.rank; ++i) {
    ok = ok && (tensor.strides[i] * bits / 8) % 16 == 0;
  }
  return ok;
}

gg_status check_aligned(const char* name, const void* pointer, size_t alignment, const char* what) {
  if (reinterpret_cast<uintptr_t>(pointer) % alignment != 0) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s (%p) must be %zu-byte aligned (%s)", name, pointer,
                alignment, what);
  }
  return GG_STATUS_SUCCESS;
}

gg_status check_dim(const TensorRole& role, const gg_tensor& tensor, int index,
                    const char* expected_name, int64_t expected) {
  if (tensor.shape[index] != expected) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s.shape[%d] (%lld) must equal %s (%lld); %s is %s",
                role.name, index, ll(tensor.shape[index]), expected_name, ll(expected), role.name,
                role.shape_doc);
  }
  return GG_STATUS_SUCCESS;
}

gg_status check_view(const TensorRole& role, gg_tensor* tensor) {
  if (dtype_name(tensor->dtype) == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s.dtype is not a gg_dtype (got %d)", role.name,
                static_cast<int>(tensor->dtype));
  }
  if (tensor->rank != role.rank) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s.rank must be %d (%s is %s), got %d", role.name,
                role.rank, role.name, role.shape_doc, tensor->rank);
  }
  if ((tensor->flags & ~GG_TENSOR_POINTER_ARRAY) != 0) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s.flags has unknown bits 0x%x", role.name,
                tensor->flags & ~GG_TENSOR_POINTER_ARRAY);
  }
  if (is_pointer_array(*tensor) && !role.pointer_array_ok) {
    return fail(GG_STATUS_INVALID_ARGUMENT,
                "%s.flags: GG_TENSOR_POINTER_ARRAY is only allowed on desc->rhs of ragged-M and "
                "desc->out of ragged-K",
                role.name);
  }
  for (int i = 0; i < tensor->rank; ++i) {
    if (tensor->shape[i] < 0) {
      return fail(GG_STATUS_INVALID_ARGUMENT, "%s.shape[%d] must be >= 0 (got %lld)", role.name, i,
                  ll(tensor->shape[i]));
    }
  }
  GG_RETURN_IF_ERROR(check_data_pointer(role, *tensor));
  GG_RETURN_IF_ERROR(fill_strides(role, tensor));
  GG_RETURN_IF_ERROR(check_strides(role, *tensor));
  if (tensor->dtype == GG_DTYPE_E2M1) GG_RETURN_IF_ERROR(check_e2m1_packing(role, *tensor));
  return GG_STATUS_SUCCESS;
}

gg_status check_scaling(const TensorRole& role, const gg_tensor& tensor) {
  const gg_block_scaling scaling = tensor.block_scaling;
  const gg_scale_extent extent = tensor.scale_extent;
  const char* dtype = dtype_name(tensor.dtype);
  if (scaling_name(scaling) == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s.block_scaling is not a gg_block_scaling (got %d)",
                role.name, static_cast<int>(scaling));
  }
  if (extent_name(extent) == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s.scale_extent is not a gg_scale_extent (got %d)",
                role.name, static_cast<int>(extent));
  }
  if (fmt::dtype_bits(tensor.dtype) >= 16) {
    if (scaling != GG_BLOCK_NONE) {
      return fail(GG_STATUS_INVALID_ARGUMENT,
                  "%s.block_scaling must be GG_BLOCK_NONE for %s elements (got %s)", role.name,
                  dtype, scaling_name(scaling));
    }
    if (extent != GG_SCALE_NONE) {
      return fail(GG_STATUS_INVALID_ARGUMENT,
                  "%s.scale_extent must be GG_SCALE_NONE for %s elements (got %s)", role.name,
                  dtype, extent_name(extent));
    }
    return GG_STATUS_SUCCESS;
  }
  switch (scaling) {
    case GG_BLOCK_NONE:
      break;
    case GG_BLOCK_MX32:
      break;  // every narrow element: mxfp8 (e4m3, e5m2) and mxfp4 (e2m1)
    case GG_BLOCK_NV16:
      if (tensor.dtype != GG_DTYPE_E2M1) {
        return fail(GG_STATUS_INVALID_ARGUMENT, "%s.block_scaling nv16 needs dtype e2m1 (got %s)",
                    role.name, dtype);
      }
      break;
    case GG_BLOCK_1X128:
    case GG_BLOCK_128X128:
    case GG_BLOCK_ROWWISE:
      if (!is_fp8(tensor.dtype)) {
        return fail(GG_STATUS_INVALID_ARGUMENT,
                    "%s.block_scaling %s needs dtype e4m3 or e5m2 (got %s)", role.name,
                    scaling_name(scaling), dtype);
      }
      if (scaling == GG_BLOCK_128X128 && role.ragged) {
        return fail(GG_STATUS_INVALID_ARGUMENT,
                    "%s.block_scaling 128x128 is only for non-ragged tensors (stacked weights); "
                    "%s is ragged",
                    role.name, role.name);
      }
      break;
  }
  if (scaling != GG_BLOCK_NONE) {
    const std::string name = std::string(role.name) + ".block_scales";
    if (tensor.block_scales == nullptr && !holds_nothing(tensor)) {
      return fail(GG_STATUS_INVALID_ARGUMENT, "%s is NULL (block_scaling %s needs it)",
                  name.c_str(), scaling_name(scaling));
    }
    const bool fp32_scales = scaling == GG_BLOCK_1X128 || scaling == GG_BLOCK_128X128 ||
                             scaling == GG_BLOCK_ROWWISE;
    if (is_pointer_array(tensor)) {
      GG_RETURN_IF_ERROR(
          check_aligned(name.c_str(), tensor.block_scales, alignof(void*), "an array of pointers"));
    } else if (fp32_scales) {
      GG_RETURN_IF_ERROR(
          check_aligned(name.c_str(), tensor.block_scales, sizeof(float), "fp32 scales"));
    }
  }
  if (extent != GG_SCALE_NONE) {
    const std::string name = std::string(role.name) + ".scale";
    if (tensor.scale == nullptr) {
      return fail(GG_STATUS_INVALID_ARGUMENT, "%s is NULL (scale_extent %s needs it)", name.c_str(),
                  extent_name(extent));
    }
    GG_RETURN_IF_ERROR(check_aligned(name.c_str(), tensor.scale, sizeof(float), "fp32"));
  }
  return GG_STATUS_SUCCESS;
}

gg_status check_plain(const TensorRole& role, const gg_tensor& tensor) {
  if (fmt::dtype_bits(tensor.dtype) < 16) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s.dtype must be bf16, fp16 or fp32 (got %s)",
                role.name, dtype_name(tensor.dtype));
  }
  return check_scaling(role, tensor);
}

}  // namespace gg::api

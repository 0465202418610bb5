// Checks of the descriptor fields that the GEMM and quantize descriptors
// share: the group count, the group sizes and tensor views.
//
// A view is checked in two parts. The geometry (pointer, rank, shape, flags,
// strides) depends on the role the descriptor gives the tensor, described by
// a TensorRole; check_view also normalizes the view, filling zero strides
// with the packed ones, so every later check and every path sees explicit
// strides. The format (dtype, block scaling, fp32 scale) is checked by
// check_scaling, whose rules hold for every role: block scaling and fp32
// scales belong to fp8 and fp4 elements, MX32 to fp8 and e2m1, NV16 to
// e2m1, 1x128, 128x128 and rowwise to fp8, and 128x128 tiles never cross a
// ragged dimension.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "groupgemm/groupgemm.h"

namespace gg::api {

struct TensorRole {
  const char* name;       // argument path, e.g. "desc->rhs"
  int32_t rank;           // the rank the role requires
  const char* shape_doc;  // the role's shape for messages, e.g. "[G, K, N] (rhs_layout N)"
  bool pointer_array_ok;  // may carry GG_TENSOR_POINTER_ARRAY
  bool ragged;            // holds ragged rows (or, transposed, ragged columns)
};

gg_status check_num_groups(int32_t num_groups);

// The sizes pointer (not NULL), the index type and both arrays' alignment.
gg_status check_group_sizes(const gg_group_sizes& sizes);

bool is_fp8(gg_dtype dtype);

bool is_pointer_array(const gg_tensor& tensor);

// Whether every row of `tensor` starts on 16 bytes, as kernels that read
// rows in 16-byte loads (TMA boxes, vector loads) need: its data and every
// stride but the innermost multiples of 16 bytes. Of a pointer array only
// the strides within a matrix: its data is the array, and each matrix's
// address is the caller's contract.
bool rows_aligned_16(const gg_tensor& tensor);

// Pointer (not NULL unless the view holds no elements, aligned to its
// element), dtype, rank, shape, flags and strides of *tensor; fills its zero
// strides.
gg_status check_view(const TensorRole& role, gg_tensor* tensor);

// Block scaling and fp32 scale against the dtype, with their pointers (block
// scales NULL only where the view holds no elements).
gg_status check_scaling(const TensorRole& role, const gg_tensor& tensor);

// A tensor of plain values (GEMM out and bias, quantize input): bf16, fp16 or
// fp32, without scales.
gg_status check_plain(const TensorRole& role, const gg_tensor& tensor);

// Fails unless `pointer` is a multiple of `alignment` bytes; `what` says why
// the alignment is needed.
gg_status check_aligned(const char* name, const void* pointer, size_t alignment, const char* what);

// Fails unless shape[index] equals `expected`, which the message calls
// `expected_name` (e.g. "K = desc->lhs.shape[1]").
gg_status check_dim(const TensorRole& role, const gg_tensor& tensor, int index,
                    const char* expected_name, int64_t expected);

}  // namespace gg::api

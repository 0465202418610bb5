// See problems.h.
#include "problems.h"

#include <string.h>

namespace gg_test {
namespace {

int64_t elements_of(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

void* tensor_memory(Arena* arena, const std::vector<int64_t>& shape) {
  return arena->allocate(static_cast<size_t>(elements_of(shape)) * 4);
}

gg_group_sizes sizes_5_0_11(Arena* arena) {
  int32_t* sizes = static_cast<int32_t*>(arena->allocate(kGroups * sizeof(int32_t)));
  sizes[0] = 5;
  sizes[1] = 0;
  sizes[2] = 11;
  return gg_group_sizes{sizes, nullptr, GG_INDEX_INT32};
}

gg_tensor tensor_of(Arena* arena, gg_dtype dtype, const std::vector<int64_t>& shape) {
  return view(tensor_memory(arena, shape), dtype, shape);
}

}  // namespace

void* Arena::allocate(size_t bytes) {
  const size_t rounded = (bytes + 255) / 256 * 256 + 256;
  void* p = aligned_alloc(256, rounded);
  memset(p, 0, rounded);
  blocks_.emplace_back(p);
  return p;
}

gg_tensor view(void* data, gg_dtype dtype, std::vector<int64_t> shape) {
  gg_tensor t{};
  t.data = data;
  t.dtype = dtype;
  t.rank = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
  return t;
}

GemmProblem ragged_m_problem() {
  GemmProblem p;
  gg_gemm_desc& d = p.desc;
  d.op = GG_OP_RAGGED_M;
  d.num_groups = kGroups;
  d.group_sizes = sizes_5_0_11(&p.arena);
  d.lhs = tensor_of(&p.arena, GG_DTYPE_BF16, {kRows, kK});
  d.rhs = tensor_of(&p.arena, GG_DTYPE_BF16, {kGroups, kN, kK});
  d.rhs_layout = GG_LAYOUT_T;
  d.out = tensor_of(&p.arena, GG_DTYPE_BF16, {kRows, kN});
  d.alpha.value = 1.0f;
  d.path = GG_PATH_REFERENCE;
  return p;
}

GemmProblem ragged_k_problem() {
  GemmProblem p;
  gg_gemm_desc& d = p.desc;
  d.op = GG_OP_RAGGED_K;
  d.num_groups = kGroups;
  d.group_sizes = sizes_5_0_11(&p.arena);
  d.lhs = tensor_of(&p.arena, GG_DTYPE_BF16, {kRows, kP});
  d.rhs = tensor_of(&p.arena, GG_DTYPE_BF16, {kRows, kQ});
  d.out = tensor_of(&p.arena, GG_DTYPE_FP32, {kGroups, kP, kQ});
  d.alpha.value = 1.0f;
  d.path = GG_PATH_REFERENCE;
  return p;
}

void set_format(Arena* arena, gg_tensor* tensor, gg_dtype dtype, gg_block_scaling scaling,
                gg_scale_extent extent) {
  tensor->dtype = dtype;
  tensor->block_scaling = scaling;
  tensor->scale_extent = extent;
  // One fp32 scale per element bounds every block-scale layout.
  int64_t elements = 1;
  for (int i = 0; i < tensor->rank; ++i) elements *= tensor->shape[i];
  tensor->block_scales =
      scaling == GG_BLOCK_NONE ? nullptr : arena->allocate(static_cast<size_t>(elements) * 4);
  tensor->scale = extent == GG_SCALE_NONE
                      ? nullptr
                      : static_cast<float*>(arena->allocate(kGroups * sizeof(float)));
}

void make_pointer_array(Arena* arena, gg_tensor* tensor) {
  void** pointers = static_cast<void**>(arena->allocate(kGroups * sizeof(void*)));
  for (int g = 0; g < kGroups; ++g) {
    pointers[g] = arena->allocate(static_cast<size_t>(tensor->shape[1] * tensor->shape[2]) * 4);
  }
  tensor->data = pointers;
  tensor->flags |= GG_TENSOR_POINTER_ARRAY;
}

QuantizeProblem ragged_quantize_problem() {
  QuantizeProblem p;
  gg_quantize_desc& d = p.desc;
  d.num_groups = kGroups;
  d.group_sizes = sizes_5_0_11(&p.arena);
  d.input = tensor_of(&p.arena, GG_DTYPE_BF16, {kRows, kK});
  d.rowwise = tensor_of(&p.arena, GG_DTYPE_E4M3, {kRows, kK});
  set_format(&p.arena, &d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
  d.columnwise = tensor_of(&p.arena, GG_DTYPE_E4M3, {kK, kRows});
  set_format(&p.arena, &d.columnwise, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
  d.amax = static_cast<float*>(p.arena.allocate(kGroups * sizeof(float)));
  d.path = GG_PATH_REFERENCE;
  return p;
}

QuantizeProblem stacked_quantize_problem() {
  QuantizeProblem p;
  gg_quantize_desc& d = p.desc;
  d.num_groups = kGroups;
  d.input = tensor_of(&p.arena, GG_DTYPE_BF16, {kGroups, kN, kK});
  d.rowwise = tensor_of(&p.arena, GG_DTYPE_E4M3, {kGroups, kN, kK});
  set_format(&p.arena, &d.rowwise, GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE);
  d.path = GG_PATH_REFERENCE;
  return p;
}

}  // namespace gg_test

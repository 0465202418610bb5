// XLA FFI handlers for groupgemm: what JAX's custom calls run.
//
// Four handlers, one per product and platform, exported as C symbols for
// jax.ffi.register_ffi_target (python/groupgemm/jax/_ffi.py):
//
//   gg_jax_ragged_m_cuda / _cpu   out[g rows] = alpha * lhs[g rows] . op(rhs[g]) (+ bias[g])
//   gg_jax_ragged_k_cuda / _cpu   out[g] = alpha * a[g rows]^T . b[g rows]
//
// Each builds a gg_gemm_desc from the buffers XLA hands over and calls the C
// API (gg_grouped_gemm): this file knows nothing of kernels. Every handler
// has two results, the product and the workspace: XLA allocates both, so a
// handler allocates nothing, and under a command buffer (CUDA graph) their
// addresses are XLA's to update. The CUDA handlers run on XLA's stream
// (PlatformStream<cudaStream_t>), never synchronize, and are registered
// command-buffer compatible; before the product, one small launch zeroes the
// workspace (its first word then holds this call's GG_DEVICE_* flags, which
// the Python side returns as an array) and the ragged-M rows past the last
// group, which jax.lax.ragged_dot defines as zeros (prepare.cu). The CPU
// handlers run the library's reference on host buffers, by the same rules.
//
// Shapes and dtypes are checked at trace time by the Python front end, and
// again by the C API here; a failure comes back to XLA as an FFI error
// carrying gg_last_error()'s message.
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

#include "groupgemm/groupgemm.h"
#include "jax/prepare.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

bool to_dtype(ffi::DataType type, gg_dtype* out) {
  switch (type) {
    case ffi::DataType::BF16: *out = GG_DTYPE_BF16; return true;
    case ffi::DataType::F16: *out = GG_DTYPE_FP16; return true;
    case ffi::DataType::F32: *out = GG_DTYPE_FP32; return true;
    default: return false;
  }
}

ffi::Error invalid(const std::string& message) {
  return ffi::Error::InvalidArgument("groupgemm: " + message);
}

// A packed row-major view of `buffer` (strides 0: packed).
ffi::Error view(const char* name, ffi::AnyBuffer buffer, gg_tensor* tensor) {
  *tensor = gg_tensor{};
  if (!to_dtype(buffer.element_type(), &tensor->dtype)) {
    return invalid(std::string(name) + ": element type is not bf16, fp16 or fp32");
  }
  const auto dims = buffer.dimensions();
  if (dims.size() < 2 || dims.size() > 3) {
    return invalid(std::string(name) + ": expected rank 2 or 3");
  }
  tensor->data = buffer.untyped_data();
  tensor->rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) tensor->shape[i] = dims[i];
  return ffi::Error::Success();
}

ffi::Error sizes_view(ffi::AnyBuffer sizes, gg_gemm_desc* desc) {
  const auto type = sizes.element_type();
  if (type != ffi::DataType::S32 && type != ffi::DataType::S64) {
    return invalid("group_sizes: expected int32 or int64");
  }
  if (sizes.dimensions().size() != 1) return invalid("group_sizes: expected a 1-D array [G]");
  desc->num_groups = static_cast<int32_t>(sizes.dimensions()[0]);
  desc->group_sizes.sizes = sizes.untyped_data();
  desc->group_sizes.offsets = nullptr;
  desc->group_sizes.type = type == ffi::DataType::S64 ? GG_INDEX_INT64 : GG_INDEX_INT32;
  return ffi::Error::Success();
}

int index_bytes(const gg_gemm_desc& desc) {
  return desc.group_sizes.type == GG_INDEX_INT64 ? 8 : 4;
}

size_t element_bytes(gg_dtype dtype) { return dtype == GG_DTYPE_FP32 ? 4 : 2; }

ffi::Error status_error(gg_status status) {
  if (status == GG_STATUS_SUCCESS) return ffi::Error::Success();
  const std::string message = std::string("groupgemm: ") + gg_status_string(status) + ": " +
                              gg_last_error();
  return status == GG_STATUS_INVALID_ARGUMENT ? ffi::Error::InvalidArgument(message)
                                              : ffi::Error::Internal(message);
}

ffi::Error cuda_error(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string("groupgemm: ") + what + ": " + cudaGetErrorString(error));
}

// ragged-M: lhs [M, K]; rhs [G, K, N] (rhs_layout 0) or [G, N, K] (1); bias
// [G, N] when has_bias, else ignored; out [M, N].
ffi::Error describe_ragged_m(ffi::AnyBuffer lhs, ffi::AnyBuffer rhs, ffi::AnyBuffer group_sizes,
                             ffi::AnyBuffer bias, ffi::AnyBuffer out, int32_t rhs_layout,
                             int32_t has_bias, float alpha, gg_path path, gg_gemm_desc* desc) {
  *desc = gg_gemm_desc{};
  desc->op = GG_OP_RAGGED_M;
  if (ffi::Error e = sizes_view(group_sizes, desc); e.failure()) return e;
  if (ffi::Error e = view("lhs", lhs, &desc->lhs); e.failure()) return e;
  if (ffi::Error e = view("rhs", rhs, &desc->rhs); e.failure()) return e;
  if (ffi::Error e = view("out", out, &desc->out); e.failure()) return e;
  if (has_bias != 0) {
    if (ffi::Error e = view("bias", bias, &desc->bias); e.failure()) return e;
  }
  if (rhs_layout != GG_LAYOUT_N && rhs_layout != GG_LAYOUT_T) {
    return invalid("rhs_layout: expected 0 ([G, K, N]) or 1 ([G, N, K])");
  }
  desc->lhs_layout = GG_LAYOUT_N;
  desc->rhs_layout = static_cast<gg_layout>(rhs_layout);
  desc->alpha.value = alpha;
  desc->beta.value = 0.0f;
  desc->path = path;
  return ffi::Error::Success();
}

// ragged-K: a [T, P], b [T, Q], out [G, P, Q].
ffi::Error describe_ragged_k(ffi::AnyBuffer a, ffi::AnyBuffer b, ffi::AnyBuffer group_sizes,
                             ffi::AnyBuffer out, float alpha, gg_path path, gg_gemm_desc* desc) {
  *desc = gg_gemm_desc{};
  desc->op = GG_OP_RAGGED_K;
  if (ffi::Error e = sizes_view(group_sizes, desc); e.failure()) return e;
  if (ffi::Error e = view("a", a, &desc->lhs); e.failure()) return e;
  if (ffi::Error e = view("b", b, &desc->rhs); e.failure()) return e;
  if (ffi::Error e = view("out", out, &desc->out); e.failure()) return e;
  desc->lhs_layout = GG_LAYOUT_N;
  desc->rhs_layout = GG_LAYOUT_N;
  desc->alpha.value = alpha;
  desc->beta.value = 0.0f;
  desc->path = path;
  return ffi::Error::Success();
}

// GPU paths want their workspace on 256 bytes; XLA aligns its buffers to
// less, so the Python side asks for this much more and the handler starts
// the library's workspace at the first aligned byte.
constexpr uintptr_t kWorkspaceAlignment = 256;

// Zeroes the workspace and (ragged-M) the output's rows past the last group,
// then runs the product, all on `stream`. The flags word the library leaves
// at the start of its (aligned) workspace is copied to the buffer's first
// word, where the Python side reads it.
ffi::Error run_cuda(const gg_gemm_desc& desc, ffi::AnyBuffer workspace, cudaStream_t stream) {
  void* tail = nullptr;
  int64_t rows = 0, row_bytes = 0;
  if (desc.op == GG_OP_RAGGED_M) {
    tail = desc.out.data;
    rows = desc.out.shape[0];
    row_bytes = desc.out.shape[1] * static_cast<int64_t>(element_bytes(desc.out.dtype));
  }
  char* base = static_cast<char*>(workspace.untyped_data());
  const uintptr_t address = reinterpret_cast<uintptr_t>(base);
  const size_t skip =
      static_cast<size_t>(((address + kWorkspaceAlignment - 1) & ~(kWorkspaceAlignment - 1)) -
                          address);
  if (workspace.size_bytes() < skip + sizeof(uint32_t)) {
    return invalid("the workspace result is too small to align");
  }
  ffi::Error e = cuda_error(
      gg_jax::launch_prepare(desc.group_sizes.sizes, index_bytes(desc), desc.num_groups, tail,
                             rows, row_bytes, base, workspace.size_bytes(), stream),
      "zeroing the workspace and the rows past the last group");
  if (e.failure()) return e;
  e = status_error(gg_grouped_gemm(&desc, base + skip, workspace.size_bytes() - skip,
                                   reinterpret_cast<gg_stream_t>(stream)));
  if (e.failure() || skip == 0) return e;
  return cuda_error(
      cudaMemcpyAsync(base, base + skip, sizeof(uint32_t), cudaMemcpyDeviceToDevice, stream),
      "copying the device flags");
}

// The host twin of run_cuda, on the reference path.
ffi::Error run_cpu(const gg_gemm_desc& desc, ffi::AnyBuffer workspace) {
  std::memset(workspace.untyped_data(), 0, workspace.size_bytes());
  if (desc.op == GG_OP_RAGGED_M) {
    const int64_t rows = desc.out.shape[0];
    const int64_t row_bytes =
        desc.out.shape[1] * static_cast<int64_t>(element_bytes(desc.out.dtype));
    int64_t sum = 0;
    for (int32_t g = 0; g < desc.num_groups; ++g) {
      const int64_t size = desc.group_sizes.type == GG_INDEX_INT64
                               ? static_cast<const int64_t*>(desc.group_sizes.sizes)[g]
                               : static_cast<const int32_t*>(desc.group_sizes.sizes)[g];
      sum += size > 0 ? size : 0;
    }
    const int64_t start = sum < rows ? sum : rows;
    std::memset(static_cast<char*>(desc.out.data) + start * row_bytes, 0,
                static_cast<size_t>((rows - start) * row_bytes));
  }
  return status_error(gg_grouped_gemm(&desc, workspace.untyped_data(), workspace.size_bytes(),
                                      nullptr));
}

ffi::Error ragged_m_cuda(cudaStream_t stream, ffi::AnyBuffer lhs, ffi::AnyBuffer rhs,
                         ffi::AnyBuffer group_sizes, ffi::AnyBuffer bias,
                         ffi::Result<ffi::AnyBuffer> out, ffi::Result<ffi::AnyBuffer> workspace,
                         int32_t rhs_layout, int32_t has_bias, float alpha) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_m(lhs, rhs, group_sizes, bias, *out, rhs_layout, has_bias, alpha,
                                   GG_PATH_AUTO, &desc);
  return e.failure() ? e : run_cuda(desc, *workspace, stream);
}

ffi::Error ragged_m_cpu(ffi::AnyBuffer lhs, ffi::AnyBuffer rhs, ffi::AnyBuffer group_sizes,
                        ffi::AnyBuffer bias, ffi::Result<ffi::AnyBuffer> out,
                        ffi::Result<ffi::AnyBuffer> workspace, int32_t rhs_layout,
                        int32_t has_bias, float alpha) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_m(lhs, rhs, group_sizes, bias, *out, rhs_layout, has_bias, alpha,
                                   GG_PATH_REFERENCE, &desc);
  return e.failure() ? e : run_cpu(desc, *workspace);
}

ffi::Error ragged_k_cuda(cudaStream_t stream, ffi::AnyBuffer a, ffi::AnyBuffer b,
                         ffi::AnyBuffer group_sizes, ffi::Result<ffi::AnyBuffer> out,
                         ffi::Result<ffi::AnyBuffer> workspace, float alpha) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_k(a, b, group_sizes, *out, alpha, GG_PATH_AUTO, &desc);
  return e.failure() ? e : run_cuda(desc, *workspace, stream);
}

ffi::Error ragged_k_cpu(ffi::AnyBuffer a, ffi::AnyBuffer b, ffi::AnyBuffer group_sizes,
                        ffi::Result<ffi::AnyBuffer> out, ffi::Result<ffi::AnyBuffer> workspace,
                        float alpha) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_k(a, b, group_sizes, *out, alpha, GG_PATH_REFERENCE, &desc);
  return e.failure() ? e : run_cpu(desc, *workspace);
}

}  // namespace

// ---- exported handlers -------------------------------------------------------

XLA_FFI_DEFINE_HANDLER_SYMBOL(gg_jax_ragged_m_cuda, ragged_m_cuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()  // lhs
                                  .Arg<ffi::AnyBuffer>()  // rhs
                                  .Arg<ffi::AnyBuffer>()  // group_sizes
                                  .Arg<ffi::AnyBuffer>()  // bias (read when has_bias)
                                  .Ret<ffi::AnyBuffer>()  // out
                                  .Ret<ffi::AnyBuffer>()  // workspace
                                  .Attr<int32_t>("rhs_layout")
                                  .Attr<int32_t>("has_bias")
                                  .Attr<float>("alpha"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(gg_jax_ragged_m_cpu, ragged_m_cpu,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<int32_t>("rhs_layout")
                                  .Attr<int32_t>("has_bias")
                                  .Attr<float>("alpha"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(gg_jax_ragged_k_cuda, ragged_k_cuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()  // a
                                  .Arg<ffi::AnyBuffer>()  // b
                                  .Arg<ffi::AnyBuffer>()  // group_sizes
                                  .Ret<ffi::AnyBuffer>()  // out
                                  .Ret<ffi::AnyBuffer>()  // workspace
                                  .Attr<float>("alpha"),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(gg_jax_ragged_k_cpu, ragged_k_cpu,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<float>("alpha"));

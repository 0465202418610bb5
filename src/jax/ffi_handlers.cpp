// XLA FFI handlers for groupgemm: what JAX's custom calls run.
//
// Six handlers, one per operation and platform, exported as C symbols for
// jax.ffi.register_ffi_target (python/groupgemm/jax/_ffi.py):
//
//   gg_jax_ragged_m_cuda / _cpu   out[g rows] = alpha * lhs[g rows] . op(rhs[g]) (+ bias[g])
//   gg_jax_ragged_k_cuda / _cpu   out[g] = alpha * a[g rows]^T . b[g rows]
//   gg_jax_quantize_cuda / _cpu   grouped quantize: rowwise and/or columnwise, amax
//
// Each builds a gg_gemm_desc or gg_quantize_desc from the buffers XLA hands
// over and calls the C API: this file knows nothing of kernels. Every result
// is allocated by XLA, the workspace included (the last result), so a
// handler allocates nothing, and under a command buffer (CUDA graph) their
// addresses are XLA's to update. The CUDA handlers run on XLA's stream
// (PlatformStream<cudaStream_t>), never synchronize, and are registered
// command-buffer compatible. The ragged-M rows past the last group, which
// jax.lax.ragged_dot defines as zeros, are written by the GEMM launch itself
// (GG_GEMM_ZERO_UNUSED_ROWS). Before the library runs, a memset clears the
// flags word when the caller reads this call's GG_DEVICE_* flags (attribute
// `flags`; the *_with_flags functions). The library's own scratch needs no
// clearing (a launch writes or zeroes what it reads), and flags nobody reads
// may hold anything, so a call without flags launches the library's work and
// nothing else.
// The CPU handlers run the library's reference on host buffers, by the same
// rules.
//
// Shapes and dtypes are checked at trace time by the Python front end, and
// again by the C API here; a failure comes back to XLA as an FFI error
// carrying gg_last_error()'s message.
#include <cuda_runtime_api.h>

#include <cstring>
#include <string>

#include "groupgemm/groupgemm.h"
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

// Fills desc->num_groups and desc->group_sizes (a gg_gemm_desc or a
// gg_quantize_desc).
template <typename Desc>
ffi::Error sizes_view(ffi::AnyBuffer sizes, Desc* desc) {
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
  desc->flags = GG_GEMM_ZERO_UNUSED_ROWS;  // jax.lax.ragged_dot's rows past the groups
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

// Grouped quantize's attributes: each output's format as the C codes
// (gg_dtype, gg_block_scaling, gg_scale_extent; dtype -1: not asked for),
// whether the per-group amax is asked for, and whether the flags are read.
struct QuantizeOptions {
  int32_t rowwise_dtype, rowwise_block_scaling, rowwise_scale_extent;
  int32_t columnwise_dtype, columnwise_block_scaling, columnwise_scale_extent;
  int32_t amax;
  int32_t flags;
};

// One quantized output's buffers; those its format has no use for are
// empty placeholders.
struct QuantizedBuffers {
  ffi::AnyBuffer data, block_scales, scale;
};

// XLA may hand over an empty buffer without an address, while the library
// reads an output's NULL data as "not requested": an aligned stand-in is
// passed, where nothing is written. (Empty block scales may stay NULL.)
void* requested_address(ffi::AnyBuffer buffer) {
  void* data = buffer.untyped_data();
  return data != nullptr ? data : reinterpret_cast<void*>(uintptr_t{256});
}

// fp8 data is held as itself; e2m1 two per byte (the even element in the
// low nibble) as uint8.
bool holds(ffi::DataType type, int32_t dtype) {
  switch (dtype) {
    case GG_DTYPE_E4M3: return type == ffi::DataType::F8E4M3FN;
    case GG_DTYPE_E5M2: return type == ffi::DataType::F8E5M2;
    case GG_DTYPE_E2M1: return type == ffi::DataType::U8;
    default: return false;
  }
}

// A requested output's view. Its shape is the data buffer's in elements
// (e2m1: twice the bytes of the last dimension), which the library checks
// against the input. The block scales and the fp32 scale have no shape in
// a gg_tensor: the front end sizes them by the library's rules
// (core.quantize_shapes, checked against gg_block_scale_shape).
ffi::Error quantized_view(const std::string& name, int32_t dtype, int32_t block_scaling,
                          int32_t scale_extent, const QuantizedBuffers& buffers,
                          gg_tensor* tensor) {
  *tensor = gg_tensor{};
  if (dtype < 0) return ffi::Error::Success();
  if (!holds(buffers.data.element_type(), dtype)) {
    return invalid(name + ": the data's element type does not hold the format's elements");
  }
  const auto dims = buffers.data.dimensions();
  if (dims.size() < 2 || dims.size() > 3) return invalid(name + ": expected rank 2 or 3");
  tensor->data = requested_address(buffers.data);
  tensor->dtype = static_cast<gg_dtype>(dtype);
  tensor->rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) tensor->shape[i] = dims[i];
  if (dtype == GG_DTYPE_E2M1) tensor->shape[tensor->rank - 1] *= 2;
  tensor->block_scaling = static_cast<gg_block_scaling>(block_scaling);
  if (block_scaling != GG_BLOCK_NONE) tensor->block_scales = buffers.block_scales.untyped_data();
  tensor->scale_extent = static_cast<gg_scale_extent>(scale_extent);
  if (scale_extent != GG_SCALE_NONE) {
    tensor->scale = static_cast<float*>(buffers.scale.untyped_data());
  }
  return ffi::Error::Success();
}

// Grouped quantize: x [M, K] ragged by group_sizes, or [G, N, K] stacked
// (group_sizes then an ignored placeholder); amax [G] when asked for.
ffi::Error describe_quantize(ffi::AnyBuffer x, ffi::AnyBuffer group_sizes,
                             const QuantizedBuffers& rowwise, const QuantizedBuffers& columnwise,
                             ffi::AnyBuffer amax, const QuantizeOptions& options, gg_path path,
                             gg_quantize_desc* desc) {
  *desc = gg_quantize_desc{};
  if (ffi::Error e = view("x", x, &desc->input); e.failure()) return e;
  if (desc->input.rank == 3) {
    desc->num_groups = static_cast<int32_t>(desc->input.shape[0]);
  } else {
    if (ffi::Error e = sizes_view(group_sizes, desc); e.failure()) return e;
  }
  ffi::Error e = quantized_view("rowwise", options.rowwise_dtype, options.rowwise_block_scaling,
                                options.rowwise_scale_extent, rowwise, &desc->rowwise);
  if (e.failure()) return e;
  e = quantized_view("columnwise", options.columnwise_dtype, options.columnwise_block_scaling,
                     options.columnwise_scale_extent, columnwise, &desc->columnwise);
  if (e.failure()) return e;
  if (options.amax != 0) desc->amax = static_cast<float*>(amax.untyped_data());
  desc->path = path;
  return ffi::Error::Success();
}

// A ragged-M output's rows past the last group, which the handlers zero
// before the product (jax.lax.ragged_dot defines them as zeros; the library
// never writes them). Empty (data null, no groups) for every other result:
// the quantizer leaves what lies past the last group undefined, as the
// torch front end does.
// The library call of each descriptor.
gg_status run_library(const gg_gemm_desc& desc, void* workspace, size_t bytes,
                      gg_stream_t stream) {
  return gg_grouped_gemm(&desc, workspace, bytes, stream);
}

gg_status run_library(const gg_quantize_desc& desc, void* workspace, size_t bytes,
                      gg_stream_t stream) {
  return gg_grouped_quantize(&desc, workspace, bytes, stream);
}

// GPU paths want their workspace on 256 bytes; XLA aligns its buffers to
// less (128 bytes), so the Python side asks for this much more and the
// handler starts the library's workspace at the first aligned byte.
constexpr uintptr_t kWorkspaceAlignment = 256;

// Runs the descriptor on `stream`. When the flags are read, a memset zeroes
// the flags word first, and the word the library leaves at the start of its
// aligned workspace is copied afterwards to the buffer's first word, where
// the Python side reads it.
template <typename Desc>
ffi::Error run_cuda(const Desc& desc, ffi::AnyBuffer workspace, bool flags, cudaStream_t stream) {
  char* base = static_cast<char*>(workspace.untyped_data());
  const uintptr_t address = reinterpret_cast<uintptr_t>(base);
  const size_t skip =
      static_cast<size_t>(((address + kWorkspaceAlignment - 1) & ~(kWorkspaceAlignment - 1)) -
                          address);
  if (workspace.size_bytes() < skip + sizeof(uint32_t)) {
    return invalid("the workspace result is too small to align");
  }
  char* library_workspace = base + skip;
  const size_t library_bytes = workspace.size_bytes() - skip;
  if (flags) {
    ffi::Error e = cuda_error(cudaMemsetAsync(library_workspace, 0, sizeof(uint32_t), stream),
                              "zeroing the flags");
    if (e.failure()) return e;
  }
  ffi::Error e = status_error(run_library(desc, library_workspace, library_bytes,
                                          reinterpret_cast<gg_stream_t>(stream)));
  if (e.failure() || !flags || skip == 0) return e;
  return cuda_error(
      cudaMemcpyAsync(base, library_workspace, sizeof(uint32_t), cudaMemcpyDeviceToDevice, stream),
      "copying the device flags");
}

// The host twin of run_cuda, on the reference path. The whole workspace is
// cleared and the flags are always left at its start (a host memset costs
// nothing worth saving), so the `flags` attribute changes nothing here.
template <typename Desc>
ffi::Error run_cpu(const Desc& desc, ffi::AnyBuffer workspace) {
  std::memset(workspace.untyped_data(), 0, workspace.size_bytes());
  return status_error(
      run_library(desc, workspace.untyped_data(), workspace.size_bytes(), nullptr));
}

ffi::Error ragged_m_cuda(cudaStream_t stream, ffi::AnyBuffer lhs, ffi::AnyBuffer rhs,
                         ffi::AnyBuffer group_sizes, ffi::AnyBuffer bias,
                         ffi::Result<ffi::AnyBuffer> out, ffi::Result<ffi::AnyBuffer> workspace,
                         int32_t rhs_layout, int32_t has_bias, float alpha, int32_t flags) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_m(lhs, rhs, group_sizes, bias, *out, rhs_layout, has_bias, alpha,
                                   GG_PATH_AUTO, &desc);
  return e.failure() ? e : run_cuda(desc, *workspace, flags != 0, stream);
}

ffi::Error ragged_m_cpu(ffi::AnyBuffer lhs, ffi::AnyBuffer rhs, ffi::AnyBuffer group_sizes,
                        ffi::AnyBuffer bias, ffi::Result<ffi::AnyBuffer> out,
                        ffi::Result<ffi::AnyBuffer> workspace, int32_t rhs_layout,
                        int32_t has_bias, float alpha, int32_t /*flags*/) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_m(lhs, rhs, group_sizes, bias, *out, rhs_layout, has_bias, alpha,
                                   GG_PATH_REFERENCE, &desc);
  return e.failure() ? e : run_cpu(desc, *workspace);
}

ffi::Error ragged_k_cuda(cudaStream_t stream, ffi::AnyBuffer a, ffi::AnyBuffer b,
                         ffi::AnyBuffer group_sizes, ffi::Result<ffi::AnyBuffer> out,
                         ffi::Result<ffi::AnyBuffer> workspace, float alpha, int32_t flags) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_k(a, b, group_sizes, *out, alpha, GG_PATH_AUTO, &desc);
  return e.failure() ? e : run_cuda(desc, *workspace, flags != 0, stream);
}

ffi::Error ragged_k_cpu(ffi::AnyBuffer a, ffi::AnyBuffer b, ffi::AnyBuffer group_sizes,
                        ffi::Result<ffi::AnyBuffer> out, ffi::Result<ffi::AnyBuffer> workspace,
                        float alpha, int32_t /*flags*/) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_k(a, b, group_sizes, *out, alpha, GG_PATH_REFERENCE, &desc);
  return e.failure() ? e : run_cpu(desc, *workspace);
}

ffi::Error quantize_cuda(cudaStream_t stream, ffi::AnyBuffer x, ffi::AnyBuffer group_sizes,
                         ffi::Result<ffi::AnyBuffer> rowwise_data,
                         ffi::Result<ffi::AnyBuffer> rowwise_block_scales,
                         ffi::Result<ffi::AnyBuffer> rowwise_scale,
                         ffi::Result<ffi::AnyBuffer> columnwise_data,
                         ffi::Result<ffi::AnyBuffer> columnwise_block_scales,
                         ffi::Result<ffi::AnyBuffer> columnwise_scale,
                         ffi::Result<ffi::AnyBuffer> amax, ffi::Result<ffi::AnyBuffer> workspace,
                         QuantizeOptions options) {
  gg_quantize_desc desc;
  ffi::Error e = describe_quantize(
      x, group_sizes, {*rowwise_data, *rowwise_block_scales, *rowwise_scale},
      {*columnwise_data, *columnwise_block_scales, *columnwise_scale}, *amax, options,
      GG_PATH_AUTO, &desc);
  return e.failure() ? e : run_cuda(desc, *workspace, options.flags != 0, stream);
}

ffi::Error quantize_cpu(ffi::AnyBuffer x, ffi::AnyBuffer group_sizes,
                        ffi::Result<ffi::AnyBuffer> rowwise_data,
                        ffi::Result<ffi::AnyBuffer> rowwise_block_scales,
                        ffi::Result<ffi::AnyBuffer> rowwise_scale,
                        ffi::Result<ffi::AnyBuffer> columnwise_data,
                        ffi::Result<ffi::AnyBuffer> columnwise_block_scales,
                        ffi::Result<ffi::AnyBuffer> columnwise_scale,
                        ffi::Result<ffi::AnyBuffer> amax, ffi::Result<ffi::AnyBuffer> workspace,
                        QuantizeOptions options) {
  gg_quantize_desc desc;
  ffi::Error e = describe_quantize(
      x, group_sizes, {*rowwise_data, *rowwise_block_scales, *rowwise_scale},
      {*columnwise_data, *columnwise_block_scales, *columnwise_scale}, *amax, options,
      GG_PATH_REFERENCE, &desc);
  return e.failure() ? e : run_cpu(desc, *workspace);
}

}  // namespace

XLA_FFI_REGISTER_STRUCT_ATTR_DECODING(QuantizeOptions,
                                      ffi::StructMember<int32_t>("rowwise_dtype"),
                                      ffi::StructMember<int32_t>("rowwise_block_scaling"),
                                      ffi::StructMember<int32_t>("rowwise_scale_extent"),
                                      ffi::StructMember<int32_t>("columnwise_dtype"),
                                      ffi::StructMember<int32_t>("columnwise_block_scaling"),
                                      ffi::StructMember<int32_t>("columnwise_scale_extent"),
                                      ffi::StructMember<int32_t>("amax"),
                                      ffi::StructMember<int32_t>("flags"));

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
                                  .Attr<float>("alpha")
                                  .Attr<int32_t>("flags"),  // the flags are read
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
                                  .Attr<float>("alpha")
                                  .Attr<int32_t>("flags"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(gg_jax_ragged_k_cuda, ragged_k_cuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()  // a
                                  .Arg<ffi::AnyBuffer>()  // b
                                  .Arg<ffi::AnyBuffer>()  // group_sizes
                                  .Ret<ffi::AnyBuffer>()  // out
                                  .Ret<ffi::AnyBuffer>()  // workspace
                                  .Attr<float>("alpha")
                                  .Attr<int32_t>("flags"),  // the flags are read
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(gg_jax_ragged_k_cpu, ragged_k_cpu,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<float>("alpha")
                                  .Attr<int32_t>("flags"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(gg_jax_quantize_cuda, quantize_cuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()  // x
                                  .Arg<ffi::AnyBuffer>()  // group_sizes (ragged x)
                                  .Ret<ffi::AnyBuffer>()  // rowwise data
                                  .Ret<ffi::AnyBuffer>()  // rowwise block scales
                                  .Ret<ffi::AnyBuffer>()  // rowwise scale
                                  .Ret<ffi::AnyBuffer>()  // columnwise data
                                  .Ret<ffi::AnyBuffer>()  // columnwise block scales
                                  .Ret<ffi::AnyBuffer>()  // columnwise scale
                                  .Ret<ffi::AnyBuffer>()  // amax
                                  .Ret<ffi::AnyBuffer>()  // workspace
                                  .Attrs<QuantizeOptions>(),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(gg_jax_quantize_cpu, quantize_cpu,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attrs<QuantizeOptions>());

// XLA FFI handlers for groupgemm: what JAX's custom calls run.
//
// Six handlers, one per operation and platform, exported as C symbols for
// jax.ffi.register_ffi_target (python/groupgemm/jax/_ffi.py):
//
//   gg_jax_ragged_m_cuda / _cpu   out[g rows] = alpha_g * lhs[g rows] . op(rhs[g]) (+ bias[g])
//   gg_jax_ragged_k_cuda / _cpu   out[g] = alpha_g * a[g rows]^T . b[g rows]
//   gg_jax_quantize_cuda / _cpu   grouped quantize: rowwise and/or columnwise, amax
//
// A GEMM operand comes as three buffers, its data, block scales and fp32
// scale (the last two empty for a 16-bit operand), with its block scaling
// and scale extent as attributes; its element type is its data's (fp8 as
// itself, e2m1 two per byte as uint8). Layouts are the C layouts of the
// stored buffers: the front end has worked them out (a columnwise quantized
// copy is stored transposed). alpha is a host value, or an fp32 buffer [G].
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

ffi::Error invalid(const std::string& message) {
  return ffi::Error::InvalidArgument("groupgemm: " + message);
}

// The element type a buffer holds: 16-bit and fp32 as themselves, fp8 as
// itself, e2m1 two per byte (the even element in the low nibble) as uint8.
bool to_dtype(ffi::DataType type, gg_dtype* out) {
  switch (type) {
    case ffi::DataType::BF16: *out = GG_DTYPE_BF16; return true;
    case ffi::DataType::F16: *out = GG_DTYPE_FP16; return true;
    case ffi::DataType::F32: *out = GG_DTYPE_FP32; return true;
    case ffi::DataType::F8E4M3FN: *out = GG_DTYPE_E4M3; return true;
    case ffi::DataType::F8E5M2: *out = GG_DTYPE_E5M2; return true;
    case ffi::DataType::U8: *out = GG_DTYPE_E2M1; return true;
    default: return false;
  }
}

// tensor's rank and shape, in elements, from `dims`, the buffer's: e2m1
// holds two elements per byte of the last dimension.
ffi::Error fill_shape(const std::string& name, ffi::AnyBuffer::Dimensions dims,
                      gg_tensor* tensor) {
  if (dims.size() < 2 || dims.size() > 3) return invalid(name + ": expected rank 2 or 3");
  tensor->rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) tensor->shape[i] = dims[i];
  if (tensor->dtype == GG_DTYPE_E2M1) tensor->shape[tensor->rank - 1] *= 2;
  return ffi::Error::Success();
}

// A packed row-major view of `buffer` (strides 0: packed): the output, the
// bias, the input of a quantize.
ffi::Error view(const std::string& name, ffi::AnyBuffer buffer, gg_tensor* tensor) {
  *tensor = gg_tensor{};
  const bool plain = to_dtype(buffer.element_type(), &tensor->dtype) &&
                     (tensor->dtype == GG_DTYPE_BF16 || tensor->dtype == GG_DTYPE_FP16 ||
                      tensor->dtype == GG_DTYPE_FP32);
  if (!plain) return invalid(name + ": element type is not bf16, fp16 or fp32");
  tensor->data = buffer.untyped_data();
  return fill_shape(name, buffer.dimensions(), tensor);
}

// A quantized array's buffers (a GEMM operand, or a quantize output): its
// data, block scales and fp32 scale. Those its format has no use for are
// empty placeholders, and so are both scales of a 16-bit operand.
struct OperandBuffers {
  ffi::AnyBuffer data, block_scales, scale;
};

// The block scales and the fp32 scale have no shape in a gg_tensor: the
// front end sizes them by the library's rules (core.quantize_arrays).
void fill_scales(int32_t block_scaling, int32_t scale_extent, const OperandBuffers& buffers,
                 gg_tensor* tensor) {
  tensor->block_scaling = static_cast<gg_block_scaling>(block_scaling);
  if (block_scaling != GG_BLOCK_NONE) tensor->block_scales = buffers.block_scales.untyped_data();
  tensor->scale_extent = static_cast<gg_scale_extent>(scale_extent);
  if (scale_extent != GG_SCALE_NONE) {
    tensor->scale = static_cast<float*>(buffers.scale.untyped_data());
  }
}

// A GEMM operand as stored: 16-bit, or quantized in the format its data's
// element type and the two scaling attributes name. The library checks the
// pairing of the two operands' formats.
ffi::Error operand_view(const std::string& name, const OperandBuffers& buffers,
                        int32_t block_scaling, int32_t scale_extent, gg_tensor* tensor) {
  *tensor = gg_tensor{};
  if (!to_dtype(buffers.data.element_type(), &tensor->dtype)) {
    return invalid(name + ": element type is not bf16, fp16, fp32, fp8 or packed e2m1 (uint8)");
  }
  tensor->data = buffers.data.untyped_data();
  fill_scales(block_scaling, scale_extent, buffers, tensor);
  return fill_shape(name, buffers.data.dimensions(), tensor);
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
  switch (status) {
    case GG_STATUS_INVALID_ARGUMENT: return ffi::Error::InvalidArgument(message);
    case GG_STATUS_NOT_SUPPORTED: return ffi::Error(ffi::ErrorCode::kUnimplemented, message);
    default: return ffi::Error::Internal(message);
  }
}

ffi::Error cuda_error(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return ffi::Error::Success();
  return ffi::Error::Internal(std::string("groupgemm: ") + what + ": " + cudaGetErrorString(error));
}

// A product's attributes: each operand's scaling (gg_block_scaling,
// gg_scale_extent; 0 for a 16-bit operand) and C layout, whether there is a
// bias (ragged-M; 0 for ragged-K), alpha (the host value, or per_group_alpha:
// the alpha buffer [G]), and whether the flags are read.
struct GemmOptions {
  int32_t lhs_block_scaling, lhs_scale_extent, lhs_layout;
  int32_t rhs_block_scaling, rhs_scale_extent, rhs_layout;
  int32_t has_bias;
  int32_t per_group_alpha;
  float alpha;
  int32_t flags;
};

// What both ops share: the sizes, the operands, the output, alpha.
ffi::Error describe_gemm(gg_op op, const char* lhs_name, const OperandBuffers& lhs,
                         const char* rhs_name, const OperandBuffers& rhs,
                         ffi::AnyBuffer group_sizes, ffi::AnyBuffer alpha, ffi::AnyBuffer out,
                         const GemmOptions& options, gg_path path, gg_gemm_desc* desc) {
  *desc = gg_gemm_desc{};
  desc->op = op;
  if (ffi::Error e = sizes_view(group_sizes, desc); e.failure()) return e;
  ffi::Error e = operand_view(lhs_name, lhs, options.lhs_block_scaling, options.lhs_scale_extent,
                              &desc->lhs);
  if (e.failure()) return e;
  e = operand_view(rhs_name, rhs, options.rhs_block_scaling, options.rhs_scale_extent, &desc->rhs);
  if (e.failure()) return e;
  e = view("out", out, &desc->out);
  if (e.failure()) return e;
  desc->lhs_layout = static_cast<gg_layout>(options.lhs_layout);
  desc->rhs_layout = static_cast<gg_layout>(options.rhs_layout);
  if (options.per_group_alpha != 0) {
    const auto dims = alpha.dimensions();
    if (alpha.element_type() != ffi::DataType::F32 || dims.size() != 1 ||
        dims[0] != desc->num_groups) {
      return invalid("alpha: expected an fp32 array [G]");
    }
    desc->alpha.per_group = static_cast<const float*>(alpha.untyped_data());
  } else {
    desc->alpha.value = options.alpha;
  }
  desc->beta.value = 0.0f;
  desc->path = path;
  return ffi::Error::Success();
}

// ragged-M: lhs [M, K]; rhs [G, K, N] (rhs_layout N) or [G, N, K] (T); bias
// [G, N] when has_bias, else ignored; out [M, N].
ffi::Error describe_ragged_m(const OperandBuffers& lhs, const OperandBuffers& rhs,
                             ffi::AnyBuffer group_sizes, ffi::AnyBuffer bias, ffi::AnyBuffer alpha,
                             ffi::AnyBuffer out, const GemmOptions& options, gg_path path,
                             gg_gemm_desc* desc) {
  ffi::Error e = describe_gemm(GG_OP_RAGGED_M, "lhs", lhs, "rhs", rhs, group_sizes, alpha, out,
                               options, path, desc);
  if (e.failure()) return e;
  if (options.has_bias != 0) {
    e = view("bias", bias, &desc->bias);
    if (e.failure()) return e;
  }
  desc->flags = GG_GEMM_ZERO_UNUSED_ROWS;  // jax.lax.ragged_dot's rows past the groups
  return ffi::Error::Success();
}

// ragged-K: a [M, P] (lhs_layout N) or [P, M] (T), b [M, Q] (N) or [Q, M]
// (T), out [G, P, Q].
ffi::Error describe_ragged_k(const OperandBuffers& a, const OperandBuffers& b,
                             ffi::AnyBuffer group_sizes, ffi::AnyBuffer alpha, ffi::AnyBuffer out,
                             const GemmOptions& options, gg_path path, gg_gemm_desc* desc) {
  return describe_gemm(GG_OP_RAGGED_K, "a", a, "b", b, group_sizes, alpha, out, options, path,
                       desc);
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

// XLA may hand over an empty buffer without an address, while the library
// reads an output's NULL data as "not requested": an aligned stand-in is
// passed, where nothing is written. (Empty block scales may stay NULL.)
void* requested_address(ffi::AnyBuffer buffer) {
  void* data = buffer.untyped_data();
  return data != nullptr ? data : reinterpret_cast<void*>(uintptr_t{256});
}

// A requested output's view. Its shape is the data buffer's in elements,
// which the library checks against the input.
ffi::Error quantized_view(const std::string& name, int32_t dtype, int32_t block_scaling,
                          int32_t scale_extent, const OperandBuffers& buffers,
                          gg_tensor* tensor) {
  *tensor = gg_tensor{};
  if (dtype < 0) return ffi::Error::Success();
  gg_dtype held;
  if (!to_dtype(buffers.data.element_type(), &held) || held != dtype) {
    return invalid(name + ": the data's element type does not hold the format's elements");
  }
  tensor->data = requested_address(buffers.data);
  tensor->dtype = held;
  fill_scales(block_scaling, scale_extent, buffers, tensor);
  return fill_shape(name, buffers.data.dimensions(), tensor);
}

// Grouped quantize: x [M, K] ragged by group_sizes, or [G, N, K] stacked
// (group_sizes then an ignored placeholder); amax [G] when asked for.
ffi::Error describe_quantize(ffi::AnyBuffer x, ffi::AnyBuffer group_sizes,
                             const OperandBuffers& rowwise, const OperandBuffers& columnwise,
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

ffi::Error ragged_m_cuda(cudaStream_t stream, ffi::AnyBuffer lhs, ffi::AnyBuffer lhs_block_scales,
                         ffi::AnyBuffer lhs_scale, ffi::AnyBuffer rhs,
                         ffi::AnyBuffer rhs_block_scales, ffi::AnyBuffer rhs_scale,
                         ffi::AnyBuffer group_sizes, ffi::AnyBuffer bias, ffi::AnyBuffer alpha,
                         ffi::Result<ffi::AnyBuffer> out, ffi::Result<ffi::AnyBuffer> workspace,
                         GemmOptions options) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_m({lhs, lhs_block_scales, lhs_scale},
                                   {rhs, rhs_block_scales, rhs_scale}, group_sizes, bias, alpha,
                                   *out, options, GG_PATH_AUTO, &desc);
  return e.failure() ? e : run_cuda(desc, *workspace, options.flags != 0, stream);
}

ffi::Error ragged_m_cpu(ffi::AnyBuffer lhs, ffi::AnyBuffer lhs_block_scales,
                        ffi::AnyBuffer lhs_scale, ffi::AnyBuffer rhs,
                        ffi::AnyBuffer rhs_block_scales, ffi::AnyBuffer rhs_scale,
                        ffi::AnyBuffer group_sizes, ffi::AnyBuffer bias, ffi::AnyBuffer alpha,
                        ffi::Result<ffi::AnyBuffer> out, ffi::Result<ffi::AnyBuffer> workspace,
                        GemmOptions options) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_m({lhs, lhs_block_scales, lhs_scale},
                                   {rhs, rhs_block_scales, rhs_scale}, group_sizes, bias, alpha,
                                   *out, options, GG_PATH_REFERENCE, &desc);
  return e.failure() ? e : run_cpu(desc, *workspace);
}

ffi::Error ragged_k_cuda(cudaStream_t stream, ffi::AnyBuffer a, ffi::AnyBuffer a_block_scales,
                         ffi::AnyBuffer a_scale, ffi::AnyBuffer b, ffi::AnyBuffer b_block_scales,
                         ffi::AnyBuffer b_scale, ffi::AnyBuffer group_sizes, ffi::AnyBuffer alpha,
                         ffi::Result<ffi::AnyBuffer> out, ffi::Result<ffi::AnyBuffer> workspace,
                         GemmOptions options) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_k({a, a_block_scales, a_scale}, {b, b_block_scales, b_scale},
                                   group_sizes, alpha, *out, options, GG_PATH_AUTO, &desc);
  return e.failure() ? e : run_cuda(desc, *workspace, options.flags != 0, stream);
}

ffi::Error ragged_k_cpu(ffi::AnyBuffer a, ffi::AnyBuffer a_block_scales, ffi::AnyBuffer a_scale,
                        ffi::AnyBuffer b, ffi::AnyBuffer b_block_scales, ffi::AnyBuffer b_scale,
                        ffi::AnyBuffer group_sizes, ffi::AnyBuffer alpha,
                        ffi::Result<ffi::AnyBuffer> out, ffi::Result<ffi::AnyBuffer> workspace,
                        GemmOptions options) {
  gg_gemm_desc desc;
  ffi::Error e = describe_ragged_k({a, a_block_scales, a_scale}, {b, b_block_scales, b_scale},
                                   group_sizes, alpha, *out, options, GG_PATH_REFERENCE, &desc);
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

XLA_FFI_REGISTER_STRUCT_ATTR_DECODING(GemmOptions,
                                      ffi::StructMember<int32_t>("lhs_block_scaling"),
                                      ffi::StructMember<int32_t>("lhs_scale_extent"),
                                      ffi::StructMember<int32_t>("lhs_layout"),
                                      ffi::StructMember<int32_t>("rhs_block_scaling"),
                                      ffi::StructMember<int32_t>("rhs_scale_extent"),
                                      ffi::StructMember<int32_t>("rhs_layout"),
                                      ffi::StructMember<int32_t>("has_bias"),
                                      ffi::StructMember<int32_t>("per_group_alpha"),
                                      ffi::StructMember<float>("alpha"),
                                      ffi::StructMember<int32_t>("flags"));

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
                                  .Arg<ffi::AnyBuffer>()  // lhs block scales
                                  .Arg<ffi::AnyBuffer>()  // lhs fp32 scale
                                  .Arg<ffi::AnyBuffer>()  // rhs
                                  .Arg<ffi::AnyBuffer>()  // rhs block scales
                                  .Arg<ffi::AnyBuffer>()  // rhs fp32 scale
                                  .Arg<ffi::AnyBuffer>()  // group_sizes
                                  .Arg<ffi::AnyBuffer>()  // bias (read when has_bias)
                                  .Arg<ffi::AnyBuffer>()  // alpha (read when per_group_alpha)
                                  .Ret<ffi::AnyBuffer>()  // out
                                  .Ret<ffi::AnyBuffer>()  // workspace
                                  .Attrs<GemmOptions>(),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(gg_jax_ragged_m_cpu, ragged_m_cpu,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attrs<GemmOptions>());

XLA_FFI_DEFINE_HANDLER_SYMBOL(gg_jax_ragged_k_cuda, ragged_k_cuda,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<cudaStream_t>>()
                                  .Arg<ffi::AnyBuffer>()  // a
                                  .Arg<ffi::AnyBuffer>()  // a block scales
                                  .Arg<ffi::AnyBuffer>()  // a fp32 scale
                                  .Arg<ffi::AnyBuffer>()  // b
                                  .Arg<ffi::AnyBuffer>()  // b block scales
                                  .Arg<ffi::AnyBuffer>()  // b fp32 scale
                                  .Arg<ffi::AnyBuffer>()  // group_sizes
                                  .Arg<ffi::AnyBuffer>()  // alpha (read when per_group_alpha)
                                  .Ret<ffi::AnyBuffer>()  // out
                                  .Ret<ffi::AnyBuffer>()  // workspace
                                  .Attrs<GemmOptions>(),
                              {ffi::Traits::kCmdBufferCompatible});

XLA_FFI_DEFINE_HANDLER_SYMBOL(gg_jax_ragged_k_cpu, ragged_k_cpu,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attrs<GemmOptions>());

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

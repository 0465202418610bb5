// The gg_* entry points of include/groupgemm/groupgemm.h.
//
// Every entry point that returns a gg_status clears gg_last_error() first and
// lets no C++ exception out (the caller is C). A grouped GEMM goes through
// the same four steps whatever the path: validate (a normalized copy), choose
// the path (gemm_paths.h), check what the path needs (operand alignment,
// workspace bytes), run. The host reads device memory in one place only:
// gg_check, which copies the flags word back and clears it.
//
// Grouped quantize goes through the same steps; every GPU path (and auto)
// runs the one quantize kernel (kernels/quantize/), so choosing among the GPU
// rows of the GEMM path table only decides whether the device can run it.
#include <cuda_runtime_api.h>
#include <stdint.h>

#include <exception>
#include <string>
#include <new>

#include "api/describe.h"
#include "api/error.h"
#include "api/field_checks.h"
#include "api/gemm_paths.h"
#include "api/log.h"
#include "api/names.h"
#include "api/validate.h"
#include "common/groups.h"
#include "common/workspace.h"
#include "formats/block_quant.h"
#include "kernels/paths.h"
#include "groupgemm/groupgemm.h"
#include "reference/reference.h"

namespace gg::api {
namespace {

template <class Body>
gg_status guarded(Body&& body) noexcept {
  clear_error();
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(GG_STATUS_INTERNAL_ERROR, "out of host memory");
  } catch (const std::exception& error) {
    return fail(GG_STATUS_INTERNAL_ERROR, "internal error: %s", error.what());
  } catch (...) {
    return fail(GG_STATUS_INTERNAL_ERROR, "internal error: unknown exception");
  }
}

gg_status check_workspace(void* workspace, size_t workspace_bytes, size_t needed, size_t alignment,
                          const char* path) {
  if (workspace == nullptr) {
    return fail(GG_STATUS_WORKSPACE_TOO_SMALL,
                "workspace is NULL; path %s needs %zu bytes for this problem", path, needed);
  }
  if (workspace_bytes < needed) {
    return fail(GG_STATUS_WORKSPACE_TOO_SMALL,
                "workspace_bytes (%zu) is too small; path %s needs %zu bytes for this problem",
                workspace_bytes, path, needed);
  }
  const std::string why = text_printf("on path %s", path);
  return check_aligned("workspace", workspace, alignment, why.c_str());
}

// A path that fails without a message still leaves one behind.
gg_status ran(gg_status status, const char* path) {
  if (status != GG_STATUS_SUCCESS && last_error()[0] == '\0') {
    return fail(status, "path %s failed: %s", path, gg_status_string(status));
  }
  return status;
}

struct GemmCall {
  gg_gemm_desc desc;  // normalized
  const GemmPath* path = nullptr;
  size_t workspace_bytes = 0;
};

gg_status prepare_gemm(const gg_gemm_desc* desc, GemmCall* call) {
  GG_RETURN_IF_ERROR(validate_gemm(desc, &call->desc));
  const std::vector<GemmPath>& paths = gemm_paths();
  if (call->desc.path == GG_PATH_AUTO) {
    GG_RETURN_IF_ERROR(choose_auto_path(call->desc, paths, device_status(-1), &call->path));
  } else {
    GG_RETURN_IF_ERROR(choose_requested_path(call->desc, paths, &call->path));
  }
  GG_RETURN_IF_ERROR(
      check_operand_alignment(call->desc, call->path->operand_alignment,
                              call->path->quantized_operand_alignment, call->path->name));
  call->workspace_bytes = kWorkspaceScratchOffset + call->path->scratch_bytes(call->desc);
  return GG_STATUS_SUCCESS;
}

gg_status run_gemm(const gg_gemm_desc* desc, void* workspace, size_t workspace_bytes,
                   cudaStream_t stream) {
  GemmCall call;
  GG_RETURN_IF_ERROR(prepare_gemm(desc, &call));
  const GemmPath& path = *call.path;
  GG_RETURN_IF_ERROR(check_workspace(workspace, workspace_bytes, call.workspace_bytes,
                                     path.workspace_alignment, path.name));
  if (call.desc.path != GG_PATH_AUTO) {  // AUTO chose among the paths that run here
    std::string why_not;
    if (!runs_on(path, device_status(-1), &why_not)) {
      return fail(GG_STATUS_NO_DEVICE, "%s", why_not.c_str());
    }
  }
  if (log_enabled()) log_line(describe_gemm(call.desc) + " -> " + path.name);
  return ran(path.run(call.desc, workspace, workspace_bytes, stream), path.name);
}

struct QuantizeCall {
  gg_quantize_desc desc;  // normalized
  const GemmPath* path = nullptr;  // the row whose device rule applies
  size_t workspace_bytes = 0;
};

// GG_PATH_AUTO takes the first GPU row that runs on the current device (the
// kernel is the same for all); an explicit path is taken as asked.
gg_status prepare_quantize(const gg_quantize_desc* desc, QuantizeCall* call) {
  GG_RETURN_IF_ERROR(validate_quantize(desc, &call->desc));
  const std::vector<GemmPath>& paths = gemm_paths();
  if (call->desc.path == GG_PATH_REFERENCE) {
    call->path = find_path(paths, GG_PATH_REFERENCE);
    call->workspace_bytes = kWorkspaceScratchOffset;
    return GG_STATUS_SUCCESS;
  }
  if (call->desc.path == GG_PATH_AUTO) {
    const DeviceStatus device = device_status(-1);
    if (!device.usable) {
      return fail(GG_STATUS_NO_DEVICE,
                  "GG_PATH_AUTO found no GPU (%s); GG_PATH_REFERENCE runs it on the CPU, with "
                  "host memory",
                  device.why_not.c_str());
    }
    std::string not_running;
    for (const GemmPath& path : paths) {
      std::string why_not;
      if (!path.on_gpu) continue;
      if (runs_on(path, device, &why_not)) {
        call->path = &path;
        break;
      }
      not_running += (not_running.empty() ? "" : "; ") + why_not;
    }
    if (call->path == nullptr) {
      return fail(GG_STATUS_NO_DEVICE, "no GPU path of this build runs on device %d (%s): %s",
                  device.info.ordinal, device.info.name.c_str(), not_running.c_str());
    }
  } else {
    call->path = find_path(paths, call->desc.path);
    if (call->path == nullptr) {
      return fail(GG_STATUS_NOT_SUPPORTED, "path %s is not part of this build",
                  path_name(call->desc.path));
    }
  }
  call->workspace_bytes = kWorkspaceScratchOffset + gpu_quantize_scratch_bytes(call->desc);
  return GG_STATUS_SUCCESS;
}

gg_status run_quantize(const gg_quantize_desc* desc, void* workspace, size_t workspace_bytes,
                       cudaStream_t stream) {
  QuantizeCall call;
  GG_RETURN_IF_ERROR(prepare_quantize(desc, &call));
  const GemmPath& path = *call.path;
  GG_RETURN_IF_ERROR(check_workspace(workspace, workspace_bytes, call.workspace_bytes,
                                     path.workspace_alignment, path.name));
  if (log_enabled()) log_line(describe_quantize(call.desc) + " -> " + path.name);
  if (!path.on_gpu) {
    ref::grouped_quantize(call.desc, workspace_flags(workspace));
    return GG_STATUS_SUCCESS;
  }
  std::string why_not;
  if (!runs_on(path, device_status(-1), &why_not)) {
    return fail(GG_STATUS_NO_DEVICE, "%s", why_not.c_str());
  }
  return ran(gpu_quantize_run(call.desc, workspace, stream), path.name);
}

gg_status cuda_failed(cudaError_t error, const char* what) {
  cudaGetLastError();  // reported here; later calls should not see it again
  return fail(GG_STATUS_CUDA_ERROR, "gg_check: %s failed: %s", what, cudaGetErrorString(error));
}

// Copies the flags word back and clears it, in stream order, then waits.
gg_status check_device_flags(void* workspace, cudaStream_t stream, uint32_t* flags) {
  const DeviceStatus device = device_status(-1);
  if (!device.usable) return fail(GG_STATUS_NO_DEVICE, "gg_check: %s", device.why_not.c_str());
  uint32_t* device_flags = workspace_flags(workspace);
  uint32_t host_flags = 0;
  cudaError_t error =
      cudaMemcpyAsync(&host_flags, device_flags, sizeof host_flags, cudaMemcpyDeviceToHost, stream);
  if (error != cudaSuccess) return cuda_failed(error, "reading the workspace flags");
  error = cudaMemsetAsync(device_flags, 0, sizeof host_flags, stream);
  if (error != cudaSuccess) return cuda_failed(error, "clearing the workspace flags");
  error = cudaStreamSynchronize(stream);
  if (error != cudaSuccess) return cuda_failed(error, "cudaStreamSynchronize");
  *flags = host_flags;
  return GG_STATUS_SUCCESS;
}

gg_status path_available(gg_path id, int device, int* available) {
  if (available == nullptr) return fail(GG_STATUS_INVALID_ARGUMENT, "available is NULL");
  *available = 0;
  if (path_name(id) == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "path is not a gg_path (got %d)", static_cast<int>(id));
  }
  if (id == GG_PATH_REFERENCE) {
    *available = 1;
    return GG_STATUS_SUCCESS;
  }
  const DeviceStatus status = device_status(device);
  std::string reasons;
  for (const GemmPath& path : gemm_paths()) {
    if (!path.on_gpu || (id != GG_PATH_AUTO && id != path.id)) continue;
    std::string why_not;
    if (runs_on(path, status, &why_not)) {
      *available = 1;
      return GG_STATUS_SUCCESS;
    }
    // A missing device is one reason for every path: say it once.
    if (reasons.find(why_not) == std::string::npos) {
      reasons += (reasons.empty() ? "" : "; ") + why_not;
    }
  }
  set_error(reasons.empty() ? text_printf("path %s is not part of this build", path_name(id))
                            : reasons);
  return GG_STATUS_SUCCESS;
}

gg_status block_scale_shape(gg_block_scaling scaling, int64_t rows, int64_t cols, int block_dim,
                            int ragged, int32_t num_groups, int64_t out[2]) {
  if (out == nullptr) return fail(GG_STATUS_INVALID_ARGUMENT, "out is NULL");
  if (scaling_name(scaling) == nullptr || scaling == GG_BLOCK_NONE) {
    return fail(GG_STATUS_INVALID_ARGUMENT,
                "scaling must be a block scaling other than GG_BLOCK_NONE (got %d)",
                static_cast<int>(scaling));
  }
  if (rows < 0 || cols < 0) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "rows (%lld) and cols (%lld) must be >= 0", ll(rows),
                ll(cols));
  }
  // No tensor holds more (field_checks.cpp), and the block counts below
  // would overflow near INT64_MAX.
  constexpr int64_t kMaxExtent = int64_t{1} << 61;
  if (rows > kMaxExtent || cols > kMaxExtent) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "rows (%lld) and cols (%lld) must be at most 2^61",
                ll(rows), ll(cols));
  }
  if (block_dim != 0 && block_dim != 1) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "block_dim must be 0 or 1 (got %d)", block_dim);
  }
  if (ragged != 0 && ragged != 1) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "ragged must be 0 or 1 (got %d)", ragged);
  }
  if (ragged == 1 && num_groups <= 0) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "num_groups must be > 0 when ragged (got %d)",
                num_groups);
  }
  if (scaling == GG_BLOCK_ROWWISE) {
    // One block along the whole dimension; along a ragged one, one per group.
    const int64_t blocks = ragged == 1 ? num_groups : 1;
    out[0] = block_dim == 0 ? blocks : rows;
    out[1] = block_dim == 0 ? cols : blocks;
    return GG_STATUS_SUCCESS;
  }
  const int64_t block = fmt::block_size(scaling);
  if (scaling == GG_BLOCK_128X128) {
    if (ragged == 1) {
      return fail(GG_STATUS_INVALID_ARGUMENT,
                  "128x128 blocks cannot run along a ragged dimension (they are for stacked "
                  "weights)");
    }
    out[0] = blocks_of(rows, block);
    out[1] = blocks_of(cols, block);
    return GG_STATUS_SUCCESS;
  }
  const int64_t length = block_dim == 0 ? rows : cols;
  const int64_t blocks =
      ragged == 1 ? ragged_block_capacity(length, block, num_groups) : blocks_of(length, block);
  out[0] = block_dim == 0 ? blocks : rows;
  out[1] = block_dim == 0 ? cols : blocks;
  return GG_STATUS_SUCCESS;
}

gg_status gemm_workspace_size(const gg_gemm_desc* desc, size_t* bytes) {
  if (bytes == nullptr) return fail(GG_STATUS_INVALID_ARGUMENT, "bytes is NULL");
  GemmCall call;
  GG_RETURN_IF_ERROR(prepare_gemm(desc, &call));
  *bytes = call.workspace_bytes;
  return GG_STATUS_SUCCESS;
}

gg_status quantize_workspace_size(const gg_quantize_desc* desc, size_t* bytes) {
  if (bytes == nullptr) return fail(GG_STATUS_INVALID_ARGUMENT, "bytes is NULL");
  QuantizeCall call;
  GG_RETURN_IF_ERROR(prepare_quantize(desc, &call));
  *bytes = call.workspace_bytes;
  return GG_STATUS_SUCCESS;
}

gg_status check_flags(void* workspace, gg_path path, cudaStream_t stream, uint32_t* flags) {
  if (flags == nullptr) return fail(GG_STATUS_INVALID_ARGUMENT, "flags is NULL");
  if (path_name(path) == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "path is not a gg_path (got %d)",
                static_cast<int>(path));
  }
  if (workspace == nullptr) return fail(GG_STATUS_INVALID_ARGUMENT, "workspace is NULL");
  if (path != GG_PATH_REFERENCE) return check_device_flags(workspace, stream, flags);
  GG_RETURN_IF_ERROR(check_aligned("workspace", workspace, alignof(uint32_t),
                                   "the flags word, on path reference"));
  *flags = *workspace_flags(workspace);
  *workspace_flags(workspace) = 0;
  return GG_STATUS_SUCCESS;
}

}  // namespace
}  // namespace gg::api

extern "C" {

const char* gg_version_string(void) { return GG_VERSION_STRING; }

int gg_version(void) {
  return GG_VERSION_MAJOR * 10000 + GG_VERSION_MINOR * 100 + GG_VERSION_PATCH;
}

const char* gg_status_string(gg_status status) {
  switch (status) {
    case GG_STATUS_SUCCESS:
      return "success";
    case GG_STATUS_INVALID_ARGUMENT:
      return "invalid argument";
    case GG_STATUS_NOT_SUPPORTED:
      return "not supported";
    case GG_STATUS_WORKSPACE_TOO_SMALL:
      return "workspace too small";
    case GG_STATUS_NO_DEVICE:
      return "no device";
    case GG_STATUS_CUDA_ERROR:
      return "CUDA error";
    case GG_STATUS_INTERNAL_ERROR:
      return "internal error";
  }
  return "unknown status";
}

// Neither this nor gg_status_string clears the message: both are read in the
// same expression that reports a failure.
const char* gg_last_error(void) { return gg::api::last_error(); }

gg_status gg_path_available(gg_path path, int device, int* available) {
  return gg::api::guarded([&] { return gg::api::path_available(path, device, available); });
}

gg_status gg_block_scale_shape(gg_block_scaling scaling, int64_t rows, int64_t cols, int block_dim,
                               int ragged, int32_t num_groups, int64_t out[2]) {
  return gg::api::guarded([&] {
    return gg::api::block_scale_shape(scaling, rows, cols, block_dim, ragged, num_groups, out);
  });
}

gg_status gg_grouped_gemm_workspace_size(const gg_gemm_desc* desc, size_t* bytes) {
  return gg::api::guarded([&] { return gg::api::gemm_workspace_size(desc, bytes); });
}

gg_status gg_grouped_gemm(const gg_gemm_desc* desc, void* workspace, size_t workspace_bytes,
                          gg_stream_t stream) {
  return gg::api::guarded(
      [&] { return gg::api::run_gemm(desc, workspace, workspace_bytes, stream); });
}

gg_status gg_grouped_quantize_workspace_size(const gg_quantize_desc* desc, size_t* bytes) {
  return gg::api::guarded([&] { return gg::api::quantize_workspace_size(desc, bytes); });
}

gg_status gg_grouped_quantize(const gg_quantize_desc* desc, void* workspace, size_t workspace_bytes,
                              gg_stream_t stream) {
  return gg::api::guarded(
      [&] { return gg::api::run_quantize(desc, workspace, workspace_bytes, stream); });
}

gg_status gg_check(void* workspace, gg_path path, gg_stream_t stream, uint32_t* flags) {
  return gg::api::guarded([&] { return gg::api::check_flags(workspace, path, stream, flags); });
}

}  // extern "C"

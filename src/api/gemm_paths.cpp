// See gemm_paths.h.
#include "api/gemm_paths.h"

#include <stdint.h>

#include "api/describe.h"
#include "api/error.h"
#include "api/names.h"
#include "common/workspace.h"
#include "kernels/paths.h"
#include "reference/reference.h"

namespace gg::api {
namespace {

bool reference_supports(const gg_gemm_desc&, std::string*) { return true; }

size_t reference_scratch_bytes(const gg_gemm_desc&) { return 0; }

// The reference reads host memory, so it checks what no GPU path can: each
// of a pointer array's G pointers (its matrices', and its block scales').
gg_status check_pointer_arrays(const gg_gemm_desc& desc) {
  const struct {
    const char* name;
    const gg_tensor& tensor;
  } tensors[] = {{"lhs", desc.lhs}, {"rhs", desc.rhs}, {"out", desc.out}};
  for (const auto& [name, tensor] : tensors) {
    if ((tensor.flags & GG_TENSOR_POINTER_ARRAY) == 0) continue;
    const struct {
      const char* field;
      const void* array;
    } arrays[] = {{"data", tensor.data}, {"block_scales", tensor.block_scales}};
    for (const auto& [field, array] : arrays) {
      if (array == nullptr) continue;
      for (int32_t g = 0; g < desc.num_groups; ++g) {
        if (static_cast<void* const*>(array)[g] == nullptr) {
          return fail(GG_STATUS_INVALID_ARGUMENT,
                      "desc->%s.%s[%d] is NULL: a pointer array holds a matrix for every group",
                      name, field, g);
        }
      }
    }
  }
  return GG_STATUS_SUCCESS;
}

gg_status reference_run(const gg_gemm_desc& desc, void* workspace, size_t, cudaStream_t) {
  GG_RETURN_IF_ERROR(check_pointer_arrays(desc));
  ref::grouped_gemm(desc, workspace_flags(workspace));
  return GG_STATUS_SUCCESS;
}

// Both GPU paths load operands with 16-byte vectors (mma.sync fragments,
// TMA boxes, whose global addresses and strides must be multiples of 16);
// their scratch follows the flags at a 256-byte offset, so the workspace
// itself starts on 256 bytes, as cudaMalloc returns it.
constexpr size_t kVectorBytes = 16;
constexpr size_t kGpuWorkspaceAlignment = 256;

std::string capability_text(int capability) {
  return text_printf("%d.%d", capability / 10, capability % 10);
}

}  // namespace

const std::vector<GemmPath>& gemm_paths() {
  static const std::vector<GemmPath> paths = {
      {GG_PATH_REFERENCE, "reference", false, 0, 0, 1, 1, alignof(uint32_t), reference_supports,
       reference_scratch_bytes, reference_run},
      // sm_90a code (wgmma, setmaxnreg) runs on compute capability 9.0 only.
      {GG_PATH_SM90, "sm90", true, 90, 90, kVectorBytes, kVectorBytes, kGpuWorkspaceAlignment,
       sm90_gemm_supports, sm90_gemm_scratch_bytes, sm90_gemm_run},
      {GG_PATH_PORTABLE, "portable", true, 80, 0, kVectorBytes, 1, kGpuWorkspaceAlignment,
       portable_gemm_supports, portable_gemm_scratch_bytes, portable_gemm_run},
  };
  return paths;
}

const GemmPath* find_path(const std::vector<GemmPath>& paths, gg_path id) {
  for (const GemmPath& path : paths) {
    if (path.id == id) return &path;
  }
  return nullptr;
}

DeviceStatus device_status(int device) {
  DeviceStatus status;
  status.usable = query_device(device, &status.info, &status.why_not);
  return status;
}

bool runs_on(const GemmPath& path, const DeviceStatus& device, std::string* why_not) {
  if (!path.on_gpu) return true;
  if (!device.usable) {
    *why_not = device.why_not;
    return false;
  }
  const int capability = device.info.compute_capability;
  const bool too_old = capability < path.min_compute_capability;
  const bool too_new = path.max_compute_capability != 0 && capability > path.max_compute_capability;
  if (too_old || too_new) {
    const std::string needed = capability_text(path.min_compute_capability);
    *why_not = text_printf(
        "path %s needs compute capability %s%s; device %d (%s) is %s", path.name, needed.c_str(),
        path.max_compute_capability == path.min_compute_capability ? "" : " or newer",
        device.info.ordinal, device.info.name.c_str(), capability_text(capability).c_str());
    return false;
  }
  return true;
}

gg_status choose_auto_path(const gg_gemm_desc& desc, const std::vector<GemmPath>& paths,
                           const DeviceStatus& device, const GemmPath** chosen) {
  if (!device.usable) {
    return fail(GG_STATUS_NO_DEVICE,
                "GG_PATH_AUTO found no GPU (%s); GG_PATH_REFERENCE runs on the CPU, with host "
                "memory",
                device.why_not.c_str());
  }
  std::string not_running;
  std::string not_supporting;
  for (const GemmPath& path : paths) {
    if (!path.on_gpu) continue;
    std::string why_not;
    if (!runs_on(path, device, &why_not)) {
      not_running += (not_running.empty() ? "" : "; ") + why_not;
    } else if (!path.supports(desc, &why_not)) {
      not_supporting +=
          text_printf("%s%s: %s", not_supporting.empty() ? "" : "; ", path.name, why_not.c_str());
    } else {
      *chosen = &path;
      return GG_STATUS_SUCCESS;
    }
  }
  if (not_supporting.empty()) {
    return fail(GG_STATUS_NO_DEVICE, "no GPU path of this build runs on device %d (%s): %s",
                device.info.ordinal, device.info.name.c_str(), not_running.c_str());
  }
  return fail(GG_STATUS_NOT_SUPPORTED, "no GPU path implements %s on device %d (%s): %s",
              describe_gemm(desc).c_str(), device.info.ordinal, device.info.name.c_str(),
              not_supporting.c_str());
}

gg_status choose_requested_path(const gg_gemm_desc& desc, const std::vector<GemmPath>& paths,
                                const GemmPath** chosen) {
  const GemmPath* path = find_path(paths, desc.path);
  if (path == nullptr) {
    return fail(GG_STATUS_NOT_SUPPORTED, "path %s is not part of this build", path_name(desc.path));
  }
  std::string why_not;
  if (!path->supports(desc, &why_not)) {
    return fail(GG_STATUS_NOT_SUPPORTED, "path %s does not implement %s: %s", path->name,
                describe_gemm(desc).c_str(), why_not.c_str());
  }
  *chosen = path;
  return GG_STATUS_SUCCESS;
}

}  // namespace gg::api

// The paths that run a grouped GEMM, as data, and the choice among them.
//
// Each path is one table row: where it runs (the CPU, or a range of compute
// capabilities), what its loads need of the operands and the workspace, and
// the three functions of kernels/paths.h. Choosing and checking read the row,
// so a new path is a new row, not new branches. GG_PATH_AUTO takes the first
// GPU row, fastest first, that runs on the current device and supports the
// problem; an explicitly requested path is taken as asked, and only runs if
// the device can run it. The choice is a pure function of the table and the
// device status, so CPU tests drive it with tables and devices of their own.
#pragma once

#include <cuda_runtime_api.h>
#include <stddef.h>

#include <string>
#include <vector>

#include "groupgemm/groupgemm.h"
#include "kernels/device.h"

namespace gg::api {

struct GemmPath {
  gg_path id;
  const char* name;
  bool on_gpu;
  int min_compute_capability;  // major * 10 + minor; 0 on the CPU
  int max_compute_capability;  // 0: no upper bound
  size_t operand_alignment;    // bytes: data pointers and row strides of lhs, rhs, out, bias
  // The same for fp8 and e2m1 operands: the portable path's decode stage
  // picks its load width chunk by chunk, so it takes any stride (1).
  size_t quantized_operand_alignment;
  size_t workspace_alignment;  // bytes
  bool (*supports)(const gg_gemm_desc& desc, std::string* why_not);
  size_t (*scratch_bytes)(const gg_gemm_desc& desc);
  gg_status (*run)(const gg_gemm_desc& desc, void* workspace, size_t workspace_bytes,
                   cudaStream_t stream);
};

// Every path of this build: the reference, then the GPU paths fastest first.
const std::vector<GemmPath>& gemm_paths();

// The row of `id`, or nullptr when this build has no such path.
const GemmPath* find_path(const std::vector<GemmPath>& paths, gg_path id);

struct DeviceStatus {
  bool usable = false;
  DeviceInfo info;
  std::string why_not;  // when not usable
};

// `device`: a CUDA ordinal, or -1 for the calling thread's current device.
DeviceStatus device_status(int device);

// Whether `path` runs on `device`; the reason when it does not.
bool runs_on(const GemmPath& path, const DeviceStatus& device, std::string* why_not);

// GG_PATH_AUTO: the first GPU path that runs on `device` and supports
// `desc`. GG_STATUS_NO_DEVICE when none runs there; GG_STATUS_NOT_SUPPORTED,
// with every path's reason, when none supports `desc`.
gg_status choose_auto_path(const gg_gemm_desc& desc, const std::vector<GemmPath>& paths,
                           const DeviceStatus& device, const GemmPath** chosen);

// An explicit path: GG_STATUS_NOT_SUPPORTED when this build lacks it or it
// does not support `desc`.
gg_status choose_requested_path(const gg_gemm_desc& desc, const std::vector<GemmPath>& paths,
                                const GemmPath** chosen);

}  // namespace gg::api

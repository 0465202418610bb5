// Grouped quantize as the API layer sees it (kernels/paths.h): the one GPU
// implementation, which the portable and sm90 paths (and auto) all run. It is
// plain sm_80 CUDA C++ and memory-bound: Hopper's TMA and wgmma would buy it
// nothing, so there is no second kernel to choose.
//
// A run is one launch, or two when an fp32 scale, row scales or the amax
// output need each group's amax or each row's first (quantize_kernel.cuh), of the tile height the plan
// picks (plan/quantize_plan.h). The host reads nothing from
// the device and allocates nothing: the run can be captured in a CUDA graph
// and replayed after the sizes change.
#include <cuda_runtime_api.h>
#include <stdint.h>

#include <string>

#include "api/describe.h"
#include "api/error.h"
#include "api/log.h"
#include "common/groups.h"
#include "common/workspace.h"
#include "formats/block_quant.h"
#include "formats/codecs.h"
#include "kernels/device.h"
#include "kernels/paths.h"
#include "kernels/quantize/grouped_quantize.h"
#include "kernels/quantize/quantize_params.h"
#include "kernels/tile_scheduler.h"
#include "plan/quantize_plan.h"

namespace gg {
namespace {

// One output's params; `columnwise` says which; rows x cols of the input's
// (each) matrix: M or N tokens, K.
quantize::OutputParams output_of(const gg_tensor& t, bool columnwise, bool stacked,
                                 int32_t groups, int64_t tokens, int64_t k) {
  quantize::OutputParams out{};
  if (t.data == nullptr) return out;
  out.data = static_cast<uint8_t*>(t.data);
  out.dtype = t.dtype;
  out.scaling = t.block_scaling;
  out.extent = t.scale_extent;
  out.block = fmt::block_size(t.block_scaling);
  out.row_stride = t.strides[t.rank - 2];
  out.matrix_stride = t.rank == 3 ? t.strides[0] : 0;
  out.block_scales = static_cast<uint8_t*>(t.block_scales);
  out.scale = t.scale;
  const int64_t rows = columnwise ? k : tokens;
  const int64_t cols = columnwise ? tokens : k;
  if (t.block_scaling == GG_BLOCK_ROWWISE) {
    quantize::set_row_scale_geometry(&out, columnwise, stacked, groups, rows);
  } else if (out.block > 0) {
    if (t.block_scaling == GG_BLOCK_128X128) {
      out.scale_row_length = ceil_div(cols, 128);
      out.scale_matrix_entries = ceil_div(rows, 128) * out.scale_row_length;
    } else {
      // Along a ragged input's tokens blocks restart at every group start.
      out.scale_row_length = columnwise && !stacked
                                 ? ragged_block_capacity(cols, out.block, groups)
                                 : ceil_div(cols, out.block);
      out.scale_matrix_entries = rows * out.scale_row_length;
    }
  }
  return out;
}

// Words of row maxima the kernel gathers for `output` (0 unless it is under
// row scales).
int64_t row_maxima_words(const gg_quantize_desc& d, const gg_tensor& output, bool columnwise) {
  if (output.data == nullptr || output.block_scaling != GG_BLOCK_ROWWISE) return 0;
  return quantize::row_scale_entries(columnwise, d.group_sizes.sizes == nullptr, d.num_groups,
                                     d.input.shape[d.input.rank - 2],
                                     d.input.shape[d.input.rank - 1]);
}

}  // namespace

size_t gpu_quantize_scratch_bytes(const gg_quantize_desc& desc) {
  return quantize::quantize_scratch_bytes(desc.num_groups,
                                          row_maxima_words(desc, desc.rowwise, false),
                                          row_maxima_words(desc, desc.columnwise, true));
}

gg_status gpu_quantize_run(const gg_quantize_desc& d, void* workspace, cudaStream_t stream) {
  DeviceInfo device;
  std::string why_not;
  if (!query_device(-1, &device, &why_not)) {
    return api::fail(GG_STATUS_NO_DEVICE, "grouped_quantize: %s", why_not.c_str());
  }
  const bool stacked = d.group_sizes.sizes == nullptr;
  const int64_t tokens = d.input.shape[d.input.rank - 2];
  const int64_t k = d.input.shape[d.input.rank - 1];
  quantize::QuantizeParams p{};
  p.groups = d.num_groups;
  p.stacked = stacked;
  p.sizes = d.group_sizes.sizes;
  p.offsets = d.group_sizes.offsets;
  p.index_type = d.group_sizes.type;
  p.rows = tokens;
  p.cols = k;
  p.row_scales = group_scales_by_row(d);
  p.span = p.row_scales || codes_ignore_groups(d);
  p.amax_span = needs_tensor_amax_only(d);
  p.aligned_groups_as_one = groups_only_restart_column_blocks(d);
  const QuantizePlan plan = plan_quantize(quantize_shape(d, device.shared_bytes_per_block));
  if (api::log_enabled()) api::log_line(plan.describe());
  if (plan.tile_rows == 0) {
    return api::fail(GG_STATUS_NOT_SUPPORTED, "grouped_quantize: %s on this device",
                     plan.describe().c_str());
  }
  p.tile_rows = plan.tile_rows;
  p.input = d.input.data;
  p.input_type = d.input.dtype;
  p.input_stride = d.input.strides[d.input.rank - 2];
  p.input_matrix_stride = stacked ? d.input.strides[0] : 0;
  const int64_t element_bytes = fmt::dtype_bits(d.input.dtype) / 8;
  p.aligned_input = reinterpret_cast<uintptr_t>(d.input.data) % 16 == 0 &&
                    (p.input_stride * element_bytes) % 16 == 0 &&
                    (p.input_matrix_stride * element_bytes) % 16 == 0;
  p.rowwise = output_of(d.rowwise, false, stacked, d.num_groups, tokens, k);
  p.columnwise = output_of(d.columnwise, true, stacked, d.num_groups, tokens, k);
  p.amax = d.amax;
  char* scratch = static_cast<char*>(workspace) + kWorkspaceScratchOffset;
  p.flags = workspace_flags(workspace);
  p.amax_bits = reinterpret_cast<uint32_t*>(scratch);
  const int64_t row_words = row_maxima_words(d, d.rowwise, false);
  const int64_t column_words = row_maxima_words(d, d.columnwise, true);
  uint32_t* maxima = p.amax_bits + d.num_groups + 1;
  p.row_maxima = row_words > 0 ? maxima : nullptr;
  p.column_maxima = column_words > 0 ? maxima + row_words : nullptr;
  p.scratch_bytes = gpu_quantize_scratch_bytes(d);
  const auto needs_amax = [](const gg_tensor& t) {
    return t.data != nullptr &&
           (t.scale_extent != GG_SCALE_NONE || t.block_scaling == GG_BLOCK_ROWWISE);
  };
  p.amax_pass = d.amax != nullptr || needs_amax(d.rowwise) || needs_amax(d.columnwise);
  p.dependent_launch = p.amax_pass && device.compute_capability >= 90;
  const cudaError_t error = quantize::launch_grouped_quantize(p, device.sm_count, stream);
  if (error != cudaSuccess) {
    return api::fail(GG_STATUS_CUDA_ERROR, "grouped_quantize: kernel launch: %s",
                     cudaGetErrorString(error));
  }
  return GG_STATUS_SUCCESS;
}

}  // namespace gg

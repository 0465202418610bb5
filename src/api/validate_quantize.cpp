// See validate.h. The quantize descriptor: the input, then each requested
// output against the input's shape and against the output formats the
// quantizer has rules for (those of gg::ref::grouped_quantize).
//
//   ragged input  [M, K]     (group_sizes.sizes set):  rowwise [M, K],     columnwise [K, M]
//   stacked input [G, N, K]  (group_sizes.sizes NULL): rowwise [G, N, K],  columnwise [G, K, N]
#include <string>

#include "api/describe.h"
#include "api/error.h"
#include "api/field_checks.h"
#include "api/names.h"
#include "api/validate.h"
#include "formats/codecs.h"

namespace gg::api {
namespace {

// fp8 with a tensor or group scale; fp8 with 1x128, 128x128 or rowwise fp32
// block scales; mxfp8 and mxfp4; nvfp4 with a tensor or group scale. The
// quantizer computes every scale, so each format must say which scales there
// are to compute.
bool quantizer_has_rule(const gg_tensor& output) {
  switch (output.block_scaling) {
    case GG_BLOCK_NONE:
      return is_fp8(output.dtype) && output.scale_extent != GG_SCALE_NONE;
    case GG_BLOCK_NV16:
      return output.scale_extent != GG_SCALE_NONE;
    case GG_BLOCK_MX32:
    case GG_BLOCK_1X128:
    case GG_BLOCK_128X128:
    case GG_BLOCK_ROWWISE:
      return output.scale_extent == GG_SCALE_NONE;
  }
  return false;
}

gg_status check_output(const TensorRole& role, gg_tensor* output) {
  GG_RETURN_IF_ERROR(check_view(role, output));
  if (fmt::dtype_bits(output->dtype) >= 16) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s.dtype must be e4m3, e5m2 or e2m1 (got %s)",
                role.name, dtype_name(output->dtype));
  }
  GG_RETURN_IF_ERROR(check_scaling(role, *output));
  if (!quantizer_has_rule(*output)) {
    return fail(GG_STATUS_NOT_SUPPORTED,
                "%s (%s, scale_extent %s): grouped_quantize has no rule for this output format; "
                "it writes fp8 with a tensor or group scale, fp8 1x128, 128x128 or rowwise, "
                "mxfp8, mxfp4, or nvfp4 with a tensor or group scale",
                role.name, format_name(*output).c_str(), extent_name(output->scale_extent));
  }
  return GG_STATUS_SUCCESS;
}

gg_status check_rowwise(const gg_quantize_desc& desc, bool stacked, gg_tensor* rowwise) {
  const TensorRole role{"desc->rowwise", desc.input.rank,
                        stacked ? "[G, N, K], the input's shape" : "[M, K], the input's shape",
                        false, !stacked};
  GG_RETURN_IF_ERROR(check_output(role, rowwise));
  for (int i = 0; i < desc.input.rank; ++i) {
    const std::string input_dim = text_printf("desc->input.shape[%d]", i);
    GG_RETURN_IF_ERROR(check_dim(role, *rowwise, i, input_dim.c_str(), desc.input.shape[i]));
  }
  return GG_STATUS_SUCCESS;
}

gg_status check_columnwise(const gg_quantize_desc& desc, bool stacked, gg_tensor* columnwise) {
  const TensorRole role{
      "desc->columnwise", desc.input.rank,
      stacked ? "[G, K, N], the input transposed" : "[K, M], the input transposed", false,
      !stacked};
  GG_RETURN_IF_ERROR(check_output(role, columnwise));
  const int64_t* in = desc.input.shape;
  if (stacked) {
    GG_RETURN_IF_ERROR(check_dim(role, *columnwise, 0, "num_groups", desc.num_groups));
    GG_RETURN_IF_ERROR(check_dim(role, *columnwise, 1, "K = desc->input.shape[2]", in[2]));
    return check_dim(role, *columnwise, 2, "N = desc->input.shape[1]", in[1]);
  }
  GG_RETURN_IF_ERROR(check_dim(role, *columnwise, 0, "K = desc->input.shape[1]", in[1]));
  return check_dim(role, *columnwise, 1, "M = desc->input.shape[0]", in[0]);
}

}  // namespace

gg_status validate_quantize(const gg_quantize_desc* desc, gg_quantize_desc* normalized) {
  if (desc == nullptr) return fail(GG_STATUS_INVALID_ARGUMENT, "desc is NULL");
  *normalized = *desc;
  gg_quantize_desc& d = *normalized;
  if (path_name(d.path) == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "desc->path is not a gg_path (got %d)",
                static_cast<int>(d.path));
  }
  GG_RETURN_IF_ERROR(check_num_groups(d.num_groups));
  const bool stacked = d.group_sizes.sizes == nullptr;
  if (stacked && d.group_sizes.offsets != nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT,
                "desc->group_sizes.offsets must be NULL when desc->group_sizes.sizes is NULL "
                "(stacked input)");
  }
  if (!stacked) GG_RETURN_IF_ERROR(check_group_sizes(d.group_sizes));

  const TensorRole input{"desc->input", stacked ? 3 : 2,
                         stacked ? "[G, N, K] (stacked: desc->group_sizes.sizes is NULL)"
                                 : "[M, K] (ragged: desc->group_sizes.sizes is set)",
                         false, !stacked};
  GG_RETURN_IF_ERROR(check_view(input, &d.input));
  GG_RETURN_IF_ERROR(check_plain(input, d.input));
  if (stacked) GG_RETURN_IF_ERROR(check_dim(input, d.input, 0, "num_groups", d.num_groups));

  if (d.rowwise.data == nullptr && d.columnwise.data == nullptr && d.amax == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT,
                "desc asks for nothing: desc->rowwise.data, desc->columnwise.data and "
                "desc->amax are all NULL");
  }
  if (d.rowwise.data != nullptr) GG_RETURN_IF_ERROR(check_rowwise(d, stacked, &d.rowwise));
  if (d.columnwise.data != nullptr) {
    GG_RETURN_IF_ERROR(check_columnwise(d, stacked, &d.columnwise));
  }
  if (d.amax != nullptr) {
    return check_aligned("desc->amax", d.amax, sizeof(float), "fp32");
  }
  return GG_STATUS_SUCCESS;
}

}  // namespace gg::api

// See describe.h.
#include "api/describe.h"

#include "api/error.h"
#include "api/field_checks.h"
#include "api/names.h"

namespace gg::api {
namespace {

// One format for both operands when they agree, "lhs x rhs" otherwise.
std::string operands_format(const gg_gemm_desc& desc) {
  const std::string lhs = format_name(desc.lhs);
  const std::string rhs = format_name(desc.rhs);
  return lhs == rhs ? lhs : lhs + " x " + rhs;
}

std::string out_format(const gg_tensor& out) {
  return std::string(dtype_name(out.dtype)) + (is_pointer_array(out) ? " pointers" : "");
}

}  // namespace

std::string format_name(const gg_tensor& tensor) {
  const std::string dtype = dtype_name(tensor.dtype);
  std::string name;
  switch (tensor.block_scaling) {
    case GG_BLOCK_NONE:
      name = is_fp8(tensor.dtype) ? "fp8 " + dtype : dtype;
      break;
    case GG_BLOCK_MX32:
      name = tensor.dtype == GG_DTYPE_E2M1 ? "mxfp4" : "mxfp8 " + dtype;
      break;
    case GG_BLOCK_NV16:
      name = "nvfp4";
      break;
    case GG_BLOCK_1X128:
    case GG_BLOCK_128X128:
    case GG_BLOCK_ROWWISE:
      name = "fp8 " + dtype + " " + scaling_name(tensor.block_scaling);
      break;
  }
  if (tensor.scale_extent == GG_SCALE_TENSOR) name += " (tensor scale)";
  if (tensor.scale_extent == GG_SCALE_GROUP) name += " (group scales)";
  return name;
}

std::string describe_gemm(const gg_gemm_desc& desc) {
  std::string text = std::string(op_name(desc.op)) + " " + operands_format(desc);
  if (desc.op == GG_OP_RAGGED_M) {
    const bool rhs_t = desc.rhs_layout == GG_LAYOUT_T;
    text += text_printf(" G=%d M=%lld N=%lld K=%lld", desc.num_groups, ll(desc.lhs.shape[0]),
                        ll(desc.rhs.shape[rhs_t ? 1 : 2]), ll(desc.lhs.shape[1]));
    text += std::string(" rhs=") + layout_name(desc.rhs_layout) +
            (is_pointer_array(desc.rhs) ? " pointers" : "");
    if (desc.bias.data != nullptr) text += std::string(" bias=") + dtype_name(desc.bias.dtype);
  } else {
    const bool lhs_t = desc.lhs_layout == GG_LAYOUT_T;
    const bool rhs_t = desc.rhs_layout == GG_LAYOUT_T;
    text += text_printf(" G=%d M=%lld P=%lld Q=%lld", desc.num_groups,
                        ll(desc.lhs.shape[lhs_t ? 1 : 0]), ll(desc.lhs.shape[lhs_t ? 0 : 1]),
                        ll(desc.rhs.shape[rhs_t ? 0 : 1]));
    text += std::string(" lhs=") + layout_name(desc.lhs_layout) +
            " rhs=" + layout_name(desc.rhs_layout);
  }
  return text + " out=" + out_format(desc.out);
}

std::string describe_quantize(const gg_quantize_desc& desc) {
  const gg_tensor& input = desc.input;
  std::string text = "quantize ";
  if (input.rank == 2) {
    text +=
        std::string("ragged ") + dtype_name(input.dtype) +
        text_printf(" G=%d M=%lld K=%lld", desc.num_groups, ll(input.shape[0]), ll(input.shape[1]));
  } else {
    text +=
        std::string("stacked ") + dtype_name(input.dtype) +
        text_printf(" G=%d N=%lld K=%lld", desc.num_groups, ll(input.shape[1]), ll(input.shape[2]));
  }
  std::string outputs;
  const auto add = [&outputs](const std::string& output) {
    outputs += (outputs.empty() ? " -> " : ", ") + output;
  };
  if (desc.rowwise.data != nullptr) add("rowwise " + format_name(desc.rowwise));
  if (desc.columnwise.data != nullptr) add("columnwise " + format_name(desc.columnwise));
  if (desc.amax != nullptr) add("amax");
  return text + outputs;
}

}  // namespace gg::api

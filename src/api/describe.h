// One-line summaries of a problem, for log lines and NOT_SUPPORTED messages:
// "ragged-M bf16 G=8 M=4096 N=2048 K=7168 rhs=T out=bf16". Descriptors must be
// validated first: the summaries trust every enum and shape.
#pragma once

#include <string>

#include "groupgemm/groupgemm.h"

namespace gg::api {

// "bf16", "fp8 e4m3 (tensor scale)", "fp8 e4m3 rowwise", "mxfp8 e4m3", "mxfp4",
// "nvfp4 (group scales)", ...
std::string format_name(const gg_tensor& tensor);

std::string describe_gemm(const gg_gemm_desc& desc);

// "quantize ragged bf16 G=8 M=4096 K=7168 -> rowwise mxfp8 e4m3, amax"
std::string describe_quantize(const gg_quantize_desc& desc);

}  // namespace gg::api

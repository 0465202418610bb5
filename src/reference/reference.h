// The CPU reference: the definition of every op and format of the library.
//
// Everything lives in host memory, and descriptors arrive validated and
// normalized by the API layer (every stride filled in). The reference favours
// exactness over speed: every operand element is decoded exactly (element x
// block scale x fp32 scale, in double), products and sums are taken in
// double, and each output is rounded once, to nearest even, to its dtype.
// Quantization applies the rules of src/formats/block_quant.h, the same
// functions the GPU kernels call. Group extents come from gg::clamp_group,
// so the reference clamps bad device sizes exactly as a kernel does and ORs
// the same GG_DEVICE_* bits into *flags.
#pragma once

#include <stdint.h>

#include "groupgemm/groupgemm.h"

namespace gg::ref {

// out[g rows] (ragged-M) or out[g] (ragged-K) as groupgemm.h defines them:
// alpha_g * acc + beta_g * out_old + bias[g][n]; beta_g == 0 never reads out.
void grouped_gemm(const gg_gemm_desc& desc, uint32_t* flags);

// Grouped quantize as groupgemm.h defines it. Output formats, by the output
// view's (dtype, block_scaling, scale_extent):
//   e4m3/e5m2, NONE, TENSOR or GROUP    fp8 current scaling, fp32 scale
//   e4m3/e5m2, 1X128 or 128X128, NONE   fp8 with fp32 block scales
//   e4m3/e5m2, ROWWISE, NONE            fp8 with an fp32 scale per output row
//   e4m3/e5m2/e2m1, MX32, NONE          mxfp8 / mxfp4, e8m0 block scales
//   e2m1, NV16, TENSOR or GROUP         nvfp4, ue4m3 block scales + fp32 scale
// (without a scale_extent the fp32 scale is 1 and nothing is stored for it).
// Block scales are packed row-major with blocks along the output's columns
// (K for rowwise, the tokens for columnwise); where those columns are the
// tokens of a ragged input, blocks restart at every group start and the
// scale matrix is [K, ragged_block_capacity(M, block, G)], group g's blocks
// starting at column sum over h < g of blocks_of(size_h, block). A rowwise
// block there is the whole group: the scale matrix is [K, G], group g's
// scales column g, written (as 1) for an empty group too.
// amax follows fmt::amax_accumulate: a NaN input makes it NaN.
void grouped_quantize(const gg_quantize_desc& desc, uint32_t* flags);

}  // namespace gg::ref

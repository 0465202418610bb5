// What the skinny kernel is given (skinny_kernel.cuh): the portable
// kernels' view of the operands and output, and the device sizes from which
// each CTA builds its group table.
#pragma once

#include <stdint.h>

#include "groupgemm/groupgemm.h"
#include "kernels/portable/gemm_params.h"

namespace gg::skinny {

// The tokens' operand: bf16 (quantized weights only), fp8 or e2m1 codes.
enum class Tokens { kBf16, kFp8, kE2m1 };

struct Params {
  portable::GemmParams gemm;  // operands, output and scales (records unused)
  const void* sizes;
  const void* offsets;
  gg_index_type index_type;
  int64_t rows;             // M
  uint32_t* flags;          // the workspace's GG_DEVICE_* word
  float accumulator_scale;  // 2^(both operands' accumulator_shift)
};

}  // namespace gg::skinny

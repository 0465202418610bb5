// A quantized format as the tests name it (element dtype, block scaling, fp32
// scale extent), its label, and the bytes of one block-scale entry: shared
// by the quantize tests (outputs) and the GEMM tests (operands).
#pragma once

#include <stdint.h>

#include <string>

#include "groupgemm/groupgemm.h"

namespace gg::test {

struct QuantizeFormatSpec {
  gg_dtype dtype = GG_DTYPE_E4M3;
  gg_block_scaling block = GG_BLOCK_NONE;
  gg_scale_extent extent = GG_SCALE_TENSOR;
};

// "e4m3_mx32", "e2m1_nv16_group", ...
std::string format_label(const QuantizeFormatSpec& f);

// e8m0 and ue4m3 entries take one byte, fp32 ones (1x128, 128x128, rowwise) four.
int64_t scale_entry_bytes(gg_block_scaling b);

}  // namespace gg::test

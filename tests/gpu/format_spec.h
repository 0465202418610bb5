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

// The formats the GEMM tests pair.
inline constexpr QuantizeFormatSpec kE4m3Tensor{GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR};
inline constexpr QuantizeFormatSpec kE4m3Group{GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP};
inline constexpr QuantizeFormatSpec kE5m2Tensor{GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_TENSOR};
inline constexpr QuantizeFormatSpec kE5m2Group{GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_GROUP};
inline constexpr QuantizeFormatSpec kE4m3Rowwise{GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE};
inline constexpr QuantizeFormatSpec kE5m2Rowwise{GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, GG_SCALE_NONE};
inline constexpr QuantizeFormatSpec kMxE4m3{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE};
inline constexpr QuantizeFormatSpec kMxE5m2{GG_DTYPE_E5M2, GG_BLOCK_MX32, GG_SCALE_NONE};
inline constexpr QuantizeFormatSpec kMxfp4{GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE};
inline constexpr QuantizeFormatSpec kNvfp4Tensor{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR};
inline constexpr QuantizeFormatSpec kNvfp4Group{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP};

}  // namespace gg::test

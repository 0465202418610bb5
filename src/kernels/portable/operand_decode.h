// Exact decode of quantized operand elements into bf16, and where each
// element's block scale lives: GG_HD, so tests/plan checks both on the CPU
// against the reference (every element code x every scale code, and the
// reference's own block indexing with ragged group starts).
//
// The portable path runs every block-scaled format on bf16 tensor cores:
// element x block scale is exact in bf16 for each of them. An fp8 or e2m1
// element has at most 4 significant bits and an e8m0 scale none, so their
// product has at most 4; e2m1 x ue4m3 has at most 2 + 4 = 6; bf16 keeps 8.
// The product is therefore bf16's own value whenever it lies in bf16's
// range: a product below bf16's smallest normal (2^-126), which needs an
// e8m0 scale of 2^-118 or less, may lose bits as a bf16 subnormal or flush
// to zero, and one above bf16's largest (e8m0 scales of 2^120 and up) is
// infinite, as it is in fp32. The fp32 tensor or group scale is not decoded
// (it would round): it multiplies the fp32 accumulator in the epilogue, as
// does a rowwise scale (GG_BLOCK_ROWWISE), one per output row or column.
#pragma once

#include <stdint.h>

#ifdef __CUDACC__
#include <cuda_bf16.h>
#endif

#include "common/hd.h"
#include "formats/codecs.h"
#include "groupgemm/groupgemm.h"

namespace gg::portable {

// One quantized operand of the kernel, or a 16-bit one (dtype bf16/fp16,
// scaling GG_BLOCK_NONE, no block scales). Block scales (MX32, NV16) run
// along the contraction depth; group g's scale matrix is block_scales +
// g * scale_group_stride entries (stacked) or pointer g (pointer arrays).
// Depth-major data (the depth contiguous) keeps one scale row per outer
// index, outer-major data one per depth block. Along the tokens of a
// ragged-K operand, blocks restart at every group start: group g's first
// block is the count of blocks of the groups before it (GroupRecord's
// tile_begin, when the metadata kernel numbers blocks of that size).
struct QuantOperand {
  gg_dtype dtype = GG_DTYPE_BF16;
  gg_block_scaling scaling = GG_BLOCK_NONE;
  const void* block_scales = nullptr;
  bool scale_pointers = false;    // block_scales is an array of G pointers
  int64_t scale_row_length = 0;   // entries per scale row
  int64_t scale_group_stride = 0;
  bool token_blocks = false;      // blocks along ragged-K tokens, restarting per group
  gg_scale_extent extent = GG_SCALE_NONE;
  const float* scale = nullptr;   // fp32 tensor or group scale
};

GG_HD bool is_quantized(gg_dtype dtype) {
  return dtype == GG_DTYPE_E4M3 || dtype == GG_DTYPE_E5M2 || dtype == GG_DTYPE_E2M1;
}

// Bits of one element of a quantized operand.
GG_HD int element_bits(gg_dtype dtype) { return dtype == GG_DTYPE_E2M1 ? 4 : 8; }

// log2 of the elements per block along the depth: 5 (MX), 4 (NV), else 0
// (no blocks). The index arithmetic shifts by it, where a 64-bit division
// would cost a subroutine per element.
GG_HD int decoded_block_shift(gg_block_scaling scaling) {
  return scaling == GG_BLOCK_MX32 ? 5 : (scaling == GG_BLOCK_NV16 ? 4 : 0);
}

// Elements per block along the depth: 32 (MX), 16 (NV), else 0.
GG_HD int decoded_block_size(gg_block_scaling scaling) {
  const int shift = decoded_block_shift(scaling);
  return shift > 0 ? 1 << shift : 0;
}

// The value of one element code, fp8 or e2m1 (the code in the low nibble).
GG_HD float element_value(gg_dtype dtype, uint8_t code) {
  switch (dtype) {
    case GG_DTYPE_E4M3:
      return fmt::e4m3_to_float(code);
    case GG_DTYPE_E5M2:
      return fmt::e5m2_to_float(code);
    default:
      return fmt::e2m1_to_float(code & 0xFu);
  }
}

// The value of one block-scale code (1 without block scales).
GG_HD float block_scale_value(gg_block_scaling scaling, uint8_t code) {
  switch (scaling) {
    case GG_BLOCK_MX32:
      return fmt::e8m0_to_float(code);
    case GG_BLOCK_NV16:
      return fmt::ue4m3_to_float(code);
    default:
      return 1.0f;
  }
}

// An element's value x its block scale's value as bf16 bits: one fp32
// product rounded once. The kernels take both values from tables of them
// (decoded_tile.cuh). On the device the rounding is the hardware's
// cvt.rn.bf16.f32: the same round-to-nearest-even as fmt::float_to_bf16's
// integer code, in one instruction, except that a NaN comes out as the
// canonical 0x7FFF.
GG_HD uint16_t scaled_to_bf16(float element, float scale) {
#ifdef __CUDA_ARCH__
  return __bfloat16_as_ushort(__float2bfloat16_rn(element * scale));
#else
  return fmt::float_to_bf16(element * scale);
#endif
}

// element x block scale as bf16 bits: exact (at most 6 significant bits,
// see above) wherever it lies in bf16's normal range.
GG_HD uint16_t decode_to_bf16(gg_dtype dtype, uint8_t code, gg_block_scaling scaling,
                              uint8_t scale_code) {
  return scaled_to_bf16(element_value(dtype, code), block_scale_value(scaling, scale_code));
}

// Which entry of one group's block-scale matrix scales the element at
// (outer, depth), for an operand whose depth-contiguous rows are outers
// (depth_major) or whose outer-contiguous rows are depths. Along ragged-K
// tokens (token_blocks) the group's blocks start at its first token, and
// its first block is `first_block`.
struct BlockScaleIndex {
  int block_shift;     // log2 of the elements per block along the depth
  int64_t row_length;  // entries per scale row
  bool token_blocks;
  int64_t group_start;
  int64_t first_block;

  GG_HD int64_t entry(bool depth_major, int64_t outer, int64_t depth) const {
    const int64_t depth_block =
        token_blocks ? first_block + ((depth - group_start) >> block_shift) : depth >> block_shift;
    return depth_major ? outer * row_length + depth_block : depth_block * row_length + outer;
  }

  // Depths from `depth` (inside the group) to the end of its block: a chunk
  // of consecutive depths reads one entry for that many, then the next.
  GG_HD int64_t depths_left_in_block(int64_t depth) const {
    const int64_t from = token_blocks ? depth - group_start : depth;
    return (((from >> block_shift) + 1) << block_shift) - from;
  }
};

// Group g's scale matrix.
GG_HD const uint8_t* group_scales(const QuantOperand& q, int64_t g) {
  if (q.scale_pointers) return static_cast<const uint8_t* const*>(q.block_scales)[g];
  return static_cast<const uint8_t*>(q.block_scales) + g * q.scale_group_stride;
}

// The rowwise scales of group g (GG_BLOCK_ROWWISE; null without).
GG_HD const float* rowwise_scales(const QuantOperand& q, int64_t g) {
  if (q.scaling != GG_BLOCK_ROWWISE) return nullptr;
  return reinterpret_cast<const float*>(group_scales(q, g));
}

// The fp32 tensor or group scale of group g (1 without).
GG_HD float fp32_scale(const QuantOperand& q, int64_t g) {
  switch (q.extent) {
    case GG_SCALE_TENSOR:
      return q.scale[0];
    case GG_SCALE_GROUP:
      return q.scale[g];
    default:
      return 1.0f;
  }
}

}  // namespace gg::portable

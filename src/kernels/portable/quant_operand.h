// A quantized operand of a descriptor as the portable kernels read it
// (operand_decode.h's QuantOperand): host code, so that the CPU tests check
// the scale addressing it implies against the reference's own indexing.
#pragma once

#include "groupgemm/groupgemm.h"
#include "kernels/portable/operand_decode.h"

namespace gg::portable {

// Operand `t` of `d` (a 16-bit one gives the defaults). `depth_along_cols`:
// the contraction runs along the stored matrix's columns. Block-scale
// matrices are packed as gg_block_scale_shape says; along ragged-K tokens
// their blocks restart at every group start.
QuantOperand quant_operand_of(const gg_tensor& t, bool depth_along_cols, const gg_gemm_desc& d);

// The block by which the metadata kernel numbers a ragged-K group's token
// blocks, so that its record's tile_begin is its first block: the MX or NV
// block of the operands that have one (0: none has). Both operands' blocks
// must then agree, which the path checks.
int token_block_size(const gg_gemm_desc& d);

}  // namespace gg::portable

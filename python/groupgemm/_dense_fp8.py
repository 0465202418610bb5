"""cuBLASLt's dense fp8 products of equal work, the peers of the quantized
grouped GEMMs in groupgemm.bench_quantized.

A grouped product of R routed rows does the work of one dense product of R
rows; torch._scaled_mm runs that one on cuBLASLt with tensor scales, or with
the DeepSeek-V3 block scales (1x128 activations x 128x128 weights for the
forward, 1x128 x 1x128 for the weight gradient), which cuBLASLt has on Hopper
from CUDA 12.9. Every product here is a @ b_t^T with both operands K-major
(fp8 tensor cores read no other layout), quantized before it is timed.

The scale layouts are those torch._scaled_mm checks (its
is_blockwise_1x128_scaling / is_blockwise_128x128_scaling): for A [M, K]
1x128, a [M, K/128] view with strides (1, M); for B = b_t^T, the scales of
b_t [N, K] as B's own transposed view: 128x128 a [N/128, K/128] view whose
rows are K/128 rounded up to 4 apart, 1x128 a [N, K/128] view with strides
(1, N).
"""

from __future__ import annotations

import sys
from typing import Callable, Dict, Optional, Tuple

import torch

from .bench import relative_error

E4M3_MAX = 448.0
BLOCK = 128

# A recipe's name -> the rows of b_t's scale blocks (1: 1x128; 128: 128x128).
FPROP_RECIPES = {"tensor": None, "1x128 x 128x128": BLOCK}
WGRAD_RECIPES = {"tensor": None, "1x128 x 1x128": 1}


def _blocks(extent: int, size: int) -> int:
    return -(-extent // size)


def block_fp8(t: torch.Tensor, block_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """e4m3 codes of a matrix t [R, C] and their fp32 scales (amax / 448,
    dequantized = code x scale), one per block_rows x 128 block:
    [ceil(R / block_rows), ceil(C / 128)]."""
    rows, cols = t.shape
    padded = t.new_zeros(_blocks(rows, block_rows) * block_rows, _blocks(cols, BLOCK) * BLOCK,
                         dtype=torch.float32)
    padded[:rows, :cols] = t
    blocks = padded.view(padded.shape[0] // block_rows, block_rows, padded.shape[1] // BLOCK, BLOCK)
    scale = blocks.abs().amax(dim=(1, 3)).clamp_min(1e-12) / E4M3_MAX
    blocks /= scale[:, None, :, None]
    codes = padded[:rows, :cols].to(torch.float8_e4m3fn)
    return codes, scale


def tensor_fp8(t: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """e4m3 codes of t and its one fp32 scale (a 0-d tensor)."""
    scale = t.float().abs().amax().clamp_min(1e-12) / E4M3_MAX
    return (t.float() / scale).to(torch.float8_e4m3fn), scale


def lhs_1x128_scales(scale: torch.Tensor) -> torch.Tensor:
    """A's 1x128 scales [M, K/128] as torch._scaled_mm reads them: M-major."""
    return scale.t().contiguous().t()


def rhs_scales(scale: torch.Tensor, block_rows: int) -> torch.Tensor:
    """B's scales, from those of b_t [N, K] (block_rows x 128 blocks), as
    torch._scaled_mm reads them for B = b_t^T."""
    if block_rows == 1:
        return scale.t().contiguous()  # B's [K/128, N], N fastest
    n_blocks, k_blocks = scale.shape
    rows = scale.new_zeros(n_blocks, _blocks(k_blocks, 4) * 4)
    rows[:, :k_blocks] = scale
    return rows[:, :k_blocks].t()


def quantized_pair(a: torch.Tensor, b_t: torch.Tensor, block_rows: Optional[int]):
    """The operands and scales of one recipe: (a codes, B, scale_a, scale_b)."""
    if block_rows is None:
        (a8, sa), (b8, sb) = tensor_fp8(a), tensor_fp8(b_t)
        return a8, b8.t(), sa, sb
    a8, sa = block_fp8(a, 1)
    b8, sb = block_fp8(b_t, block_rows)
    return a8, b8.t(), lhs_1x128_scales(sa), rhs_scales(sb, block_rows)


def stored_bytes(*tensors: torch.Tensor) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def dense_fp8_peers(a: torch.Tensor, b_t: torch.Tensor, recipes: Dict[str, Optional[int]],
                    tolerance: float) -> Dict[str, Tuple[Callable, int]]:
    """{"cuBLASLt fp8 dense <recipe>": (run, bytes read)}: a @ b_t^T (bf16
    out) per recipe, each checked against the bf16 product before it is
    offered; a recipe this torch or GPU refuses is left out, its reason
    printed."""
    reference = a @ b_t.t()
    peers = {}
    for recipe, block_rows in recipes.items():
        name = "cuBLASLt fp8 dense " + recipe
        a8, b8, sa, sb = quantized_pair(a, b_t, block_rows)
        run = (lambda a8, b8, sa, sb: lambda: torch._scaled_mm(
            a8, b8, sa, sb, out_dtype=torch.bfloat16))(a8, b8, sa, sb)
        try:
            got = run()
        except (RuntimeError, TypeError, ValueError) as error:
            print("%s: %s" % (name, str(error).splitlines()[0]), file=sys.stderr)
            continue
        error = relative_error(got, reference)
        if error > tolerance:
            raise RuntimeError("%s differs from bf16 by %.3g (relative norm)" % (name, error))
        peers[name] = (run, stored_bytes(a8, b8, sa, sb))
    return peers

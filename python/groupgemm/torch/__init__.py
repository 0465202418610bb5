"""PyTorch front end: grouped products as torch custom ops, with autograd.

  grouped_mm(x, w, group_sizes, ...)   ragged-M: y[g rows] = x[g rows] @ op(w[g])
  ragged_k_mm(a, b, group_sizes, ...)  ragged-K: out[g] = a[g rows]^T @ b[g rows]
  GroupedLinear                        G experts' nn.Linear in one product, 16-bit
                                       or quantized by a recipe (groupgemm.recipes)
  check(device)                        device-side size errors since the last check
  reserve_workspace(nbytes, device)    size the workspace before graph capture
  grouped_quantize(x, group_sizes, ...) fp8 / mxfp8 / mxfp4 / nvfp4, rowwise and
                                       columnwise copies: QuantizedTensors, which
                                       the products take as operands

The ops are registered as torch.ops.groupgemm.* (grouped_mm, grouped_mm_out,
ragged_k_mm, ragged_k_mm_out; grouped_mm_zero_rest, which autograd's input
gradients use) with fake kernels and autograd, so they run
eagerly, under torch.compile(fullgraph=True) and inside CUDA graph capture.
On CUDA they run on torch.cuda.current_stream(); group sizes stay on the GPU
and are never read by the host. CPU tensors (sizes on the CPU too) run
through the library's CPU reference, the one path of the quantized formats
for now.
"""

from typing import Optional, Union

import torch

from ..core import Quantized, QuantizedTensor  # noqa: F401  (the result types)

from . import _autograd  # noqa: F401  (registers the backward formulas)
from . import _ops
from ._quantize import grouped_quantize
from ._views import parts
from ._workspace import check, reserve as reserve_workspace
from .linear import GroupedLinear

Operand = Union[torch.Tensor, QuantizedTensor]
Alpha = Union[float, torch.Tensor]


def _alpha(alpha: Alpha):
    """(host value, per-group tensor or None) of an alpha argument."""
    if isinstance(alpha, torch.Tensor):
        return 1.0, alpha
    return float(alpha), None


def grouped_mm(
    x: Operand,
    w: Operand,
    group_sizes: torch.Tensor,
    *,
    w_layout: str = "nk",
    out_dtype: Optional[torch.dtype] = None,
    bias: Optional[torch.Tensor] = None,
    alpha: Alpha = 1.0,
    beta: float = 0.0,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Ragged-M product: y[g rows] = alpha * x[g rows] @ op(w[g]) + beta * y[g rows] + bias[g].

    x [M, K], bf16 or fp16; w [G, N, K] for w_layout "nk" (nn.Linear's
    layout: op is the transpose) or [G, K, N] for "kn", x's dtype (a
    transposed view is read in place); group_sizes [G] int32/int64 on x's
    device, sum <= M; bias [G, N]; alpha a float or an fp32 tensor [G] (one
    per group). Returns [M, N] in out_dtype (bf16, fp16 or fp32; default
    x's, fp32 for a quantized x). Rows past the last group are not written.

    x and w may be QuantizedTensors (grouped_quantize's outputs), both in
    one recipe, or a bf16/fp16 x with quantized weights: x its rowwise
    copy, w the copy whose blocks run along K (the rowwise copy of [G, N, K]
    weights for "nk", the columnwise copy for "kn", as a weight gradient's
    dgrad reads them). On CUDA tensors they run on the GPU path that takes
    their formats (on Hopper, fp8 on its fp8 tensor cores and MX / NV blocks
    or quantized weights decoded exactly into bf16 tiles, where the layout
    allows; the portable path's exact decode otherwise); a format no GPU path takes
    raises NotSupported, naming it.

    With out=, the result is written into `out` (and returned) and beta may
    accumulate into it; the out= form has no autograd, nor does a product
    with a quantized operand.
    """
    alpha, alpha_per_group = _alpha(alpha)
    operands = parts("x", x) + parts("w", w)
    if out is None:
        if beta != 0:
            raise ValueError(
                "beta: accumulating (beta != 0) needs out=, the tensor to accumulate into"
            )
        return _ops.grouped_mm(
            *operands, group_sizes, w_layout, out_dtype, bias, alpha, alpha_per_group
        )
    if out_dtype is not None and out_dtype != out.dtype:
        raise TypeError("out_dtype: %s differs from out's dtype %s" % (out_dtype, out.dtype))
    _ops.grouped_mm_out(
        out, *operands, group_sizes, w_layout, bias, alpha, alpha_per_group, float(beta)
    )
    return out


def ragged_k_mm(
    a: Operand,
    b: Operand,
    group_sizes: torch.Tensor,
    *,
    out_dtype: Optional[torch.dtype] = None,
    alpha: Alpha = 1.0,
    beta: float = 0.0,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Ragged-K product: out[g] = alpha * a[g rows]^T @ b[g rows] + beta * out[g].

    a [M, P] and b [M, Q], bf16 or fp16, the same groups of rows (transposed
    views are read in place); group_sizes [G] int32/int64 on their device;
    alpha a float or an fp32 tensor [G]. Returns [G, P, Q] in out_dtype
    (default a's, fp32 for a quantized a); a group of size 0 gets beta *
    out[g], zeros when beta is 0. With out=, writes into `out`
    (accumulating with beta, e.g. into an fp32 main-grad buffer with beta=1);
    the out= form has no autograd.

    a and b may be QuantizedTensors of one recipe: their columnwise copies
    (blocks along the tokens, restarting at each group start), or either
    copy of a format without block scales. As for grouped_mm, they run where
    a path takes their formats and have no autograd.
    """
    alpha, alpha_per_group = _alpha(alpha)
    operands = parts("a", a) + parts("b", b)
    if out is None:
        if beta != 0:
            raise ValueError(
                "beta: accumulating (beta != 0) needs out=, the tensor to accumulate into"
            )
        return _ops.ragged_k_mm(*operands, group_sizes, out_dtype, alpha, alpha_per_group)
    if out_dtype is not None and out_dtype != out.dtype:
        raise TypeError("out_dtype: %s differs from out's dtype %s" % (out_dtype, out.dtype))
    _ops.ragged_k_mm_out(out, *operands, group_sizes, alpha, alpha_per_group, float(beta))
    return out


__all__ = [
    "GroupedLinear",
    "Quantized",
    "QuantizedTensor",
    "check",
    "grouped_mm",
    "grouped_quantize",
    "ragged_k_mm",
    "reserve_workspace",
]

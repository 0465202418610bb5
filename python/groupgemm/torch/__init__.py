"""PyTorch front end: grouped products as torch custom ops, with autograd.

  grouped_mm(x, w, group_sizes, ...)   ragged-M: y[g rows] = x[g rows] @ op(w[g])
  ragged_k_mm(a, b, group_sizes, ...)  ragged-K: out[g] = a[g rows]^T @ b[g rows]
  GroupedLinear                        G experts' nn.Linear in one product
  check(device)                        device-side size errors since the last check
  reserve_workspace(nbytes, device)    size the workspace before graph capture
  grouped_quantize(x, group_sizes, ...) fp8 / mxfp8 / nvfp4, rowwise and columnwise

The ops are registered as torch.ops.groupgemm.* (grouped_mm, grouped_mm_out,
ragged_k_mm, ragged_k_mm_out; grouped_mm_zero_rest, which autograd's input
gradients use) with fake kernels and autograd, so they run
eagerly, under torch.compile(fullgraph=True) and inside CUDA graph capture.
On CUDA they run on torch.cuda.current_stream(); group sizes stay on the GPU
and are never read by the host. CPU tensors (sizes on the CPU too) run
through the library's CPU reference.
"""

from typing import Optional

import torch

from .. import core
from ..core import Quantized, QuantizedTensor  # noqa: F401  (the result types)

from . import _autograd  # noqa: F401  (registers the backward formulas)
from . import _ops
from . import _quantize
from ._workspace import check, reserve as reserve_workspace
from .linear import GroupedLinear


def grouped_mm(
    x: torch.Tensor,
    w: torch.Tensor,
    group_sizes: torch.Tensor,
    *,
    w_layout: str = "nk",
    out_dtype: Optional[torch.dtype] = None,
    bias: Optional[torch.Tensor] = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Ragged-M product: y[g rows] = alpha * x[g rows] @ op(w[g]) + beta * y[g rows] + bias[g].

    x [M, K], bf16 or fp16; w [G, N, K] for w_layout "nk" (nn.Linear's
    layout: op is the transpose) or [G, K, N] for "kn", x's dtype (a
    transposed view is read in place); group_sizes [G] int32/int64 on x's
    device, sum <= M; bias [G, N]. Returns [M, N] in out_dtype (bf16, fp16 or
    fp32; default x's). Rows past the last group are not written.

    With out=, the result is written into `out` (and returned) and beta may
    accumulate into it; the out= form has no autograd.
    """
    if out is None:
        if beta != 0:
            raise ValueError(
                "beta: accumulating (beta != 0) needs out=, the tensor to accumulate into"
            )
        return _ops.grouped_mm(x, w, group_sizes, w_layout, out_dtype, bias, float(alpha))
    if out_dtype is not None and out_dtype != out.dtype:
        raise TypeError("out_dtype: %s differs from out's dtype %s" % (out_dtype, out.dtype))
    _ops.grouped_mm_out(out, x, w, group_sizes, w_layout, bias, float(alpha), float(beta))
    return out


def ragged_k_mm(
    a: torch.Tensor,
    b: torch.Tensor,
    group_sizes: torch.Tensor,
    *,
    out_dtype: Optional[torch.dtype] = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Ragged-K product: out[g] = alpha * a[g rows]^T @ b[g rows] + beta * out[g].

    a [M, P] and b [M, Q], bf16 or fp16, the same groups of rows (transposed
    views are read in place); group_sizes [G] int32/int64 on their device.
    Returns [G, P, Q] in out_dtype (default a's); a group of size 0 gets
    beta * out[g], zeros when beta is 0. With out=, writes into `out`
    (accumulating with beta, e.g. into an fp32 main-grad buffer with beta=1);
    the out= form has no autograd.
    """
    if out is None:
        if beta != 0:
            raise ValueError(
                "beta: accumulating (beta != 0) needs out=, the tensor to accumulate into"
            )
        return _ops.ragged_k_mm(a, b, group_sizes, out_dtype, float(alpha))
    if out_dtype is not None and out_dtype != out.dtype:
        raise TypeError("out_dtype: %s differs from out's dtype %s" % (out_dtype, out.dtype))
    _ops.ragged_k_mm_out(out, a, b, group_sizes, float(alpha), float(beta))
    return out


__all__ = ["GroupedLinear", "check", "grouped_mm", "ragged_k_mm", "reserve_workspace"]


def grouped_quantize(
    x: torch.Tensor,
    group_sizes: Optional[torch.Tensor] = None,
    *,
    rowwise: Optional[str] = None,
    columnwise: Optional[str] = None,
    amax: bool = False,
) -> Quantized:
    """Quantizes x [M, K] (ragged: group_sizes [G] int32/int64 on x's device)
    or stacked weights [G, N, K] (group_sizes None), bf16/fp16/fp32, into a
    rowwise output (x's shape, blocks along K) and/or a columnwise one
    (transposed: [K, M] or [G, K, N], blocks along the tokens restarting at
    every group start), in one pass. Formats: fp8_e4m3/e5m2 with _tensor or
    _group scales, fp8_e4m3/e5m2_1x128, fp8_e4m3/e5m2_128x128 (stacked only),
    mxfp8_e4m3/e5m2, nvfp4_tensor/_group. amax=True also returns each
    group's absolute maximum [G]. Entries past the last group are left
    uninitialized."""
    out = _quantize.grouped_quantize_op(x, group_sizes, rowwise, columnwise, amax)
    return core.quantized(rowwise, columnwise, amax, out)

"""Gradients of the grouped products, written with the products themselves.

For y = alpha * x[g rows] @ op(w[g]) + bias[g] (ragged-M, "nk": op = transpose):
  dgrad  dx[g rows] = alpha * dy[g rows] @ op(w[g])^T: ragged-M on the same
         w with the other w_layout, so no transposed copy is made;
  wgrad  dw[g] = alpha * dy[g]^T @ x[g] ("nk") or alpha * x[g]^T @ dy[g]
         ("kn"): ragged-K, written into an fp32 main-grad buffer with beta=1
         when the caller keeps one (GroupedLinear(main_grad=True));
  bias   dbias[g] = sum of dy[g rows]: ragged-K against a column of ones,
         accumulated in fp32. This is free of host syncs (the group of each
         row is never materialized, unlike a repeat_interleave of the sizes)
         and deterministic (no atomics, unlike index_add). The ones are
         _ONES_COLUMNS wide because GPU paths load rows in 16-byte vectors.
For out[g] = alpha * a[g rows]^T @ b[g rows] (ragged-K):
  da[g rows] = alpha * b[g rows] @ dout[g]^T,  db[g rows] = alpha * a[g rows] @ dout[g].

An input gradient of a ragged tensor is zero on rows past the last group
(those rows did not contribute): grouped_mm_zero_rest writes those zeros in
the product's own launch, so the gradient is never cleared whole first. Gradients arriving in
another dtype than the operands (an fp32 output) are cast to the operands'
dtype, since both operands of a product share one.
"""

from typing import Optional

import torch

from . import _ops
from ._registry import register_autograd

_ONES_COLUMNS = 8
_OTHER_LAYOUT = {"nk": "kn", "kn": "nk"}


def _as(grad: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return grad.to(like.dtype).contiguous()


def ragged_m_input_grad(grad, w, group_sizes, w_layout, alpha):
    """dx [M, K] for y = alpha * x @ op(w); grad in w's dtype."""
    return _ops.grouped_mm_zero_rest(grad, w, group_sizes, _OTHER_LAYOUT[w_layout], alpha)


def ragged_m_weight_grad(
    grad, x, group_sizes, w_layout, alpha, w, main_grad: Optional[torch.Tensor] = None
):
    """dw, shaped like w; or, with main_grad, accumulated into it (returns None).
    grad in x's dtype."""
    a, b = (grad, x) if w_layout == "nk" else (x, grad)
    if main_grad is not None:
        _ops.ragged_k_mm_out(main_grad, a, b, group_sizes, alpha, 1.0)
        return None
    return _ops.ragged_k_mm(a, b, group_sizes, w.dtype, alpha)


def ragged_m_bias_grad(grad, group_sizes, bias_dtype):
    """dbias [G, N]: the sum of each group's rows of grad."""
    ones = grad.new_ones((grad.shape[0], _ONES_COLUMNS))
    sums = _ops.ragged_k_mm(ones, grad, group_sizes, torch.float32, 1.0)
    return sums[:, 0].to(bias_dtype)


def ragged_m_grads(grad, x, w, group_sizes, w_layout, alpha, needs, bias_dtype, main_grad=None):
    """(dx, dw, dbias) of a ragged-M product; `needs` says which of the three
    to compute (the others are None)."""
    grad = _as(grad, x)
    needs_x, needs_w, needs_bias = needs
    dx = ragged_m_input_grad(grad, w, group_sizes, w_layout, alpha) if needs_x else None
    dw = (
        ragged_m_weight_grad(grad, x, group_sizes, w_layout, alpha, w, main_grad)
        if needs_w
        else None
    )
    dbias = ragged_m_bias_grad(grad, group_sizes, bias_dtype) if needs_bias else None
    return dx, dw, dbias


def _setup_grouped_mm(ctx, inputs, output):
    x, w, group_sizes, w_layout, _out_dtype, bias, alpha = inputs
    ctx.save_for_backward(x, w, group_sizes)
    ctx.w_layout, ctx.alpha = w_layout, alpha
    ctx.bias_dtype = None if bias is None else bias.dtype


def _grouped_mm_backward(ctx, grad):
    x, w, group_sizes = ctx.saved_tensors
    needs = tuple(ctx.needs_input_grad[i] for i in (0, 1, 5))  # x, w, bias
    dx, dw, dbias = ragged_m_grads(
        grad, x, w, group_sizes, ctx.w_layout, ctx.alpha, needs, ctx.bias_dtype
    )
    return dx, dw, None, None, None, dbias, None


def _setup_ragged_k_mm(ctx, inputs, output):
    a, b, group_sizes, _out_dtype, alpha = inputs
    ctx.save_for_backward(a, b, group_sizes)
    ctx.alpha = alpha


def _ragged_k_mm_backward(ctx, grad):
    a, b, group_sizes = ctx.saved_tensors
    da = db = None
    if ctx.needs_input_grad[0]:
        # da = alpha * b @ grad[g]^T: grad [G, P, Q] read as "nk" (N = P, K = Q).
        da = _ops.grouped_mm_zero_rest(b.contiguous(), _as(grad, b), group_sizes, "nk", ctx.alpha)
    if ctx.needs_input_grad[1]:
        # db = alpha * a @ grad[g]: grad [G, P, Q] read as "kn" (K = P, N = Q).
        db = _ops.grouped_mm_zero_rest(a.contiguous(), _as(grad, a), group_sizes, "kn", ctx.alpha)
    return da, db, None, None, None


register_autograd("grouped_mm", _grouped_mm_backward, _setup_grouped_mm)
register_autograd("ragged_k_mm", _ragged_k_mm_backward, _setup_ragged_k_mm)

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
dtype, since both operands of a product share one. A per-group alpha scales
the gradients' products per group alike; it gets no gradient itself.

A product with a quantized operand has no gradient here: GroupedLinear
with a recipe quantizes the gradients' own products (linear.py).
"""

from typing import Optional

import torch

from . import _ops
from ._registry import register_autograd
from ._views import Arg, plain

_ONES_COLUMNS = 8
_OTHER_LAYOUT = {"nk": "kn", "kn": "nk"}


def _as(grad: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return grad.to(like.dtype).contiguous()


def ragged_m_input_grad(grad, w, group_sizes, w_layout, alpha, alpha_per_group=None):
    """dx [M, K] for y = alpha * x @ op(w); grad in w's dtype."""
    return _ops.grouped_mm_zero_rest(
        *plain(grad), *plain(w), group_sizes, _OTHER_LAYOUT[w_layout], None, alpha, alpha_per_group
    )


def ragged_m_weight_grad(
    grad,
    x,
    group_sizes,
    w_layout,
    alpha,
    w,
    main_grad: Optional[torch.Tensor] = None,
    alpha_per_group: Optional[torch.Tensor] = None,
):
    """dw, shaped like w; or, with main_grad, accumulated into it (returns None).
    grad in x's dtype."""
    a, b = (grad, x) if w_layout == "nk" else (x, grad)
    if main_grad is not None:
        _ops.ragged_k_mm_out(
            main_grad, *plain(a), *plain(b), group_sizes, alpha, alpha_per_group, 1.0
        )
        return None
    return _ops.ragged_k_mm(*plain(a), *plain(b), group_sizes, w.dtype, alpha, alpha_per_group)


def ragged_m_bias_grad(grad, group_sizes, bias_dtype):
    """dbias [G, N]: the sum of each group's rows of grad."""
    ones = grad.new_ones((grad.shape[0], _ONES_COLUMNS))
    sums = _ops.ragged_k_mm(*plain(ones), *plain(grad), group_sizes, torch.float32, 1.0, None)
    return sums[:, 0].to(bias_dtype)


def ragged_m_grads(
    grad,
    x,
    w,
    group_sizes,
    w_layout,
    alpha,
    needs,
    bias_dtype,
    main_grad=None,
    alpha_per_group=None,
):
    """(dx, dw, dbias) of a ragged-M product; `needs` says which of the three
    to compute (the others are None)."""
    grad = _as(grad, x)
    needs_x, needs_w, needs_bias = needs
    dx = (
        ragged_m_input_grad(grad, w, group_sizes, w_layout, alpha, alpha_per_group)
        if needs_x
        else None
    )
    dw = (
        ragged_m_weight_grad(grad, x, group_sizes, w_layout, alpha, w, main_grad, alpha_per_group)
        if needs_w
        else None
    )
    dbias = ragged_m_bias_grad(grad, group_sizes, bias_dtype) if needs_bias else None
    return dx, dw, dbias


_NO_QUANTIZED_GRADIENT = (
    "%s: no gradient through a quantized operand; GroupedLinear(recipe=...) quantizes the "
    "gradients' products itself"
)

# The inputs of the ops (a backward returns one gradient each), and the
# positions of those with gradients.
_GROUPED_MM_INPUTS, _X, _W, _BIAS = 16, 0, 5, 13
_RAGGED_K_MM_INPUTS, _A, _B = 14, 0, 5


def _setup_grouped_mm(ctx, inputs, output):
    x, w = Arg(*inputs[0:5]), Arg(*inputs[5:10])
    group_sizes, w_layout, _out_dtype, bias, alpha, alpha_per_group = inputs[10:]
    ctx.quantized = x.quantized or w.quantized
    ctx.save_for_backward(x.data, w.data, group_sizes, alpha_per_group)
    ctx.w_layout, ctx.alpha = w_layout, alpha
    ctx.bias_dtype = None if bias is None else bias.dtype


def _grouped_mm_backward(ctx, grad):
    x, w, group_sizes, alpha_per_group = ctx.saved_tensors
    if ctx.quantized:
        raise NotImplementedError(_NO_QUANTIZED_GRADIENT % "grouped_mm")
    needs = tuple(ctx.needs_input_grad[i] for i in (_X, _W, _BIAS))
    dx, dw, dbias = ragged_m_grads(
        grad,
        x,
        w,
        group_sizes,
        ctx.w_layout,
        ctx.alpha,
        needs,
        ctx.bias_dtype,
        alpha_per_group=alpha_per_group,
    )
    grads = [None] * _GROUPED_MM_INPUTS
    grads[_X], grads[_W], grads[_BIAS] = dx, dw, dbias
    return tuple(grads)


def _setup_ragged_k_mm(ctx, inputs, output):
    a, b = Arg(*inputs[0:5]), Arg(*inputs[5:10])
    group_sizes, _out_dtype, alpha, alpha_per_group = inputs[10:]
    ctx.quantized = a.quantized or b.quantized
    ctx.save_for_backward(a.data, b.data, group_sizes, alpha_per_group)
    ctx.alpha = alpha


def _ragged_k_mm_backward(ctx, grad):
    a, b, group_sizes, alpha_per_group = ctx.saved_tensors
    if ctx.quantized:
        raise NotImplementedError(_NO_QUANTIZED_GRADIENT % "ragged_k_mm")
    grads = [None] * _RAGGED_K_MM_INPUTS
    if ctx.needs_input_grad[_A]:
        # da = alpha * b @ grad[g]^T: grad [G, P, Q] read as "nk" (N = P, K = Q).
        grads[_A] = _ops.grouped_mm_zero_rest(
            *plain(b.contiguous()), *plain(_as(grad, b)), group_sizes, "nk", None, ctx.alpha,
            alpha_per_group,
        )
    if ctx.needs_input_grad[_B]:
        # db = alpha * a @ grad[g]: grad [G, P, Q] read as "kn" (K = P, N = Q).
        grads[_B] = _ops.grouped_mm_zero_rest(
            *plain(a.contiguous()), *plain(_as(grad, a)), group_sizes, "kn", None, ctx.alpha,
            alpha_per_group,
        )
    return tuple(grads)


register_autograd("grouped_mm", _grouped_mm_backward, _setup_grouped_mm)
register_autograd("ragged_k_mm", _ragged_k_mm_backward, _setup_ragged_k_mm)

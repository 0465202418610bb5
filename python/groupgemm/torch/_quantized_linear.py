"""GroupedLinear's products under a quantization recipe (groupgemm.recipes).

Forward quantizes x once, into the rowwise copy fprop reads and, when the
weights need a gradient, the columnwise copy wgrad reads (one
grouped_quantize). The weights are quantized once per optimizer step:
WeightCache keeps their rowwise copy (fprop) and columnwise copy (dgrad)
until the weight tensor changes, which its version counter (bumped by every
in-place update, such as an optimizer step) and its address (a new tensor)
tell, so micro-batches between two steps reuse them. Backward quantizes dy
once, into the rowwise copy dgrad reads and the columnwise copy wgrad reads.

  fprop  y  = x @ w^T + bias   ragged-M, w_layout "nk" on w's rowwise copy
  dgrad  dx = dy @ w           ragged-M, w_layout "kn" on w's columnwise copy
  wgrad  dw = dy^T @ x         ragged-K over the tokens, into a new weight
                               gradient or accumulated into main_grad (beta 1)
  bias   dbias                 the sum of each group's rows of dy (16-bit)

Results (y, dx, dw) are in x's and the weight's dtypes; main_grad is fp32.
Nothing reads the group sizes on the host.
"""

from typing import Optional

import torch

from .. import core
from ..recipes import Recipe
from . import _autograd, _ops
from ._quantize import grouped_quantize
from ._views import parts


def _arrays(q: Optional[core.QuantizedTensor]) -> tuple:
    """data, block scales, fp32 scale of a copy (None for each of an absent one)."""
    return (None, None, None) if q is None else (q.data, q.block_scales, q.scale)


class WeightCache:
    """The quantized copies of one weight tensor, kept until it changes."""

    def __init__(self):
        self._key = None
        self._copies: Optional[core.Quantized] = None

    def get(self, weight: torch.Tensor, recipe: Recipe, columnwise: bool) -> core.Quantized:
        """The rowwise copy, and the columnwise one if asked for, of `weight`.
        A compiled graph quantizes the weights in the graph instead: the
        cache's key (a version counter, an address) is host state that
        tracing cannot follow, and reading it would break the graph."""
        if torch.compiler.is_compiling():
            return grouped_quantize(
                weight.detach(),
                rowwise=recipe.fprop_w,
                columnwise=recipe.dgrad_w if columnwise else None,
            )
        key = (weight._version, weight.data_ptr(), weight.device, weight.dtype, weight.shape)
        key += (recipe,)
        if self._key != key or (columnwise and self._copies.columnwise is None):
            self._copies = grouped_quantize(
                weight.detach(),
                rowwise=recipe.fprop_w,
                columnwise=recipe.dgrad_w if columnwise else None,
            )
            self._key = key
        return self._copies


def forward_only(x, weight_copies, bias, group_sizes, recipe: Recipe) -> torch.Tensor:
    """fprop without autograd."""
    qx = grouped_quantize(x, group_sizes, rowwise=recipe.fprop_x).rowwise
    return _fprop(qx, weight_copies.rowwise, bias, group_sizes, x.dtype)


def _fprop(qx, qw, bias, group_sizes, dtype) -> torch.Tensor:
    operands = parts("x", qx) + parts("weight", qw)
    return _ops.grouped_mm(*operands, group_sizes, "nk", dtype, bias, 1.0, None)


class QuantizedGroupedLinear(torch.autograd.Function):
    """y = x @ weight^T + bias per group, its products quantized by a recipe."""

    @staticmethod
    def forward(ctx, x, weight, bias, group_sizes, main_grad, recipe, weight_copies):
        needs_w = ctx.needs_input_grad[1]
        qx = grouped_quantize(
            x, group_sizes, rowwise=recipe.fprop_x, columnwise=recipe.wgrad_x if needs_w else None
        )
        ctx.save_for_backward(
            group_sizes, *_arrays(qx.columnwise), *_arrays(weight_copies.columnwise)
        )
        ctx.recipe, ctx.main_grad = recipe, main_grad
        ctx.dtypes = x.dtype, weight.dtype, None if bias is None else bias.dtype
        return _fprop(qx.rowwise, weight_copies.rowwise, bias, group_sizes, x.dtype)

    @staticmethod
    def backward(ctx, dy):
        group_sizes, *saved = ctx.saved_tensors
        recipe = ctx.recipe
        x_dtype, w_dtype, bias_dtype = ctx.dtypes
        needs_x, needs_w, needs_bias = ctx.needs_input_grad[:3]
        dy = dy.to(x_dtype).contiguous()
        qdy = grouped_quantize(
            dy,
            group_sizes,
            rowwise=recipe.dgrad_dy if needs_x else None,
            columnwise=recipe.wgrad_dy if needs_w else None,
        )
        dx = dw = dbias = None
        if needs_x:
            qw = core.QuantizedTensor(*saved[3:6], recipe.dgrad_w, True)
            operands = parts("dy", qdy.rowwise) + parts("weight", qw)
            dx = _ops.grouped_mm_zero_rest(*operands, group_sizes, "kn", x_dtype, 1.0, None)
        if needs_w:
            qx = core.QuantizedTensor(*saved[0:3], recipe.wgrad_x, True)
            operands = parts("dy", qdy.columnwise) + parts("x", qx)
            if ctx.main_grad is not None:
                _ops.ragged_k_mm_out(ctx.main_grad, *operands, group_sizes, 1.0, None, 1.0)
            else:
                dw = _ops.ragged_k_mm(*operands, group_sizes, w_dtype, 1.0, None)
        if needs_bias:
            dbias = _autograd.ragged_m_bias_grad(dy, group_sizes, bias_dtype)
        return dx, dw, dbias, None, None, None, None

"""GroupedLinear: G experts' nn.Linear layers applied in one grouped product.

weight is [G, out_features, in_features], each expert's matrix in nn.Linear's
layout, so forward is the ragged-M product with w_layout "nk". Each expert is
initialized as nn.Linear initializes its own weight and bias: uniform in
+-1/sqrt(in_features) (what kaiming_uniform_(a=sqrt(5)) gives for a 2-D
weight; applied to the 3-D tensor directly it would take its fan-in as
out_features * in_features).

main_grad=True keeps a Megatron-style fp32 gradient buffer, weight.main_grad
[G, out, in]: the backward accumulates the weight gradient into it with one
ragged-K product (beta = 1, fp32 output) instead of producing a 16-bit
weight.grad, which then stays None. The buffer is the caller's to zero (as
Megatron's optimizer does after each step) and may be replaced by the
caller (for example by a view into a contiguous gradient buffer) as long as
it stays fp32, [G, out, in], on the weight's device. Moving the module (to())
does not move it: reassign it after a move.

recipe= (a groupgemm.recipes name or Recipe) quantizes the layer's three
products as the recipe says (_quantized_linear.py): activations and
gradients once per step each, the weights once per optimizer step (kept
until the weight tensor changes, so micro-batches share them). Quantized
products run on the CPU (the library's reference) and raise NotSupported on
a GPU.
"""

import math
from typing import Optional, Union

import torch
from torch import nn

from .. import recipes
from . import _autograd, _ops, _quantized_linear
from ._views import plain


class _MainGradGroupedLinear(torch.autograd.Function):
    """Ragged-M forward whose weight gradient accumulates into main_grad."""

    @staticmethod
    def forward(ctx, x, weight, bias, group_sizes, main_grad):
        ctx.save_for_backward(x, weight, group_sizes)
        ctx.main_grad = main_grad
        ctx.bias_dtype = None if bias is None else bias.dtype
        return _ops.grouped_mm(
            *plain(x), *plain(weight), group_sizes, "nk", None, bias, 1.0, None
        )

    @staticmethod
    def backward(ctx, grad):
        x, weight, group_sizes = ctx.saved_tensors
        needs = ctx.needs_input_grad[:3]  # x, weight, bias
        dx, _, dbias = _autograd.ragged_m_grads(
            grad, x, weight, group_sizes, "nk", 1.0, needs, ctx.bias_dtype, ctx.main_grad
        )
        return dx, None, dbias, None, None


class GroupedLinear(nn.Module):
    """y[g rows] = x[g rows] @ weight[g]^T + bias[g] for each group g.

    forward(x [M, in_features], group_sizes [G] int32/int64 on x's device)
    returns [M, out_features]; rows past sum(group_sizes) are left unwritten.
    recipe: None (16-bit products), a groupgemm.recipes name or a Recipe.
    """

    def __init__(
        self,
        num_groups: int,
        in_features: int,
        out_features: int,
        bias: bool = True,
        dtype: Optional[torch.dtype] = None,
        device=None,
        main_grad: bool = False,
        recipe: Union[None, str, recipes.Recipe] = None,
    ):
        super().__init__()
        self.recipe = None if recipe is None else recipes.get(recipe)
        self._weight_copies = _quantized_linear.WeightCache()
        self.num_groups = num_groups
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(
            torch.empty(num_groups, out_features, in_features, dtype=dtype, device=device)
        )
        if bias:
            self.bias = nn.Parameter(
                torch.empty(num_groups, out_features, dtype=dtype, device=device)
            )
        else:
            self.register_parameter("bias", None)
        self.uses_main_grad = main_grad
        if main_grad:
            self.weight.main_grad = torch.zeros(
                self.weight.shape, dtype=torch.float32, device=self.weight.device
            )
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
        nn.init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -bound, bound)

    def _main_grad(self) -> torch.Tensor:
        buffer = getattr(self.weight, "main_grad", None)
        ok = (
            isinstance(buffer, torch.Tensor)
            and buffer.dtype == torch.float32
            and buffer.shape == self.weight.shape
            and buffer.device == self.weight.device
        )
        if not ok:
            raise ValueError(
                "weight.main_grad: expected an fp32 tensor of shape %s on %s"
                % (list(self.weight.shape), self.weight.device)
            )
        return buffer

    def forward(self, x: torch.Tensor, group_sizes: torch.Tensor) -> torch.Tensor:
        if self.recipe is not None:
            return self._quantized_forward(x, group_sizes)
        if self.uses_main_grad and torch.is_grad_enabled():
            return _MainGradGroupedLinear.apply(
                x, self.weight, self.bias, group_sizes, self._main_grad()
            )
        return _ops.grouped_mm(
            *plain(x), *plain(self.weight), group_sizes, "nk", None, self.bias, 1.0, None
        )

    def _quantized_forward(self, x: torch.Tensor, group_sizes: torch.Tensor) -> torch.Tensor:
        grad = torch.is_grad_enabled()
        # dgrad reads the weights' columnwise copy.
        copies = self._weight_copies.get(self.weight, self.recipe, grad and x.requires_grad)
        if not grad:
            return _quantized_linear.forward_only(x, copies, self.bias, group_sizes, self.recipe)
        main_grad = self._main_grad() if self.uses_main_grad else None
        return _quantized_linear.QuantizedGroupedLinear.apply(
            x, self.weight, self.bias, group_sizes, main_grad, self.recipe, copies
        )

    def extra_repr(self) -> str:
        return (
            "num_groups=%d, in_features=%d, out_features=%d, bias=%s, main_grad=%s, recipe=%s"
            % (
                self.num_groups,
                self.in_features,
                self.out_features,
                self.bias is not None,
                self.uses_main_grad,
                None if self.recipe is None else self.recipe.name,
            )
        )

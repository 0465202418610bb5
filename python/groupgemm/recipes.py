"""Quantization recipes of a grouped linear layer: the format of each operand
of its three products.

A layer y[g rows] = x[g rows] @ w[g]^T runs three grouped products per
training step, each contracting a different dimension, so each reads its
operands quantized along that dimension:

  fprop  y  = x @ w^T     x rowwise (blocks along K), w rowwise ([G, N, K], along K)
  dgrad  dx = dy @ w      dy rowwise (along N), w columnwise ([G, K, N], along N)
  wgrad  dw = dy^T @ x    dy and x columnwise (along the tokens, blocks
                          restarting at every group start)

x and dy are each quantized once, into both copies they need, by one
grouped_quantize; w once per optimizer step. A Recipe names the format
(core.QUANTIZE_FORMATS) of each of the six operands; the named recipes are
TransformerEngine's defaults:

  fp8_tensor     fp8 with one fp32 scale per tensor (current scaling)
  fp8_group      fp8 with one fp32 scale per group (expert): MoE's
                 equivalent of a per-tensor scale
  fp8_rowwise    fp8 with an fp32 scale per row of the stored copy: per
                 token of x and dy, per output channel of the weights (per
                 input channel of their columnwise copy), per feature and
                 group of the columnwise copies of x and dy
  fp8_blockwise  fp8 with fp32 scales per 1 x 128 block of activations and
                 gradients, per 128 x 128 tile of the weights (DeepSeek-V3's
                 recipe); wgrad is 1x128 x 1x128
  mxfp8          MX (OCP v1.0): e4m3 with an e8m0 scale per 32 elements,
                 for every operand (TransformerEngine's MXFP8BlockScaling)
  nvfp4          e2m1 with an e4m3 scale per 16 elements along the
                 contraction and an fp32 tensor scale, for every operand

The fp8 recipes quantize the forward operands to e4m3 and the gradients
(dy) to e5m2, TransformerEngine's HYBRID format, which the products pair
within one recipe. nvfp4 here is the plain format: TransformerEngine's
NVFP4 recipe also quantizes weights in 16 x 16 blocks, applies random
Hadamard transforms to the wgrad operands and rounds gradients
stochastically; none of these is a format of this library, so every
operand takes 1 x 16 blocks along its contraction, rounded to nearest.
"""

from dataclasses import dataclass, fields
from typing import Optional, Union

from . import core
from ._capi import BlockScaling


@dataclass(frozen=True)
class Recipe:
    """The format of each operand of a grouped linear layer's three products
    (a core.QUANTIZE_FORMATS name each)."""

    name: str
    fprop_x: str  # activations, rowwise copy
    fprop_w: str  # weights, rowwise copy
    dgrad_dy: str  # output gradients, rowwise copy
    dgrad_w: str  # weights, columnwise copy
    wgrad_x: str  # activations, columnwise copy
    wgrad_dy: str  # output gradients, columnwise copy

    def __post_init__(self):
        for field in fields(self)[1:]:
            fmt = getattr(self, field.name)
            if fmt not in core.QUANTIZE_FORMATS:
                raise ValueError(
                    "%s: unknown quantize format %r; one of %s"
                    % (field.name, fmt, ", ".join(sorted(core.QUANTIZE_FORMATS)))
                )
            tiled = core.QUANTIZE_FORMATS[fmt][1] == BlockScaling._128X128
            if tiled and not field.name.endswith("_w"):
                raise ValueError(
                    "%s: %s is for stacked weights only (fprop_w, dgrad_w)" % (field.name, fmt)
                )


def _recipe(name: str, forward: str, gradient: str, weights: Optional[str] = None) -> Recipe:
    weights = weights or forward
    return Recipe(name, forward, weights, gradient, weights, forward, gradient)


RECIPES = {
    recipe.name: recipe
    for recipe in (
        _recipe("fp8_tensor", "fp8_e4m3_tensor", "fp8_e5m2_tensor"),
        _recipe("fp8_group", "fp8_e4m3_group", "fp8_e5m2_group"),
        _recipe("fp8_rowwise", "fp8_e4m3_rowwise", "fp8_e5m2_rowwise"),
        _recipe("fp8_blockwise", "fp8_e4m3_1x128", "fp8_e5m2_1x128", "fp8_e4m3_128x128"),
        _recipe("mxfp8", "mxfp8_e4m3", "mxfp8_e4m3"),
        _recipe("nvfp4", "nvfp4_tensor", "nvfp4_tensor"),
    )
}


def get(recipe: Union[str, Recipe]) -> Recipe:
    """A Recipe, or the named one of RECIPES."""
    if isinstance(recipe, Recipe):
        return recipe
    if isinstance(recipe, str):
        if recipe not in RECIPES:
            raise ValueError(
                "recipe: unknown recipe %r; one of %s" % (recipe, ", ".join(RECIPES))
            )
        return RECIPES[recipe]
    raise TypeError(
        "recipe: expected a recipe name or a groupgemm.recipes.Recipe, got %s"
        % type(recipe).__name__
    )

"""Flax linen: GroupedDense, G experts' Dense layers applied in one grouped
product, and make_ragged_dot_cls, jax.lax.ragged_dot as a module class;
both in bfloat16/float16 or trained in a quantization recipe
(groupgemm.recipes, through _recipe.py).

Imported only when groupgemm.jax.GroupedDense or make_ragged_dot_cls is
first used, so flax stays optional. The kernel is [G, in_features,
features], each expert's matrix in flax.linen.Dense's layout, and is
initialized as Dense initializes its own: lecun_normal over each expert's
[in, features] (fan-in in_features, not the 3-D tensor's), bias zeros.
"""

import functools
from typing import Any, Callable, Optional, Union

import flax.linen as nn
import jax
import jax.numpy as jnp

from .. import recipes
from . import _ops, _recipe, ragged_dot

Initializer = Callable[..., Any]
RecipeLike = Optional[Union[str, recipes.Recipe]]


def _per_expert(init: Initializer) -> Initializer:
    """Applies a 2-D initializer to each expert's matrix, so fan-in is per expert."""

    def initialize(key, shape, dtype=jnp.float32):
        keys = jax.random.split(key, shape[0])
        return jnp.stack([init(k, shape[1:], dtype) for k in keys])

    return initialize


def _recipe_ragged_dot(recipe: recipes.Recipe, lhs, rhs, group_sizes, bias, out_dtype):
    out_dtype = _ops.out_dtype_of(lhs.dtype, out_dtype)
    _recipe.check(lhs, rhs, group_sizes, bias)
    return _recipe.ragged_dot(lhs, rhs, group_sizes, bias, recipe, out_dtype)


class GroupedDense(nn.Module):
    """y[g rows] = x[g rows] @ kernel[g] + bias[g] for each group g.

    __call__(x [M, in_features], group_sizes [G] int32) returns
    [M, features] in `dtype` (default x's); rows past sum(group_sizes) are
    zeros. Without a recipe x and the kernel are cast to `dtype`, which
    must be bfloat16 or float16. With `recipe` (a groupgemm.recipes name or
    Recipe), each of the three products of a training step reads its
    operands quantized in the recipe's formats, x and the kernel quantized
    as they come (bfloat16, float16 or float32), `dtype` then the output's
    (float32 too); see groupgemm.jax._recipe for what is quantized when,
    and the names a remat policy can save.
    """

    features: int
    num_groups: int
    use_bias: bool = True
    dtype: Optional[Any] = None
    param_dtype: Any = jnp.bfloat16
    kernel_init: Initializer = nn.initializers.lecun_normal()
    bias_init: Initializer = nn.initializers.zeros_init()
    recipe: RecipeLike = None

    @nn.compact
    def __call__(self, x, group_sizes):
        recipe = None if self.recipe is None else recipes.get(self.recipe)
        kernel = self.param("kernel", _per_expert(self.kernel_init),
                            (self.num_groups, x.shape[-1], self.features), self.param_dtype)
        bias = (self.param("bias", self.bias_init, (self.num_groups, self.features),
                           self.param_dtype) if self.use_bias else None)
        compute = x.dtype if self.dtype is None else self.dtype
        if recipe is not None:
            return _recipe_ragged_dot(recipe, x, kernel, group_sizes, bias, compute)
        return ragged_dot(x.astype(compute), kernel.astype(compute), group_sizes,
                          preferred_element_type=compute,
                          bias=None if bias is None else bias.astype(compute))


@functools.lru_cache(maxsize=None)
def _ragged_dot_cls(recipe: Optional[recipes.Recipe]) -> type:
    class RaggedDot(nn.Module):
        """jax.lax.ragged_dot as a module (no parameters): called as
        ragged_dot(lhs [M, K], rhs [G, K, N], group_sizes, precision=None,
        preferred_element_type=None, group_offset=None), by groupgemm in
        %s."""

        def __call__(self, lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
                     group_offset=None):
            if recipe is None:
                return ragged_dot(lhs, rhs, group_sizes, precision, preferred_element_type,
                                  group_offset)
            if group_offset is not None:
                raise NotImplementedError("group_offset: not supported by groupgemm")
            return _recipe_ragged_dot(recipe, lhs, rhs, group_sizes, None,
                                      preferred_element_type)

    name = "bf16" if recipe is None else recipe.name
    RaggedDot.__doc__ %= ("bfloat16/float16" if recipe is None else "the recipe %s" % name)
    RaggedDot.__name__ = RaggedDot.__qualname__ = "RaggedDot_%s" % name
    return RaggedDot


def make_ragged_dot_cls(recipe: RecipeLike = None) -> type:
    """A Flax linen Module class that stands in for jax.lax.ragged_dot: a
    model that takes its ragged dot as a class instantiates it (no
    parameters) and calls the instance with ragged_dot's arguments (lhs
    [M, K], rhs [G, K, N], group_sizes). recipe: None runs
    groupgemm.jax.ragged_dot (bfloat16/float16 operands); a
    groupgemm.recipes name or Recipe quantizes lhs and rhs (bfloat16,
    float16 or float32) in the recipe, gradients included, and returns
    preferred_element_type (default lhs's dtype). precision is ignored:
    products accumulate in fp32. One class per recipe."""
    return _ragged_dot_cls(None if recipe is None else recipes.get(recipe))

"""GroupedDense: G experts' Dense layers applied in one grouped product (Flax linen).

Imported only when groupgemm.jax.GroupedDense is first used, so flax stays
optional. The kernel is [G, in_features, features], each expert's matrix in
flax.linen.Dense's layout, and is initialized as Dense initializes its own:
lecun_normal over each expert's [in, features] (fan-in in_features, not the
3-D tensor's), bias zeros.
"""

from typing import Any, Callable, Optional

import flax.linen as nn
import jax
import jax.numpy as jnp

from . import ragged_dot

Initializer = Callable[..., Any]


def _per_expert(init: Initializer) -> Initializer:
    """Applies a 2-D initializer to each expert's matrix, so fan-in is per expert."""

    def initialize(key, shape, dtype=jnp.float32):
        keys = jax.random.split(key, shape[0])
        return jnp.stack([init(k, shape[1:], dtype) for k in keys])

    return initialize


class GroupedDense(nn.Module):
    """y[g rows] = x[g rows] @ kernel[g] + bias[g] for each group g.

    __call__(x [M, in_features], group_sizes [G] int32) returns
    [M, features] in `dtype` (default x's, which must be bfloat16 or
    float16); rows past sum(group_sizes) are zeros.
    """

    features: int
    num_groups: int
    use_bias: bool = True
    dtype: Optional[Any] = None
    param_dtype: Any = jnp.bfloat16
    kernel_init: Initializer = nn.initializers.lecun_normal()
    bias_init: Initializer = nn.initializers.zeros_init()

    @nn.compact
    def __call__(self, x, group_sizes):
        kernel = self.param("kernel", _per_expert(self.kernel_init),
                            (self.num_groups, x.shape[-1], self.features), self.param_dtype)
        bias = (self.param("bias", self.bias_init, (self.num_groups, self.features),
                           self.param_dtype) if self.use_bias else None)
        compute = x.dtype if self.dtype is None else self.dtype
        return ragged_dot(x.astype(compute), kernel.astype(compute), group_sizes,
                          preferred_element_type=compute,
                          bias=None if bias is None else bias.astype(compute))

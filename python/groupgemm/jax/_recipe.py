"""A grouped linear product trained in a quantization recipe
(groupgemm.recipes): y[g rows] = x[g rows] @ w[g] + bias[g], with w
[G, K, N] (jax.lax.ragged_dot's rhs, a Flax kernel), as a custom_vjp whose
three products read their operands quantized along their contraction:

  fprop  y  = x @ w      x rowwise (fprop_x); w columnwise, [G, N, K]
                         blocked along K (fprop_w)
  dgrad  dx = dy @ w^T   dy rowwise (dgrad_dy); w rowwise, [G, K, N]
                         blocked along N (dgrad_w)
  wgrad  dw = x^T @ dy   x and dy columnwise, blocked along the tokens
                         (wgrad_x, wgrad_dy): [G, K, N], w's own layout

(The recipe's w is the torch layout [G, N, K], whose rowwise copy is the one
blocked along K: here the columnwise copy of [G, K, N] is, so fprop_w is
that copy's format and dgrad_w the rowwise one's.)

Under differentiation x is quantized once, into both of its copies by one
grouped_quantize, and so is w; dy once, in the backward pass. w is
quantized on every call: in a jitted training step the parameters are an
input of the step, so there is nothing to cache between calls, and one
quantize of a [G, K, N] tensor is small next to the three products. Without
differentiation only the forward copies are made. The residuals are the
quantized copies the backward products read (x columnwise, w rowwise), not
x and w; every quantized array carries a jax.ad_checkpoint.checkpoint_name
(X_Q, W_Q; DY_Q in the backward pass), so that under jax.checkpoint a
policy such as jax.checkpoint_policies.save_only_these_names(X_Q, W_Q)
keeps them rather than quantizing again. The bias gradient is the per-group
sum of dy (_ops.bias_grad). x, w and dy may be bfloat16, float16 or
float32: the quantizer reads each as it comes.
"""

import functools

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name

from . import DY_Q, W_Q, X_Q, _ops, grouped_quantize
from ..core import Quantized


def _quantize(name, x, group_sizes=None, rowwise=None, columnwise=None) -> Quantized:
    """grouped_quantize, each array named `name` for remat policies."""
    quantized = grouped_quantize(x, group_sizes, rowwise=rowwise, columnwise=columnwise)
    return jax.tree_util.tree_map(lambda a: checkpoint_name(a, name), quantized)


def check(lhs, rhs, group_sizes, bias) -> None:
    """Raises TypeError/ValueError naming the argument."""
    for name, array, rank, shape in (("lhs", lhs, 2, "[M, K]"), ("rhs", rhs, 3, "[G, K, N]")):
        if array.dtype not in _ops.QUANTIZE_INPUT_DTYPES:
            raise TypeError("%s: dtype %s is not supported (bfloat16, float16 or float32)"
                            % (name, jnp.dtype(array.dtype).name))
        if array.ndim != rank:
            raise ValueError("%s: expected %s, got shape %s" % (name, shape, list(array.shape)))
    groups = _ops.check_group_sizes(group_sizes)
    if rhs.shape[0] != groups or rhs.shape[1] != lhs.shape[1]:
        raise ValueError("rhs: expected [G, K, N] with G = %s, K = %s, got shape %s"
                         % (groups, lhs.shape[1], list(rhs.shape)))
    if bias is not None and tuple(bias.shape) != (groups, rhs.shape[2]):
        raise ValueError("bias: expected [G, N] = [%s, %s], got shape %s"
                         % (groups, rhs.shape[2], list(bias.shape)))


def _product(lhs, rhs, group_sizes, bias, out_dtype, rhs_layout="kn"):
    return _ops.ragged_m_call(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, None, 1.0)[0]


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5))
def ragged_dot(x, w, group_sizes, bias, recipe, out_dtype):
    """y = x @ w[g] (+ bias[g]) for each group's rows, in `recipe`; the
    arguments are checked (check)."""
    qx = _quantize(X_Q, x, group_sizes, rowwise=recipe.fprop_x)
    qw = _quantize(W_Q, w, columnwise=recipe.fprop_w)
    return _product(qx.rowwise, qw.columnwise, group_sizes, bias, out_dtype)


def _ragged_dot_fwd(x, w, group_sizes, bias, recipe, out_dtype):
    qx = _quantize(X_Q, x, group_sizes, rowwise=recipe.fprop_x, columnwise=recipe.wgrad_x)
    qw = _quantize(W_Q, w, rowwise=recipe.dgrad_w, columnwise=recipe.fprop_w)
    y = _product(qx.rowwise, qw.columnwise, group_sizes, bias, out_dtype)
    # Empty arrays carry x's, w's and the bias's dtypes.
    like = lambda a: None if a is None else jnp.zeros((0,), a.dtype)  # noqa: E731
    return y, (qx.columnwise, qw.rowwise, group_sizes, like(x), like(w), like(bias))


def _ragged_dot_bwd(recipe, out_dtype, residuals, dy):
    x_columnwise, w_rowwise, group_sizes, x_like, w_like, bias_like = residuals
    qdy = _quantize(DY_Q, dy, group_sizes, rowwise=recipe.dgrad_dy, columnwise=recipe.wgrad_dy)
    dx = _product(qdy.rowwise, w_rowwise, group_sizes, None, x_like.dtype, rhs_layout="nk")
    dw = _ops.ragged_k_call(x_columnwise, qdy.columnwise, group_sizes, w_like.dtype, None,
                            1.0)[0]
    dbias = None if bias_like is None else _ops.bias_grad(dy, group_sizes, bias_like.dtype)
    return dx, dw, _ops.float0_like(group_sizes), dbias


ragged_dot.defvjp(_ragged_dot_fwd, _ragged_dot_bwd)

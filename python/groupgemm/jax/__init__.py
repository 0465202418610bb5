"""JAX front end: grouped products as XLA custom calls, with gradients, and
the grouped quantizer.

  ragged_dot(lhs, rhs, group_sizes, ...)   drop-in for jax.lax.ragged_dot (ragged-M)
  ragged_dot_k(a, b, group_sizes, ...)     ragged-K: out[g] = a[g rows]^T @ b[g rows]
                                           (either takes quantized operands)
  ragged_dot_with_flags(...)               ragged_dot, plus this call's device flags
  grouped_quantize(x, group_sizes, ...)    fp8 / MX / nvfp4, rowwise and columnwise
  grouped_quantize_with_flags(...)         grouped_quantize, plus this call's device flags
  check(flags)                             the flags as a groupgemm.DeviceFlag
  GroupedDense                             a Flax linen module (needs flax), optionally
                                           trained in a quantization recipe
  make_ragged_dot_cls(recipe)              jax.lax.ragged_dot as a Flax module class

They run as XLA FFI custom calls (libgroupgemm_jax.so, built beside
libgroupgemm.so when jax is importable at build time): on GPUs through the
library's kernels on XLA's stream, registered command-buffer compatible so
XLA may capture them in CUDA graphs; on the CPU through the library's
reference. They work under jit, grad (the products) and vmap-free code,
with int32 group sizes and without jax_enable_x64. Shape, dtype and format
errors are raised while tracing, naming the argument.

Importing groupgemm does not import this module, nor jax. Without jax this
module still imports (so that `python -m groupgemm.jax.bench --help` works),
and each function raises ModuleNotFoundError saying what to install.
"""

import numpy as np

from .. import _optional, core
from .._capi import DeviceFlag
from ..core import Quantized, QuantizedTensor

# The jax.ad_checkpoint.checkpoint_name of the quantized copies a recipe
# makes (GroupedDense(recipe=...), make_ragged_dot_cls(recipe)), for remat
# policies such as jax.checkpoint_policies.save_only_these_names(X_Q, W_Q).
X_Q = "groupgemm_x_q"  # the activations (lhs)
W_Q = "groupgemm_w_q"  # the weights (rhs)
DY_Q = "groupgemm_dy_q"  # the output gradient, in the backward pass

try:
    from . import _ops
except ModuleNotFoundError as error:
    if _optional.missing_framework(error) != "jax":
        raise
    _ops = _optional.Absent("groupgemm.jax", "jax")


def ragged_dot(
    lhs,
    rhs,
    group_sizes,
    precision=None,
    preferred_element_type=None,
    group_offset=None,
    *,
    rhs_layout: str = "kn",
    bias=None,
    alpha=1.0,
):
    """out[g rows] = alpha_g * lhs[g rows] @ op(rhs[g]) + bias[g], as jax.lax.ragged_dot.

    lhs [M, K]; rhs [G, K, N] (rhs_layout "kn", jax.lax.ragged_dot's layout)
    or [G, N, K] ("nk", nn.Linear's; read transposed in place); group_sizes
    [G] int32 or int64, summing to at most M (group g owns the rows after
    the groups before it). Returns [M, N]; rows past sum(group_sizes) are
    zeros, as in jax.lax.ragged_dot. lhs and rhs share one dtype, bfloat16
    or float16, or either is quantized (below); the result has
    preferred_element_type (bfloat16, float16 or float32), default the
    16-bit operands' dtype (bfloat16 where both are quantized). Products
    accumulate in fp32 whatever `precision` says. group_offset (sharded
    groups) is not supported. bias [G, N], optional, is added to each
    group's rows. alpha: a number, or an fp32 array [G] (alpha_g).

    Quantized operands: a QuantizedTensor, one copy of what
    grouped_quantize returns, holds the operand's values (data * block
    scale * scale): lhs its rowwise copy; rhs the copy whose blocks run
    along K, the rowwise copy of [G, N, K] weights for "nk" or the
    columnwise copy of [G, K, N] weights for "kn" (a columnwise copy is the
    transpose, so rhs_layout names the layout of the weights it was
    quantized from); formats without block scales (fp8 with tensor or
    group scales) and 128x128 tiles take either copy. Both operands follow
    one recipe (fp8 with tensor/group scales, fp8 rowwise, fp8 1x128 lhs
    with 1x128 or 128x128 rhs, MX, nvfp4; e4m3 and e5m2 mix, and so do the
    MX element types), or lhs is bfloat16/float16 and rhs is quantized
    (weight-only: fp8 with tensor/group scales or rowwise, mxfp8, mxfp4,
    nvfp4). The CPU runs every format (the library's reference); a product
    that no GPU path runs raises groupgemm.NotSupported, naming why, when
    it is lowered for a GPU (where its inputs are placed decides).

    Differentiable in lhs, rhs and bias, with our own kernels for every
    gradient; a product with a quantized operand in its bias only (asking
    for another of its gradients, or a per-group alpha's, raises TypeError;
    GroupedDense's recipes train quantized). Group sizes that are negative
    or sum past M are clamped (a negative size counts as 0, groups are cut
    at M); ragged_dot_with_flags reports them.
    """
    return _ragged_dot(lhs, rhs, group_sizes, precision, preferred_element_type, group_offset,
                       rhs_layout, bias, alpha, differentiable=True)


def ragged_dot_with_flags(
    lhs,
    rhs,
    group_sizes,
    precision=None,
    preferred_element_type=None,
    group_offset=None,
    *,
    rhs_layout: str = "kn",
    bias=None,
    alpha=1.0,
):
    """(out, flags): ragged_dot's result and a uint32 scalar array holding the
    GG_DEVICE_* bits of this call (0 when the group sizes were sane). Not
    differentiable; check(flags) turns the bits into a DeviceFlag."""
    return _ragged_dot(lhs, rhs, group_sizes, precision, preferred_element_type, group_offset,
                       rhs_layout, bias, alpha, differentiable=False)


def _ragged_dot(lhs, rhs, group_sizes, precision, preferred_element_type, group_offset,
                rhs_layout, bias, alpha, differentiable):
    del precision  # products always accumulate in fp32
    if group_offset is not None:
        raise NotImplementedError("group_offset: not supported by groupgemm.jax.ragged_dot")
    alphas, alpha = _ops.split_alpha(alpha)
    out_dtype = _ops.product_out_dtype(("lhs", "rhs"), (lhs, rhs), preferred_element_type)
    _ops.check_ragged_m(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alphas)
    if differentiable:
        return _ops.ragged_m(lhs, rhs, group_sizes, bias, alphas, rhs_layout, out_dtype, alpha)
    return _ops.ragged_m_call(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alphas, alpha,
                              flags=True)


def ragged_dot_k(a, b, group_sizes, *, preferred_element_type=None, alpha=1.0):
    """out[g] = alpha_g * a[g rows]^T @ b[g rows]: the ragged-K product (wgrad).

    a [M, P] and b [M, Q] hold the same groups of rows; group_sizes [G]
    int32 or int64. Returns [G, P, Q] in preferred_element_type (default
    the 16-bit operands' dtype, bfloat16 where both are quantized); a group
    of size 0 gives zeros. alpha: a number, or an fp32 array [G]. This is
    jax.lax.ragged_dot_general with a ragged contracting dimension, lhs = a^T
    (dimension numbers (([0], [0]), ([], [])), lhs_ragged_dimensions=[0]).

    a and b are bfloat16/float16 arrays of one dtype, or both
    QuantizedTensors of one recipe: their columnwise copies ([P, M] and
    [Q, M], blocks along the tokens, restarting at every group), or either
    copy of a format without block scales. Differentiable in 16-bit a and
    b; quantized operands are constants of differentiation (asking for
    their gradient raises TypeError).
    """
    alphas, alpha = _ops.split_alpha(alpha)
    out_dtype = _ops.product_out_dtype(("a", "b"), (a, b), preferred_element_type)
    _ops.check_ragged_k(a, b, group_sizes, out_dtype, alphas)
    return _ops.ragged_k(a, b, group_sizes, alphas, out_dtype, alpha)


def grouped_quantize(x, group_sizes=None, *, rowwise=None, columnwise=None,
                     amax: bool = False) -> Quantized:
    """Quantizes x [M, K] (ragged: group_sizes [G] int32 or int64) or stacked
    weights [G, N, K] (group_sizes None), bfloat16, float16 or float32, into
    a rowwise output (x's shape, blocks along K) and/or a columnwise one
    (transposed: [K, M] or [G, K, N], blocks along the tokens restarting at
    every group start), in one pass; as groupgemm.torch.grouped_quantize.

    Formats (rowwise=, columnwise=): fp8_e4m3/e5m2 with _tensor or _group
    scales, fp8_e4m3/e5m2_rowwise (a scale per row; columnwise, per group),
    fp8_e4m3/e5m2_1x128, fp8_e4m3/e5m2_128x128 (stacked only),
    mxfp8_e4m3/e5m2, mxfp4, nvfp4_tensor/_group. amax=True also returns
    each group's (stacked: each matrix's) absolute maximum [G], float32.

    Returns Quantized(rowwise, columnwise, amax), each output a
    QuantizedTensor(data, block_scales, scale, format, columnwise) with
    None where not asked for or where the format has none; dequantized:
    data * block scale * scale. A QuantizedTensor is a pytree (its arrays
    the leaves, its format and copy static), and an operand of ragged_dot
    and ragged_dot_k. The arrays are those of the torch front end
    (core.quantize_arrays): fp8 data is jnp.float8_e4m3fn / float8_e5m2;
    nvfp4 and mxfp4 data is uint8, two e2m1 elements per byte (the even one
    in the low nibble), so its last dimension is half the element count;
    e8m0 (MX) and ue4m3 (nvfp4) block scales are uint8 bytes, 1x128,
    128x128 and rowwise block scales float32; fp32 scales are [1] (_tensor)
    or [G] (_group). Entries past the last
    group (rows, or columnwise block-scale capacity no group uses) are left
    undefined, as the library never writes them. Not differentiable. Group
    sizes that are negative or sum past M are clamped, as in ragged_dot;
    grouped_quantize_with_flags reports them.
    """
    _ops.check_quantize(x, group_sizes, rowwise, columnwise, amax)
    arrays, _ = _ops.quantize_call(x, group_sizes, rowwise, columnwise, amax)
    return core.quantized(rowwise, columnwise, amax, arrays)


def grouped_quantize_with_flags(x, group_sizes=None, *, rowwise=None, columnwise=None,
                                amax: bool = False):
    """(Quantized, flags): grouped_quantize's result and a uint32 scalar
    array holding the GG_DEVICE_* bits of this call; check(flags) turns the
    bits into a DeviceFlag."""
    _ops.check_quantize(x, group_sizes, rowwise, columnwise, amax)
    arrays, flags = _ops.quantize_call(x, group_sizes, rowwise, columnwise, amax, flags=True)
    return core.quantized(rowwise, columnwise, amax, arrays), flags


def check(flags) -> DeviceFlag:
    """The GG_DEVICE_* bits of a *_with_flags call's `flags`, read on the
    host (this waits for the computation): falsy when the sizes were sane."""
    return DeviceFlag(int(np.asarray(flags)))


def __getattr__(name):
    if name in ("GroupedDense", "make_ragged_dot_cls"):  # flax is optional: imported on first use
        from . import linen

        return getattr(linen, name)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = [
    "DY_Q",
    "GroupedDense",
    "Quantized",
    "QuantizedTensor",
    "W_Q",
    "X_Q",
    "check",
    "grouped_quantize",
    "grouped_quantize_with_flags",
    "make_ragged_dot_cls",
    "ragged_dot",
    "ragged_dot_k",
    "ragged_dot_with_flags",
]

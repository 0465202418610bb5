"""JAX front end: grouped products as XLA custom calls, with gradients.

  ragged_dot(lhs, rhs, group_sizes, ...)   drop-in for jax.lax.ragged_dot (ragged-M)
  ragged_dot_k(a, b, group_sizes, ...)     ragged-K: out[g] = a[g rows]^T @ b[g rows]
  ragged_dot_with_flags(...)               ragged_dot, plus this call's device flags
  check(flags)                             the flags as a groupgemm.DeviceFlag
  GroupedDense                             a Flax linen module (needs flax)

The products run as XLA FFI custom calls (libgroupgemm_jax.so, built beside
libgroupgemm.so when jax is importable at build time): on GPUs through the
library's kernels on XLA's stream, registered command-buffer compatible so
XLA may capture them in CUDA graphs; on the CPU through the library's
reference. They work under jit, grad and vmap-free code, with int32 group
sizes and without jax_enable_x64. Shape and dtype errors are raised while
tracing, naming the argument.

Importing groupgemm does not import this module, nor jax.
"""

import numpy as np

from .._capi import DeviceFlag
from . import _ops


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
    alpha: float = 1.0,
):
    """out[g rows] = alpha * lhs[g rows] @ op(rhs[g]) + bias[g], as jax.lax.ragged_dot.

    lhs [M, K]; rhs [G, K, N] (rhs_layout "kn", jax.lax.ragged_dot's layout)
    or [G, N, K] ("nk", nn.Linear's; read transposed in place); group_sizes
    [G] int32 or int64, summing to at most M (group g owns the rows after
    the groups before it). Returns [M, N]; rows past sum(group_sizes) are
    zeros, as in jax.lax.ragged_dot. lhs and rhs share one dtype, bfloat16
    or float16; the result has preferred_element_type (bfloat16, float16 or
    float32), default the operands' dtype. Products accumulate in fp32
    whatever `precision` says. group_offset (sharded groups) is not
    supported. bias [G, N], optional, is added to each group's rows.

    Differentiable in lhs, rhs and bias, with our own kernels for every
    gradient. Group sizes that are negative or sum past M are clamped (a
    negative size counts as 0, groups are cut at M); ragged_dot_with_flags
    reports them.
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
    alpha: float = 1.0,
):
    """(out, flags): ragged_dot's result and a uint32 scalar array holding the
    GG_DEVICE_* bits of this call (0 when the group sizes were sane). Not
    differentiable; check(flags) turns the bits into a DeviceFlag."""
    return _ragged_dot(lhs, rhs, group_sizes, precision, preferred_element_type, group_offset,
                       rhs_layout, bias, alpha, differentiable=False)


def _ragged_dot(lhs, rhs, group_sizes, precision, preferred_element_type, group_offset,
                rhs_layout, bias, alpha, differentiable):
    del precision  # bf16/fp16 products always accumulate in fp32
    if group_offset is not None:
        raise NotImplementedError("group_offset: not supported by groupgemm.jax.ragged_dot")
    _ops.check_ragged_m(lhs, rhs, group_sizes, bias, rhs_layout)
    out_dtype = _ops.out_dtype_of(lhs.dtype, preferred_element_type)
    if differentiable:
        return _ops.ragged_m(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, float(alpha))
    return _ops.ragged_m_call(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, float(alpha))


def ragged_dot_k(a, b, group_sizes, *, preferred_element_type=None, alpha: float = 1.0):
    """out[g] = alpha * a[g rows]^T @ b[g rows]: the ragged-K product (wgrad).

    a [M, P] and b [M, Q] hold the same groups of rows; group_sizes [G]
    int32 or int64. Returns [G, P, Q] in preferred_element_type (default
    a's dtype); a group of size 0 gives zeros. This is
    jax.lax.ragged_dot_general with a ragged contracting dimension, lhs = a^T
    (dimension numbers (([0], [0]), ([], [])), lhs_ragged_dimensions=[0]).
    Differentiable in a and b.
    """
    _ops.check_ragged_k(a, b, group_sizes)
    out_dtype = _ops.out_dtype_of(a.dtype, preferred_element_type)
    return _ops.ragged_k(a, b, group_sizes, out_dtype, float(alpha))


def check(flags) -> DeviceFlag:
    """The GG_DEVICE_* bits of ragged_dot_with_flags' `flags`, read on the
    host (this waits for the computation): falsy when the sizes were sane."""
    return DeviceFlag(int(np.asarray(flags)))


def __getattr__(name):
    if name == "GroupedDense":  # flax is optional: imported on first use
        from .linen import GroupedDense

        return GroupedDense
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


__all__ = ["GroupedDense", "check", "ragged_dot", "ragged_dot_k", "ragged_dot_with_flags"]

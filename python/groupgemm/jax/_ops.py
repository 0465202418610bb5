"""The products and the quantizer as XLA custom calls, with their trace-time
checks, and the products' VJPs.

  ragged_m(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alpha)
      out[g rows] = alpha * lhs[g rows] @ op(rhs[g]) + bias[g]; rows past the
      last group are zeros (jax.lax.ragged_dot's definition).
  ragged_k(a, b, group_sizes, out_dtype, alpha)
      out[g] = alpha * a[g rows]^T @ b[g rows]; an empty group gives zeros.
  quantize_call(x, group_sizes, rowwise, columnwise, amax, flags)
      grouped quantize: the seven arrays of core.quantized, not differentiable.

Each custom call's results are allocated by XLA, its workspace last. With
flags=True, the workspace's first word comes back as `flags`, a uint32
scalar array holding the GG_DEVICE_* bits of this call (group sizes that
were negative or summed past M, which the kernels clamp by the library's
rule: a negative size counts as 0, the groups are cut at M). Without, the
handlers neither clear nor copy that word (None comes back): a GEMM then
launches nothing before the library's kernels but the clearing of a
ragged-M output's rows past the last group.

Gradients are our own products, as in the torch front end:
  ragged-M  dlhs = ragged-M of the cotangent with rhs read in the other
            layout (a flag, no transposed copy); drhs = ragged-K (lhs^T . dout
            per group, or dout^T . lhs for rhs [G, N, K]); dbias = ragged-K
            against a column of ones, in fp32; group_sizes gets float0.
  ragged-K  da = ragged-M of b by dout[g] read as [N, K]; db = ragged-M of a
            by dout[g] read as [K, N].
Cotangents arriving in another dtype than the operands (an fp32 output) are
cast to the operands' dtype, since both operands of a product share one.
"""

import functools
from typing import Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import core
from .._capi import DType, IndexType, Layout, Path
from ..errors import GroupGemmError
from . import _ffi

OPERAND_DTYPES = (jnp.bfloat16, jnp.float16)
OUT_DTYPES = (jnp.bfloat16, jnp.float16, jnp.float32)
RHS_LAYOUTS = ("kn", "nk")
_OTHER_LAYOUT = {"kn": "nk", "nk": "kn"}
_ONES_COLUMNS = 8  # GPU paths load rows in 16-byte vectors
# Stands in for device addresses when only the library's checks and its
# workspace query run (at trace time): aligned for every path, never read.
_PLACEHOLDER_ADDRESS = 1 << 16
_GPU_ALIGNMENT = 256  # what GPU paths demand of a workspace (kWorkspaceAlignment)

_DTYPES = {
    np.dtype(jnp.bfloat16): DType.BF16,
    np.dtype(jnp.float16): DType.FP16,
    np.dtype(jnp.float32): DType.FP32,
    np.dtype(jnp.int32): IndexType.INT32,
    np.dtype(jnp.int64): IndexType.INT64,
}


# ---- trace-time checks --------------------------------------------------------


def _name(dtype) -> str:
    return np.dtype(dtype).name


def check_operand_dtypes(first_name: str, first, second_name: str, second) -> None:
    if first.dtype not in OPERAND_DTYPES:
        raise TypeError(
            "%s: dtype %s is not supported (bfloat16 or float16; for float32 data, cast the "
            "operands to bfloat16 and pass preferred_element_type=jnp.float32)"
            % (first_name, _name(first.dtype))
        )
    if second.dtype != first.dtype:
        raise TypeError(
            "%s: dtype %s differs from %s's %s"
            % (second_name, _name(second.dtype), first_name, _name(first.dtype))
        )


def out_dtype_of(operand_dtype, preferred_element_type, name="preferred_element_type"):
    if preferred_element_type is None:
        return np.dtype(operand_dtype)
    dtype = np.dtype(preferred_element_type)
    if dtype not in OUT_DTYPES:
        raise TypeError(
            "%s: %s is not an output type (bfloat16, float16 or float32)" % (name, dtype.name)
        )
    return dtype


def check_group_sizes(group_sizes, groups: Optional[int] = None) -> int:
    if group_sizes.ndim != 1:
        raise ValueError(
            "group_sizes: expected a 1-D array [G], got shape %s" % list(group_sizes.shape)
        )
    if group_sizes.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError("group_sizes: expected int32 or int64, got %s" % _name(group_sizes.dtype))
    if group_sizes.shape[0] == 0:
        raise ValueError("group_sizes: needs at least one group")
    return group_sizes.shape[0]


def _operand(name: str, array, data: int = _PLACEHOLDER_ADDRESS) -> core.Operand:
    shape = tuple(int(d) for d in array.shape)
    strides, packed = [], 1
    for extent in reversed(shape):
        strides.append(packed)
        packed *= extent
    element = _DTYPES[np.dtype(array.dtype)]
    return core.Operand(name, data, element, shape, tuple(reversed(strides)), "xla")


# ---- workspace ------------------------------------------------------------------


@functools.lru_cache(maxsize=1024)
def _workspace_bytes(key) -> Tuple[int, Optional[str]]:
    """Workspace bytes for the largest need of any path (the platform is not
    known while tracing), from the library's own query on a descriptor with
    placeholder addresses; and, when no GPU path takes the problem, why.
    The reference takes every problem the checks above let through, so its
    refusal is raised."""
    build = _DESCRIBERS[key[0]]
    nbytes = core.workspace_size(build(key, Path.REFERENCE))
    gpu_sizes, why_not = [], []
    for path in (Path.PORTABLE, Path.SM90):
        try:
            gpu_sizes.append(core.workspace_size(build(key, path)))
        except GroupGemmError as e:
            why_not.append("%s: %s" % (path.name.lower(), e))
    # + _GPU_ALIGNMENT: the CUDA handlers align the start themselves.
    nbytes = max([nbytes] + [size + _GPU_ALIGNMENT for size in gpu_sizes])
    return nbytes, None if gpu_sizes else "; ".join(why_not)


def _struct(shape, dtype, manual):
    """A custom call's result type, varying over the manual mesh axes
    `manual` names (shard_map): an FFI result carries none of its own, and
    under check_vma a gradient must vary as its operand does."""
    if manual.empty:
        return jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype))
    return jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype), manual_axis_type=manual,
                                sharding=jax.NamedSharding(jax.sharding.get_abstract_mesh(),
                                                           jax.P()))


def _manual_axes(*operands):
    """The manual mesh axes a call's results vary over: those of its operands
    (a call's operands are made to vary alike, so the widest set is all)."""
    types = [jax.typeof(a).manual_axis_type for a in operands if a is not None]
    return max(types, key=lambda manual: len(manual.varying))


def _describe_ragged_m(key, path):
    _, lhs, rhs, sizes, bias, out, rhs_layout = key
    return core.ragged_m(
        _operand("lhs", lhs),
        _operand("rhs", rhs),
        _operand("out", out),
        _operand("group_sizes", sizes),
        w_layout=rhs_layout,
        bias=None if bias is None else _operand("bias", bias),
        path=path,
    )


def _describe_ragged_k(key, path):
    _, a, b, sizes, out = key
    return core.ragged_k(
        _operand("a", a), _operand("b", b), _operand("out", out), _operand("group_sizes", sizes),
        path=path,
    )


def _describe_quantize(key, path):
    _, x, sizes, rowwise, columnwise, amax = key

    def output(fmt):
        if fmt is None:
            return None
        address = _PLACEHOLDER_ADDRESS
        return core.QuantizedOutput(fmt, address, address, address)

    return core.grouped_quantize(
        _operand("x", x),
        None if sizes is None else _operand("group_sizes", sizes),
        output(rowwise),
        output(columnwise),
        _PLACEHOLDER_ADDRESS if amax else 0,
        path=path,
    )


_DESCRIBERS = {
    "ragged_m": _describe_ragged_m,
    "ragged_k": _describe_ragged_k,
    "quantize": _describe_quantize,
}


class _Spec(tuple):
    """A hashable (shape, dtype) pair standing for an array in cache keys."""

    def __new__(cls, array):
        return super().__new__(cls, (tuple(int(d) for d in array.shape), np.dtype(array.dtype)))

    shape = property(lambda self: self[0])
    dtype = property(lambda self: self[1])


def _workspace_for(key) -> int:
    nbytes, gpu_why_not = _workspace_bytes(key)
    if gpu_why_not is not None and jax.default_backend() == "gpu":
        raise ValueError("groupgemm: no GPU path runs this product: %s" % gpu_why_not)
    return nbytes


def _flags(workspace, flags: bool):
    if not flags:
        return None
    return jax.lax.bitcast_convert_type(workspace[:4], jnp.uint32)


# ---- the custom calls -------------------------------------------------------------


def ragged_m_call(lhs, rhs, group_sizes, bias, rhs_layout: str, out_dtype, alpha: float,
                  flags: bool = False):
    """(out, flags) of one ragged-M custom call, flags None unless asked
    for; the arguments are checked."""
    _ffi.library()
    rows = lhs.shape[0]
    cols = rhs.shape[2] if rhs_layout == "kn" else rhs.shape[1]
    manual = _manual_axes(lhs, rhs, group_sizes, bias)
    out = _struct((rows, cols), out_dtype, manual)
    key = ("ragged_m", _Spec(lhs), _Spec(rhs), _Spec(group_sizes),
           None if bias is None else _Spec(bias), _Spec(out), rhs_layout)
    workspace = _struct((_workspace_for(key),), np.uint8, manual)
    call = jax.ffi.ffi_call("groupgemm_ragged_m", (out, workspace))
    result, ws = call(
        lhs,
        rhs,
        group_sizes,
        jnp.zeros((0,), out_dtype) if bias is None else bias,
        rhs_layout=np.int32(Layout.N if rhs_layout == "kn" else Layout.T),
        has_bias=np.int32(bias is not None),
        alpha=np.float32(alpha),
        flags=np.int32(flags),
    )
    return result, _flags(ws, flags)


def ragged_k_call(a, b, group_sizes, out_dtype, alpha: float, flags: bool = False):
    """(out, flags) of one ragged-K custom call, flags None unless asked
    for; the arguments are checked."""
    _ffi.library()
    manual = _manual_axes(a, b, group_sizes)
    out = _struct((group_sizes.shape[0], a.shape[1], b.shape[1]), out_dtype, manual)
    key = ("ragged_k", _Spec(a), _Spec(b), _Spec(group_sizes), _Spec(out))
    workspace = _struct((_workspace_for(key),), np.uint8, manual)
    call = jax.ffi.ffi_call("groupgemm_ragged_k", (out, workspace))
    result, ws = call(a, b, group_sizes, alpha=np.float32(alpha), flags=np.int32(flags))
    return result, _flags(ws, flags)


def check_ragged_m(lhs, rhs, group_sizes, bias, rhs_layout: str) -> Tuple[int, int]:
    """Raises TypeError/ValueError naming the argument; returns (M, N)."""
    if rhs_layout not in RHS_LAYOUTS:
        raise ValueError("rhs_layout: expected 'kn' ([G, K, N]) or 'nk' ([G, N, K]), got %r"
                         % (rhs_layout,))
    if lhs.ndim != 2:
        raise ValueError("lhs: expected [M, K], got shape %s" % list(lhs.shape))
    expected = "[G, K, N]" if rhs_layout == "kn" else "[G, N, K]"
    if rhs.ndim != 3:
        raise ValueError("rhs: expected %s (rhs_layout %r), got shape %s"
                         % (expected, rhs_layout, list(rhs.shape)))
    check_operand_dtypes("lhs", lhs, "rhs", rhs)
    groups = check_group_sizes(group_sizes)
    if rhs.shape[0] != groups:
        raise ValueError("rhs: has %s groups (shape %s), but group_sizes has %s"
                         % (rhs.shape[0], list(rhs.shape), groups))
    kn = rhs_layout == "kn"
    depth, cols = (rhs.shape[1], rhs.shape[2]) if kn else (rhs.shape[2], rhs.shape[1])
    if depth != lhs.shape[1]:
        raise ValueError("rhs: K = %s (shape %s, rhs_layout %r), but lhs has K = %s"
                         % (depth, list(rhs.shape), rhs_layout, lhs.shape[1]))
    if bias is not None:
        if tuple(bias.shape) != (groups, cols):
            raise ValueError("bias: expected [G, N] = [%s, %s], got shape %s"
                             % (groups, cols, list(bias.shape)))
        out_dtype_of(bias.dtype, bias.dtype, "bias")
    return lhs.shape[0], cols


def check_ragged_k(a, b, group_sizes) -> None:
    if a.ndim != 2:
        raise ValueError("a: expected [M, P], got shape %s" % list(a.shape))
    if b.ndim != 2:
        raise ValueError("b: expected [M, Q], got shape %s" % list(b.shape))
    check_operand_dtypes("a", a, "b", b)
    check_group_sizes(group_sizes)
    if b.shape[0] != a.shape[0]:
        raise ValueError("b: has %s rows, but a has %s (both hold the same groups of rows)"
                         % (b.shape[0], a.shape[0]))


# ---- grouped quantize -------------------------------------------------------------

QUANTIZE_INPUT_DTYPES = (jnp.bfloat16, jnp.float16, jnp.float32)
_NOT_ASKED = -1  # the handler's dtype code of an output not asked for


def check_quantize(x, group_sizes, rowwise, columnwise, amax: bool) -> None:
    """Raises TypeError/ValueError naming the argument."""
    if x.dtype not in QUANTIZE_INPUT_DTYPES:
        raise TypeError("x: dtype %s is not supported (bfloat16, float16 or float32)"
                        % _name(x.dtype))
    stacked = group_sizes is None
    if x.ndim != (3 if stacked else 2):
        raise ValueError("x: expected %s, got shape %s" % (
            "[G, N, K] (stacked weights: group_sizes is None)" if stacked
            else "[M, K] (ragged by group_sizes)", list(x.shape)))
    if not stacked:
        check_group_sizes(group_sizes)
    core.check_quantize_request(rowwise, columnwise, amax, stacked)


def quantize_call(x, group_sizes, rowwise, columnwise, amax: bool, flags: bool = False):
    """(arrays, flags) of one quantize custom call, `arrays` the seven of
    core.quantized (empty placeholders where not asked for), flags None
    unless asked for; the arguments are checked."""
    _ffi.library()
    groups = x.shape[0] if group_sizes is None else group_sizes.shape[0]
    manual = _manual_axes(x, group_sizes)
    empty = _struct((0,), np.uint8, manual)
    results, options = [], {"amax": np.int32(amax), "flags": np.int32(flags)}
    for side, fmt in (("rowwise", rowwise), ("columnwise", columnwise)):
        if fmt is None:
            results += [empty] * 3
            options.update({side + "_dtype": np.int32(_NOT_ASKED),
                            side + "_block_scaling": np.int32(0),
                            side + "_scale_extent": np.int32(0)})
            continue
        arrays = core.quantize_arrays(fmt, tuple(x.shape), groups, side == "columnwise")
        results += [empty if a is None else _struct(a.shape, getattr(jnp, a.dtype), manual)
                    for a in arrays]
        dtype, scaling, extent = core.quantize_format(fmt)
        options.update({side + "_dtype": np.int32(dtype),
                        side + "_block_scaling": np.int32(scaling),
                        side + "_scale_extent": np.int32(extent)})
    results.append(_struct((groups,), np.float32, manual) if amax else empty)
    key = ("quantize", _Spec(x), None if group_sizes is None else _Spec(group_sizes),
           rowwise, columnwise, amax)
    results.append(_struct((_workspace_for(key),), np.uint8, manual))
    call = jax.ffi.ffi_call("groupgemm_quantize", tuple(results))
    # Stacked input has no sizes: an empty placeholder the handlers ignore.
    sizes = jnp.zeros((0,), jnp.int32) if group_sizes is None else group_sizes
    *arrays, workspace = call(x, sizes, **options)
    return arrays, _flags(workspace, flags)


# ---- ragged-M with its VJP -------------------------------------------------------


def _float0_like(group_sizes):
    return np.zeros(group_sizes.shape, dtype=jax.dtypes.float0)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5, 6))
def ragged_m(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alpha):
    return ragged_m_call(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alpha)[0]


def _ragged_m_fwd(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alpha):
    out = ragged_m_call(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alpha)[0]
    # Residuals are arrays: an empty one carries the bias dtype, if any.
    bias_like = None if bias is None else jnp.zeros((0,), bias.dtype)
    return out, (lhs, rhs, group_sizes, bias_like)


def _ragged_m_bwd(rhs_layout, out_dtype, alpha, residuals, grad):
    lhs, rhs, group_sizes, bias_like = residuals
    grad = grad.astype(lhs.dtype)
    dlhs = ragged_m_call(grad, rhs, group_sizes, None, _OTHER_LAYOUT[rhs_layout], lhs.dtype,
                         alpha)[0]
    a, b = (lhs, grad) if rhs_layout == "kn" else (grad, lhs)
    drhs = ragged_k_call(a, b, group_sizes, rhs.dtype, alpha)[0]
    dbias = None
    if bias_like is not None:
        ones = jnp.ones((grad.shape[0], _ONES_COLUMNS), grad.dtype)
        dbias = ragged_k_call(ones, grad, group_sizes, jnp.float32, 1.0)[0][:, 0, :]
        dbias = dbias.astype(bias_like.dtype)
    return dlhs, drhs, _float0_like(group_sizes), dbias


ragged_m.defvjp(_ragged_m_fwd, _ragged_m_bwd)


# ---- ragged-K with its VJP -------------------------------------------------------


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def ragged_k(a, b, group_sizes, out_dtype, alpha):
    return ragged_k_call(a, b, group_sizes, out_dtype, alpha)[0]


def _ragged_k_fwd(a, b, group_sizes, out_dtype, alpha):
    return ragged_k_call(a, b, group_sizes, out_dtype, alpha)[0], (a, b, group_sizes)


def _ragged_k_bwd(out_dtype, alpha, residuals, grad):
    a, b, group_sizes = residuals
    grad = grad.astype(a.dtype)
    # da[g rows] = b[g rows] @ grad[g]^T: grad [G, P, Q] read as [G, N, K] (N = P, K = Q).
    da = ragged_m_call(b, grad, group_sizes, None, "nk", a.dtype, alpha)[0]
    # db[g rows] = a[g rows] @ grad[g]: grad read as [G, K, N] (K = P, N = Q).
    db = ragged_m_call(a, grad, group_sizes, None, "kn", b.dtype, alpha)[0]
    return da, db, _float0_like(group_sizes)


ragged_k.defvjp(_ragged_k_fwd, _ragged_k_bwd)

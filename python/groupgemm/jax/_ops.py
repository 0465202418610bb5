"""The products and the quantizer as XLA custom calls, with their trace-time
checks, and the products' VJPs.

  ragged_m(lhs, rhs, group_sizes, bias, alphas, rhs_layout, out_dtype, alpha)
      out[g rows] = alpha_g * lhs[g rows] @ op(rhs[g]) + bias[g]; rows past the
      last group are zeros (jax.lax.ragged_dot's definition).
  ragged_k(a, b, group_sizes, alphas, out_dtype, alpha)
      out[g] = alpha_g * a[g rows]^T @ b[g rows]; an empty group gives zeros.
  quantize_call(x, group_sizes, rowwise, columnwise, amax, flags)
      grouped quantize: the seven arrays of core.quantized, not differentiable.

An operand is a bfloat16/float16 array or a core.QuantizedTensor, one copy of
what grouped_quantize returns (registered here as a pytree: its arrays are
the children, its format and copy static). alpha_g is `alpha` (a host
value, an attribute of the call) or, where `alphas` is an fp32 array [G],
alphas[g]. Each custom call's operands are three buffers (data, block
scales, fp32 scale; empty where there are none); its attributes, the
operands' scaling and C layouts, are read from the descriptor that
groupgemm.core builds while tracing, which runs every check (core's and the
library's) on placeholder addresses: what is checked is what the handler
builds. Each custom call's results are allocated by XLA, its workspace
last. With flags=True, the workspace's first word comes back as `flags`, a
uint32 scalar array holding the GG_DEVICE_* bits of this call (group sizes
that were negative or summed past M, which the kernels clamp by the
library's rule: a negative size counts as 0, the groups are cut at M).
Without, the handlers neither clear nor copy that word (None comes back): a
GEMM then launches nothing before the library's kernels but the clearing of
a ragged-M output's rows past the last group.

Gradients are our own products, as in the torch front end:
  ragged-M  dlhs = ragged-M of the cotangent with rhs read in the other
            layout (a flag, no transposed copy); drhs = ragged-K (lhs^T . dout
            per group, or dout^T . lhs for rhs [G, N, K]); dbias = ragged-K
            against a column of ones, in fp32; group_sizes gets float0.
  ragged-K  da = ragged-M of b by dout[g] read as [N, K]; db = ragged-M of a
            by dout[g] read as [K, N].
alpha_g scales every gradient of its group. Cotangents arriving in another
dtype than the operands (an fp32 output) are cast to the operands' dtype,
since both operands of a product share one. A product with a quantized
operand differentiates its bias only: a quantized operand is a constant of
differentiation, and the other operand's gradient would need a copy of it
blocked along another dimension, which only the caller has (the recipes of
GroupedDense quantize each gradient's operands themselves). Asking for a
gradient that is not computed (a quantized array's, the 16-bit operand's of
a quantized product, a per-group alpha's) raises a TypeError naming it.
"""

import functools
from typing import NamedTuple, Optional, Tuple

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax.interpreters import mlir

from .. import core
from .._capi import DType, IndexType, Path
from ..core import QuantizedTensor
from ..errors import GroupGemmError
from . import _ffi

jax.tree_util.register_dataclass(QuantizedTensor, data_fields=list(QuantizedTensor.ARRAYS),
                                 meta_fields=list(QuantizedTensor.METADATA))

OPERAND_DTYPES = (jnp.bfloat16, jnp.float16)
OUT_DTYPES = (jnp.bfloat16, jnp.float16, jnp.float32)
QUANTIZED_OUT_DTYPE = np.dtype(jnp.bfloat16)  # a product of two quantized operands, by default
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
    np.dtype(jnp.float8_e4m3fn): DType.E4M3,
    np.dtype(jnp.float8_e5m2): DType.E5M2,
    np.dtype(jnp.uint8): core.Storage.UINT8,
    np.dtype(jnp.int32): IndexType.INT32,
    np.dtype(jnp.int64): IndexType.INT64,
}


# ---- trace-time checks --------------------------------------------------------


def _name(dtype) -> str:
    return np.dtype(dtype).name


def is_quantized(operand) -> bool:
    return isinstance(operand, QuantizedTensor)


def _check_array_or_quantized(name: str, operand) -> None:
    if is_quantized(operand) or hasattr(operand, "shape") and hasattr(operand, "dtype"):
        return
    hint = (" (grouped_quantize returns both copies: pass one, such as .rowwise)"
            if isinstance(operand, core.Quantized) else "")
    raise TypeError("%s: expected an array or a QuantizedTensor, got %s%s"
                    % (name, type(operand).__name__, hint))


def check_operand_dtype(name: str, operand) -> None:
    if operand.dtype not in OPERAND_DTYPES:
        raise TypeError(
            "%s: dtype %s is not supported (bfloat16 or float16, or a QuantizedTensor; for "
            "float32 data, cast the operands to bfloat16 and pass "
            "preferred_element_type=jnp.float32)" % (name, _name(operand.dtype))
        )


def check_operand_dtypes(first_name: str, first, second_name: str, second) -> None:
    check_operand_dtype(first_name, first)
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


def product_out_dtype(names, operands, preferred_element_type):
    """preferred_element_type, by default the 16-bit operand's dtype (both
    operands' in a 16-bit product, the lhs's in a weight-only one), or
    bfloat16 where both are quantized. Checks first that each operand is an
    array or a QuantizedTensor."""
    for name, operand in zip(names, operands):
        _check_array_or_quantized(name, operand)
    plain = [operand for operand in operands if not is_quantized(operand)]
    return out_dtype_of(plain[0].dtype if plain else QUANTIZED_OUT_DTYPE, preferred_element_type)


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


def split_alpha(alpha) -> Tuple[Optional[jax.Array], float]:
    """(alphas, alpha): an fp32 array [G] and 1.0, or None and the host value."""
    if hasattr(alpha, "shape"):
        return alpha, 1.0
    return None, float(alpha)


class _Spec(tuple):
    """A hashable (shape, dtype) pair standing for an array in cache keys."""

    def __new__(cls, array):
        return super().__new__(cls, (tuple(int(d) for d in array.shape), np.dtype(array.dtype)))

    shape = property(lambda self: self[0])
    dtype = property(lambda self: self[1])


class _QuantizedSpec(NamedTuple):
    """A QuantizedTensor in cache keys: its format, copy and arrays' specs."""

    format: str
    columnwise: bool
    data: _Spec
    block_scales: Optional[_Spec]
    scale: Optional[_Spec]


def _spec(operand):
    if operand is None:
        return None
    if is_quantized(operand):
        return _QuantizedSpec(operand.format, operand.columnwise, _Spec(operand.data),
                              _spec(operand.block_scales), _spec(operand.scale))
    return _Spec(operand)


def _operand(name: str, array, data: int = _PLACEHOLDER_ADDRESS) -> core.Operand:
    """A packed view of an array (or a _Spec), at `data`."""
    dtype = np.dtype(array.dtype)
    if dtype not in _DTYPES:
        raise TypeError("%s: element type %s is not one groupgemm reads" % (name, dtype.name))
    shape = tuple(int(d) for d in array.shape)
    strides, packed = [], 1
    for extent in reversed(shape):
        strides.append(packed)
        packed *= extent
    return core.Operand(name, data, _DTYPES[dtype], shape, tuple(reversed(strides)), "xla")


def _argument(name: str, spec) -> core.Argument:
    """core's view of an operand: a quantized one's arrays named name.data,
    name.block_scales and name.scale."""
    if not isinstance(spec, _QuantizedSpec):
        return _operand(name, spec)
    optional = lambda what, s: None if s is None else _operand(name + "." + what, s)  # noqa: E731
    return core.QuantizedOperand(name, spec.format, _operand(name + ".data", spec.data),
                                 optional("block_scales", spec.block_scales),
                                 optional("scale", spec.scale), spec.columnwise)


def _alpha_operand(alphas) -> core.Scalar:
    return 1.0 if alphas is None else _operand("alpha", alphas)


# ---- plans: the descriptor checked while tracing, and the workspace -----------


class _Plan(NamedTuple):
    desc: object  # the reference path's descriptor, at placeholder addresses
    workspace_bytes: int  # for the largest need of any path
    gpu_error: Optional[GroupGemmError]  # why no GPU path takes the problem, if none does


@functools.lru_cache(maxsize=1024)
def _plan(key) -> _Plan:
    """The descriptor of a call (core's checks and the library's run while it
    is built and sized; the reference takes every problem they let through,
    so its refusal is raised), and workspace bytes for the largest need of
    any path (the platform is not known while tracing)."""
    build = _DESCRIBERS[key[0]]
    desc = build(key, Path.REFERENCE)
    nbytes = core.workspace_size(desc)
    gpu_sizes, why_not = [], []
    for path in (Path.PORTABLE, Path.SM90):
        try:
            gpu_sizes.append(core.workspace_size(build(key, path)))
        except GroupGemmError as e:
            why_not.append(e)
    # + _GPU_ALIGNMENT: the CUDA handlers align the start themselves.
    nbytes = max([nbytes] + [size + _GPU_ALIGNMENT for size in gpu_sizes])
    gpu_error = None
    if not gpu_sizes:
        gpu_error = type(why_not[0])("groupgemm: no GPU path runs this product: " + "; ".join(
            "%s: %s" % (path.name.lower(), e) for path, e in zip((Path.PORTABLE, Path.SM90),
                                                                 why_not)))
    return _Plan(desc, nbytes, gpu_error)


# Where a custom call runs is known only when it is lowered, from where its
# inputs are placed (not from the default device while tracing): the
# refusal of a problem that no GPU path takes is a primitive in the GPU
# branch of jax.lax.platform_dependent whose lowering raises the plan's
# error. On the value it passes through it is the identity, so its type is
# that of the custom call's result, mesh axes included.
_refused_on_gpu_p = jax.extend.core.Primitive("groupgemm_refused_on_gpu")
_refused_on_gpu_p.def_abstract_eval(lambda value, *, error_type, message: value)


def _raise_refusal(ctx, value, *, error_type, message):
    raise error_type(message)


mlir.register_lowering(_refused_on_gpu_p, _raise_refusal)


def _custom_call(target, results, plan: _Plan):
    """jax.ffi.ffi_call(target, results); where no GPU path takes the
    problem, lowering it for a GPU raises plan.gpu_error."""
    call = jax.ffi.ffi_call(target, results)
    if plan.gpu_error is None:
        return call
    error_type, message = type(plan.gpu_error), str(plan.gpu_error)

    def refused(*operands, **attributes):
        return [_refused_on_gpu_p.bind(result, error_type=error_type, message=message)
                for result in call(*operands, **attributes)]

    def placed(*operands, **attributes):
        return jax.lax.platform_dependent(
            *operands, default=lambda *o: list(call(*o, **attributes)),
            cuda=lambda *o: refused(*o, **attributes))

    return placed


def _struct(shape, dtype, manual=None):
    """A custom call's result type, varying over the manual mesh axes
    `manual` names (shard_map): an FFI result carries none of its own, and
    under check_vma a gradient must vary as its operand does."""
    if manual is None or manual.empty:
        return jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype))
    return jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype), manual_axis_type=manual,
                                sharding=jax.NamedSharding(jax.sharding.get_abstract_mesh(),
                                                           jax.P()))


def _data(operand):
    """An operand's data array (a quantized operand's elements)."""
    return operand.data if is_quantized(operand) else operand


def _manual_axes(*operands):
    """The manual mesh axes a call's results vary over: those of its operands
    (a call's operands are made to vary alike, so the widest set is all)."""
    types = [jax.typeof(a).manual_axis_type for a in operands if a is not None]
    return max(types, key=lambda manual: len(manual.varying))


def _describe_ragged_m(key, path):
    _, lhs, rhs, sizes, bias, out, rhs_layout, alphas = key
    return core.ragged_m(
        _argument("lhs", lhs),
        _argument("rhs", rhs),
        _operand("out", out),
        _operand("group_sizes", sizes),
        w_layout=rhs_layout,
        bias=None if bias is None else _operand("bias", bias),
        alpha=_alpha_operand(alphas),
        path=path,
    )


def _describe_ragged_k(key, path):
    _, a, b, sizes, out, alphas = key
    return core.ragged_k(
        _argument("a", a), _argument("b", b), _operand("out", out),
        _operand("group_sizes", sizes), alpha=_alpha_operand(alphas), path=path,
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


def _flags(workspace, flags: bool):
    if not flags:
        return None
    return jax.lax.bitcast_convert_type(workspace[:4], jnp.uint32)


# ---- the products' custom calls -----------------------------------------------------


def _ragged_m_key(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alphas):
    rows, cols = core.ragged_m_out_shape(_argument("lhs", _spec(lhs)),
                                         _argument("rhs", _spec(rhs)), rhs_layout)
    out = _struct((rows, cols), out_dtype)
    return ("ragged_m", _spec(lhs), _spec(rhs), _Spec(group_sizes), _spec(bias), _Spec(out),
            rhs_layout, _spec(alphas)), out


def _ragged_k_key(a, b, group_sizes, out_dtype, alphas):
    shape = core.ragged_k_out_shape(_argument("a", _spec(a)), _argument("b", _spec(b)),
                                    _operand("group_sizes", _Spec(group_sizes)))
    out = _struct(shape, out_dtype)
    return ("ragged_k", _spec(a), _spec(b), _Spec(group_sizes), _Spec(out), _spec(alphas)), out


def _empty():
    return jnp.zeros((0,), jnp.uint8)


def _buffers(operand):
    """An operand's three buffers: data, block scales, fp32 scale."""
    if not is_quantized(operand):
        return operand, _empty(), _empty()
    return tuple(_empty() if array is None else array
                 for array in (operand.data, operand.block_scales, operand.scale))


def _gemm_options(desc, has_bias: bool, alphas, alpha: float, flags: bool):
    """The handlers' attributes (GemmOptions), read off the checked descriptor."""
    options = {}
    for side, tensor, layout in (("lhs", desc.lhs, desc.lhs_layout),
                                 ("rhs", desc.rhs, desc.rhs_layout)):
        options.update({side + "_block_scaling": np.int32(tensor.block_scaling),
                        side + "_scale_extent": np.int32(tensor.scale_extent),
                        side + "_layout": np.int32(layout)})
    options.update(has_bias=np.int32(has_bias), per_group_alpha=np.int32(alphas is not None),
                   alpha=np.float32(alpha), flags=np.int32(flags))
    return options


def ragged_m_call(lhs, rhs, group_sizes, bias, rhs_layout: str, out_dtype, alphas, alpha: float,
                  flags: bool = False):
    """(out, flags) of one ragged-M custom call, flags None unless asked
    for; the arguments are checked."""
    _ffi.library()
    key, out = _ragged_m_key(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alphas)
    plan = _plan(key)
    manual = _manual_axes(_data(lhs), _data(rhs), group_sizes, bias)
    out = _struct(out.shape, out.dtype, manual)
    workspace = _struct((plan.workspace_bytes,), np.uint8, manual)
    call = _custom_call("groupgemm_ragged_m", (out, workspace), plan)
    result, ws = call(
        *_buffers(lhs), *_buffers(rhs), group_sizes,
        _empty() if bias is None else bias,
        _empty() if alphas is None else alphas,
        **_gemm_options(plan.desc, bias is not None, alphas, alpha, flags),
    )
    return result, _flags(ws, flags)


def ragged_k_call(a, b, group_sizes, out_dtype, alphas, alpha: float, flags: bool = False):
    """(out, flags) of one ragged-K custom call, flags None unless asked
    for; the arguments are checked."""
    _ffi.library()
    key, out = _ragged_k_key(a, b, group_sizes, out_dtype, alphas)
    plan = _plan(key)
    manual = _manual_axes(_data(a), _data(b), group_sizes)
    out = _struct(out.shape, out.dtype, manual)
    workspace = _struct((plan.workspace_bytes,), np.uint8, manual)
    call = _custom_call("groupgemm_ragged_k", (out, workspace), plan)
    result, ws = call(
        *_buffers(a), *_buffers(b), group_sizes,
        _empty() if alphas is None else alphas,
        **_gemm_options(plan.desc, False, alphas, alpha, flags),
    )
    return result, _flags(ws, flags)


def check_ragged_m(lhs, rhs, group_sizes, bias, rhs_layout: str, out_dtype, alphas) -> None:
    """Raises TypeError/ValueError naming the argument: the 16-bit operands'
    rules here, in JAX's terms, then everything through core and the
    library (quantized operands' arrays and formats, alpha). The operands
    are arrays or QuantizedTensors (product_out_dtype)."""
    if rhs_layout not in RHS_LAYOUTS:
        raise ValueError("rhs_layout: expected 'kn' ([G, K, N]) or 'nk' ([G, N, K]), got %r"
                         % (rhs_layout,))
    if not is_quantized(lhs) and lhs.ndim != 2:
        raise ValueError("lhs: expected [M, K], got shape %s" % list(lhs.shape))
    expected = "[G, K, N]" if rhs_layout == "kn" else "[G, N, K]"
    if not is_quantized(rhs) and rhs.ndim != 3:
        raise ValueError("rhs: expected %s (rhs_layout %r), got shape %s"
                         % (expected, rhs_layout, list(rhs.shape)))
    if not (is_quantized(lhs) or is_quantized(rhs)):
        check_operand_dtypes("lhs", lhs, "rhs", rhs)
    for name, operand in (("lhs", lhs), ("rhs", rhs)):
        if not is_quantized(operand):
            check_operand_dtype(name, operand)
    groups = check_group_sizes(group_sizes)
    if not is_quantized(rhs):
        if rhs.shape[0] != groups:
            raise ValueError("rhs: has %s groups (shape %s), but group_sizes has %s"
                             % (rhs.shape[0], list(rhs.shape), groups))
        depth = rhs.shape[1] if rhs_layout == "kn" else rhs.shape[2]
        if not is_quantized(lhs) and depth != lhs.shape[1]:
            raise ValueError("rhs: K = %s (shape %s, rhs_layout %r), but lhs has K = %s"
                             % (depth, list(rhs.shape), rhs_layout, lhs.shape[1]))
    key, out = _ragged_m_key(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alphas)
    if bias is not None:
        if tuple(bias.shape) != (groups, out.shape[1]):
            raise ValueError("bias: expected [G, N] = [%s, %s], got shape %s"
                             % (groups, out.shape[1], list(bias.shape)))
        out_dtype_of(bias.dtype, bias.dtype, "bias")
    _plan(key)


def check_ragged_k(a, b, group_sizes, out_dtype, alphas) -> None:
    """As check_ragged_m, for a ragged-K product."""
    if not is_quantized(a) and a.ndim != 2:
        raise ValueError("a: expected [M, P], got shape %s" % list(a.shape))
    if not is_quantized(b) and b.ndim != 2:
        raise ValueError("b: expected [M, Q], got shape %s" % list(b.shape))
    if not (is_quantized(a) or is_quantized(b)):
        check_operand_dtypes("a", a, "b", b)
        if b.shape[0] != a.shape[0]:
            raise ValueError("b: has %s rows, but a has %s (both hold the same groups of rows)"
                             % (b.shape[0], a.shape[0]))
    check_group_sizes(group_sizes)
    _plan(_ragged_k_key(a, b, group_sizes, out_dtype, alphas)[0])


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
    plan = _plan(key)
    results.append(_struct((plan.workspace_bytes,), np.uint8, manual))
    call = _custom_call("groupgemm_quantize", tuple(results), plan)
    # Stacked input has no sizes: an empty placeholder the handlers ignore.
    sizes = jnp.zeros((0,), jnp.int32) if group_sizes is None else group_sizes
    *arrays, workspace = call(x, sizes, **options)
    return arrays, _flags(workspace, flags)


# ---- the VJPs ------------------------------------------------------------------------
# symbolic_zeros: the forward rules see which inputs are differentiated
# (`perturbed`), so that a gradient that is not computed is refused by name
# rather than returned as zeros.


def float0_like(group_sizes):
    return np.zeros(group_sizes.shape, dtype=jax.dtypes.float0)


def _unwrap(primals):
    """(values, perturbed) of symbolic_zeros' CustomVJPPrimal leaves."""
    return (jax.tree_util.tree_map(lambda p: p.value, primals),
            jax.tree_util.tree_map(lambda p: p.perturbed, primals))


def _refuse_gradients(named_operands, perturbed_operands, alphas_perturbed) -> None:
    """Raises TypeError for a gradient asked of a product that it does not
    compute (see the module's docstring)."""
    quantized = [name for name, operand in named_operands if is_quantized(operand)]
    for (name, operand), perturbed in zip(named_operands, perturbed_operands):
        if not any(jax.tree_util.tree_leaves(perturbed)):
            continue
        if is_quantized(operand):
            raise TypeError(
                "%s: a quantized operand is a constant of differentiation (no gradient flows "
                "into grouped_quantize's arrays); differentiate the value it was quantized from "
                "through a recipe (GroupedDense(recipe=...), make_ragged_dot_cls(recipe))" % name)
        if quantized:
            raise TypeError(
                "%s: a product with a quantized %s is not differentiable in %s (the gradient "
                "needs %s blocked along another dimension); train through a recipe "
                "(GroupedDense(recipe=...), make_ragged_dot_cls(recipe))"
                % (name, quantized[0], name, quantized[0]))
    if alphas_perturbed:
        raise TypeError("alpha: a per-group alpha array is not differentiated; pass it through "
                        "jax.lax.stop_gradient")


def bias_grad(dout, group_sizes, dtype):
    """dbias[g] = the sum of dout's rows of group g: ragged-K against a
    column of ones, accumulated in fp32. dout in another dtype than 16 bits
    (an fp32 output's cotangent) is read as bfloat16."""
    dout = dout if dout.dtype in OPERAND_DTYPES else dout.astype(jnp.bfloat16)
    ones = jnp.ones((dout.shape[0], _ONES_COLUMNS), dout.dtype)
    return ragged_k_call(ones, dout, group_sizes, jnp.float32, None, 1.0)[0][:, 0, :].astype(dtype)


def _zero_cotangent(grad) -> bool:
    return isinstance(grad, jax.custom_derivatives.SymbolicZero)


# ragged-M


@functools.partial(jax.custom_vjp, nondiff_argnums=(5, 6, 7))
def ragged_m(lhs, rhs, group_sizes, bias, alphas, rhs_layout, out_dtype, alpha):
    return ragged_m_call(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alphas, alpha)[0]


def _ragged_m_fwd(lhs, rhs, group_sizes, bias, alphas, rhs_layout, out_dtype, alpha):
    (lhs, rhs, group_sizes, bias, alphas), perturbed = _unwrap(
        (lhs, rhs, group_sizes, bias, alphas))
    _refuse_gradients((("lhs", lhs), ("rhs", rhs)), perturbed[:2], perturbed[4])
    out = ragged_m_call(lhs, rhs, group_sizes, bias, rhs_layout, out_dtype, alphas, alpha)[0]
    # Residuals are arrays: an empty one carries the bias dtype, if any.
    bias_like = None if bias is None else jnp.zeros((0,), bias.dtype)
    return out, (lhs, rhs, group_sizes, bias_like, alphas)


def _ragged_m_bwd(rhs_layout, out_dtype, alpha, residuals, grad):
    lhs, rhs, group_sizes, bias_like, alphas = residuals
    if _zero_cotangent(grad):
        return None, None, float0_like(group_sizes), None, None
    dlhs = drhs = dbias = None
    if not (is_quantized(lhs) or is_quantized(rhs)):
        grad = grad.astype(lhs.dtype)
        dlhs = ragged_m_call(grad, rhs, group_sizes, None, _OTHER_LAYOUT[rhs_layout], lhs.dtype,
                             alphas, alpha)[0]
        a, b = (lhs, grad) if rhs_layout == "kn" else (grad, lhs)
        drhs = ragged_k_call(a, b, group_sizes, rhs.dtype, alphas, alpha)[0]
    if bias_like is not None:
        dbias = bias_grad(grad, group_sizes, bias_like.dtype)
    return dlhs, drhs, float0_like(group_sizes), dbias, None


ragged_m.defvjp(_ragged_m_fwd, _ragged_m_bwd, symbolic_zeros=True)


# ragged-K


@functools.partial(jax.custom_vjp, nondiff_argnums=(4, 5))
def ragged_k(a, b, group_sizes, alphas, out_dtype, alpha):
    return ragged_k_call(a, b, group_sizes, out_dtype, alphas, alpha)[0]


def _ragged_k_fwd(a, b, group_sizes, alphas, out_dtype, alpha):
    (a, b, group_sizes, alphas), perturbed = _unwrap((a, b, group_sizes, alphas))
    _refuse_gradients((("a", a), ("b", b)), perturbed[:2], perturbed[3])
    return ragged_k_call(a, b, group_sizes, out_dtype, alphas, alpha)[0], (a, b, group_sizes,
                                                                          alphas)


def _ragged_k_bwd(out_dtype, alpha, residuals, grad):
    a, b, group_sizes, alphas = residuals
    if _zero_cotangent(grad) or is_quantized(a) or is_quantized(b):
        return None, None, float0_like(group_sizes), None
    grad = grad.astype(a.dtype)
    # da[g rows] = b[g rows] @ grad[g]^T: grad [G, P, Q] read as [G, N, K] (N = P, K = Q).
    da = ragged_m_call(b, grad, group_sizes, None, "nk", a.dtype, alphas, alpha)[0]
    # db[g rows] = a[g rows] @ grad[g]: grad read as [G, K, N] (K = P, N = Q).
    db = ragged_m_call(a, grad, group_sizes, None, "kn", b.dtype, alphas, alpha)[0]
    return da, db, float0_like(group_sizes), None


ragged_k.defvjp(_ragged_k_fwd, _ragged_k_bwd, symbolic_zeros=True)

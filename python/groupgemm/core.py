"""Framework-neutral front end: array views in, C descriptors out, one launch.

A front end (groupgemm.numpy, groupgemm.torch) describes each argument as an
Operand: an address, an element type, a shape and strides in elements, the
device it lives on and the argument name to use in messages. This module
checks what the host can see, in the caller's own vocabulary ("w: expected
[G, N, K] ..."), then builds the gg_gemm_desc; the C library validates again
and owns every rule about formats and paths, and its messages, which name
descriptor fields, are reported in the same vocabulary (_c_names).

Checking and building are separate steps: the checks only compare shapes,
strides and devices, so torch's fake (meta) kernels run the very same checks
on symbolic shapes at trace time, while descriptors are built only for real
launches.

The logical meaning of an operand (w_layout "nk" or "kn", the [M, P] shape of
a ragged-K operand) is the caller's; the physical layout is read from the
strides. A w or ragged-K operand whose last dimension is not contiguous but
whose second-to-last is, such as a transposed view, is passed as the other C
layout over the same memory, with no copy. Nothing here reads group sizes,
allocates or synchronizes.

A quantized argument (QuantizedOperand) is what grouped_quantize wrote:
data, block scales and an fp32 scale in one of QUANTIZE_FORMATS, either the
rowwise copy (stored as the argument is) or the columnwise copy (stored
transposed, read as the other C layout). Its arrays are checked against
the ones grouped_quantize allocates for an input of the argument's shape;
which formats may meet in one product is the library's rule, reported with
the formats named.
"""

import ctypes
import enum
from dataclasses import dataclass, replace
from typing import Any, ClassVar, NamedTuple, Optional, Sequence, Tuple, Union

from . import _c_names, _capi
from ._capi import (
    BlockScaling,
    DeviceFlag,
    DType,
    GemmFlag,
    IndexType,
    Layout,
    Op,
    Path,
    ScaleExtent,
)
from .errors import GroupGemmError


class Storage(enum.Enum):
    """Element types of quantized arrays that no gg_dtype names: bytes that
    hold two e2m1 elements (the even one in the low nibble), or one e8m0
    (MX) or ue4m3 (nvfp4) block scale."""

    UINT8 = "uint8"


@dataclass(frozen=True)
class Operand:
    """A strided view of one argument. `device` is "cpu" or "cuda:<index>";
    `data` may be 0 where only the checks run (shapes known, memory not).
    With `pointer_array`, a [G, rows, cols] view whose G matrices lie apart:
    `data` is the address of an array of their G addresses, in memory the
    library reads on `device` (see expert_matrices). Shapes and strides
    count elements of `dtype`."""

    name: str
    data: int
    dtype: Union[DType, IndexType, Storage]
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]
    device: str
    pointer_array: bool = False


@dataclass(frozen=True)
class QuantizedOperand:
    """A quantized argument: the arrays grouped_quantize wrote for an input
    of the argument's shape, in format `fmt` (a QUANTIZE_FORMATS name).
    `data` is as stored: the rowwise copy has the argument's shape, the
    columnwise copy (`columnwise`) its transpose ([G, rows, cols] becomes
    [G, cols, rows]); e2m1 data is Storage.UINT8 bytes, two elements each.
    `block_scales` and `scale` are None where the format has none. `name`
    is the argument's, its arrays' names say which array they are
    ("x.block_scales")."""

    name: str
    fmt: str
    data: Operand
    block_scales: Optional[Operand] = None
    scale: Optional[Operand] = None
    columnwise: bool = False


Argument = Union[Operand, QuantizedOperand]
Scalar = Union[float, Operand]  # a host value, or an fp32 [G] array beside the data

W_LAYOUTS = ("nk", "kn")


# ---- checks -----------------------------------------------------------------


def _shape_error(operand: Operand, expected: str) -> ValueError:
    return ValueError(
        "%s: expected %s, got shape %s" % (operand.name, expected, list(operand.shape))
    )


def _require_rank(operand: Operand, rank: int, expected: str) -> None:
    if len(operand.shape) != rank or len(operand.strides) != rank:
        raise _shape_error(operand, expected)


def _require_float(operand: Optional[Operand]) -> None:
    if operand is not None and not isinstance(operand.dtype, DType):
        raise TypeError(
            "%s: expected a floating-point element type, got %s"
            % (operand.name, operand.dtype.name.lower())
        )


def _require_device(operand: Optional[Operand], device: str, what: str = "the data") -> None:
    if operand is not None and operand.device != device:
        raise ValueError(
            "%s: on %s, but %s is on %s" % (operand.name, operand.device, what, device)
        )


def _c_strides(operand: Operand) -> Tuple[int, ...]:
    """Strides as the C API reads them. The stride of a dimension of extent 0
    or 1 is never used, and a zero stride means "packed" in C, so both become
    the packed stride, as do all strides of an operand with no elements,
    which address nothing (numpy gives an empty array zero strides); a zero
    (broadcast) or negative stride elsewhere cannot be expressed."""
    strides = []
    packed = 1
    empty = 0 in operand.shape
    for extent, stride in zip(reversed(operand.shape), reversed(operand.strides)):
        if extent <= 1 or empty:
            stride = packed
        elif stride <= 0:
            raise ValueError(
                "%s: broadcast or negative strides are not supported, got strides %s"
                % (operand.name, list(operand.strides))
            )
        strides.append(stride)
        packed = packed * extent if extent > 1 else packed
    return tuple(reversed(strides))


def _require_inner_contiguous(operand: Optional[Operand]) -> None:
    if operand is not None and _c_strides(operand)[-1] != 1:
        raise ValueError(
            "%s: the last dimension must be contiguous (stride 1), got strides %s"
            % (operand.name, list(operand.strides))
        )


def _stored_layout(operand: Operand) -> Layout:
    """GG_LAYOUT_N when the last dimension is contiguous, GG_LAYOUT_T when
    only the one before it is (the view is a transposed matrix)."""
    strides = _c_strides(operand)
    if strides[-1] == 1:
        return Layout.N
    if strides[-2] == 1:
        return Layout.T
    raise ValueError(
        "%s: one of the last two dimensions must be contiguous (stride 1), got strides %s"
        % (operand.name, list(operand.strides))
    )


# The element type of each array name of quantize_arrays.
_ARRAY_TYPES = {
    "float8_e4m3fn": DType.E4M3,
    "float8_e5m2": DType.E5M2,
    "uint8": Storage.UINT8,
    "float32": DType.FP32,
}


def _type_name(dtype) -> str:
    """An element type as the front ends' dtypes name it where it is a quantized array's."""
    for name, element_type in _ARRAY_TYPES.items():
        if element_type == dtype:
            return name
    return dtype.name.lower()


def _element_view(q: QuantizedOperand) -> Operand:
    """q's data as stored, in elements: e2m1 bytes hold two each."""
    data = q.data
    if data.dtype != Storage.UINT8:
        return data
    return replace(
        data,
        dtype=DType.E2M1,
        shape=data.shape[:-1] + (2 * data.shape[-1],),
        strides=tuple(2 * stride for stride in data.strides[:-1]) + data.strides[-1:],
    )


def _check_quantized_data(q: QuantizedOperand) -> None:
    """q's format is known, and its data of the format's element type and rank."""
    if q.fmt not in QUANTIZE_FORMATS:
        raise ValueError(
            "%s: unknown quantize format %r; one of %s"
            % (q.name, q.fmt, ", ".join(sorted(QUANTIZE_FORMATS)))
        )
    dtype, scaling, _ = QUANTIZE_FORMATS[q.fmt]
    rank = len(q.data.shape)
    if rank not in (2, 3) or len(q.data.strides) != rank:
        raise _shape_error(q.data, "[rows, cols] or [G, rows, cols]")
    expected = _ARRAY_TYPES[_DATA_DTYPE_NAMES[dtype]]
    if q.data.dtype != expected:
        raise TypeError(
            "%s: %s data is %s, got %s"
            % (q.data.name, q.fmt, _type_name(expected), _type_name(q.data.dtype))
        )
    if scaling == BlockScaling._128X128 and rank != 3:
        raise ValueError("%s: %s is for stacked weights [G, N, K] only" % (q.name, q.fmt))


def _logical(argument: Argument) -> Operand:
    """The view of an argument as its caller means it, in elements: a
    quantized one's columnwise copy read transposed, named as the argument."""
    if isinstance(argument, Operand):
        return argument
    _check_quantized_data(argument)
    view = _element_view(argument)
    if argument.columnwise:
        view = replace(
            view,
            shape=view.shape[:-2] + view.shape[:-3:-1],
            strides=view.strides[:-2] + view.strides[:-3:-1],
        )
    return replace(view, name=argument.name)


def argument_shape(argument: Argument) -> Tuple[int, ...]:
    """The shape of an argument as its caller means it, in elements (a
    columnwise copy's is that of the tensor it was quantized from)."""
    return _logical(argument).shape


def _check_quantized_scales(q: QuantizedOperand, groups: int) -> None:
    """q's block scales and fp32 scale against the arrays grouped_quantize
    allocates for an input of q's shape: present where the format has them,
    of their element type and shape, packed, on the data's device."""
    _, want_block_scales, want_scale = quantize_arrays(
        q.fmt, _logical(q).shape, groups, q.columnwise
    )
    for what, array, want in (
        ("block scales", q.block_scales, want_block_scales),
        ("fp32 scale", q.scale, want_scale),
    ):
        if want is None:
            if array is not None:
                raise ValueError("%s: %s has no %s (pass None)" % (array.name, q.fmt, what))
            continue
        if array is None:
            raise ValueError(
                "%s: %s needs %s %s of %s" % (q.name, q.fmt, what, list(want.shape), want.dtype)
            )
        if array.dtype != _ARRAY_TYPES[want.dtype]:
            raise TypeError(
                "%s: %s %s are %s, got %s"
                % (array.name, q.fmt, what, want.dtype, _type_name(array.dtype))
            )
        if tuple(array.shape) != want.shape:
            copy = "columnwise" if q.columnwise else "rowwise"
            expected = "%s (%s %s of %s %s)" % (list(want.shape), q.fmt, what, q.name, copy)
            raise _shape_error(array, expected)
        if len(array.strides) != len(want.shape) or _c_strides(array) != _packed(want.shape):
            raise ValueError(
                "%s: must be contiguous, got strides %s" % (array.name, list(array.strides))
            )
        _require_device(array, q.data.device)


def _packed(shape: Tuple[int, ...]) -> Tuple[int, ...]:
    strides, stride = [], 1
    for extent in reversed(shape):
        strides.append(stride)
        stride *= max(extent, 1)
    return tuple(reversed(strides))


def _require_blocks_along_contraction(
    argument: Argument, contraction_last: bool, hint: str
) -> None:
    """Block scales run along the last dimension of a quantized argument's
    data (128x128 tiles along both), which the product needs to be the
    contraction; `contraction_last`: the contraction is the last dimension
    of the argument (of the rowwise copy's data)."""
    if not isinstance(argument, QuantizedOperand) or contraction_last != argument.columnwise:
        return
    if QUANTIZE_FORMATS[argument.fmt][1] in (BlockScaling.NONE, BlockScaling._128X128):
        return
    raise ValueError(
        "%s: the %s block scales of its %s copy run across the contraction, not along it; %s"
        % (argument.name, argument.fmt, "columnwise" if argument.columnwise else "rowwise", hint)
    )


def _layout(argument: Argument) -> Layout:
    """The C layout of an argument: a quantized one's is its copy's."""
    if isinstance(argument, Operand):
        return _stored_layout(argument)
    _require_inner_contiguous(argument.data)
    return Layout.T if argument.columnwise else Layout.N


def expert_matrices(name: str, pointers: int, matrices: Sequence[Operand]) -> Operand:
    """One [G, rows, cols] view of G separate matrices of one shape, element
    type, strides and device (per-expert weights kept as separate tensors, or
    per-expert weight gradients), given as `matrices` and, at `pointers`, an
    array of their G addresses in order, which the caller keeps where the
    data is (on the GPU for GPU data) until the launch has run. Raises
    ValueError or TypeError naming the matrix that differs from the first."""
    if len(matrices) == 0:
        raise ValueError("%s: needs at least one matrix (one per group)" % name)
    first = matrices[0]
    for matrix in matrices:
        _require_rank(matrix, 2, "a matrix [rows, cols]")
        for what in ("dtype", "shape", "strides", "device"):
            mine, theirs = getattr(matrix, what), getattr(first, what)
            if mine != theirs:
                raise ValueError(
                    "%s: has %s %s, unlike %s (%s)"
                    % (matrix.name, what, _spelled(mine), first.name, _spelled(theirs))
                )
    rows, cols = first.shape
    return Operand(
        name=name,
        data=pointers,
        dtype=first.dtype,
        shape=(len(matrices), rows, cols),
        strides=(max(rows * cols, 1),) + tuple(first.strides),
        device=first.device,
        pointer_array=True,
    )


def _spelled(value) -> str:
    if isinstance(value, tuple):
        return str(list(value))
    if isinstance(value, (DType, IndexType)):
        return value.name.lower()
    return str(value)


def _check_group_sizes(group_sizes: Operand, device: str) -> int:
    if not isinstance(group_sizes.dtype, IndexType):
        raise TypeError(
            "%s: expected int32 or int64, got %s"
            % (group_sizes.name, group_sizes.dtype.name.lower())
        )
    _require_rank(group_sizes, 1, "a 1-D array [G]")
    if group_sizes.shape[0] == 0:
        raise ValueError("%s: needs at least one group" % group_sizes.name)
    if _c_strides(group_sizes) != (1,):
        raise ValueError(
            "%s: must be contiguous, got stride %s" % (group_sizes.name, group_sizes.strides[0])
        )
    # The host never reads sizes meant for a GPU, so they must be where the data is.
    _require_device(group_sizes, device)
    return group_sizes.shape[0]


def _check_scalar(value: Scalar, name: str, groups: int, device: str) -> None:
    if not isinstance(value, Operand):
        return
    if not isinstance(value.dtype, DType) or value.dtype != DType.FP32:
        raise TypeError("%s: a per-group %s must be fp32" % (value.name, name))
    if tuple(value.shape) != (groups,) or _c_strides(value) != (1,):
        raise _shape_error(value, "a contiguous fp32 array [G] with G = %s" % groups)
    _require_device(value, device)


def ragged_m_out_shape(x: Argument, w: Argument, w_layout: str) -> Tuple[int, int]:
    """[M, N] of a ragged-M product, after checking the ranks of x and w."""
    if w_layout not in W_LAYOUTS:
        raise ValueError("w_layout: expected 'nk' or 'kn', got %r" % (w_layout,))
    x, w = _logical(x), _logical(w)
    _require_rank(x, 2, "[M, K]")
    _require_rank(
        w, 3, ("[G, N, K]" if w_layout == "nk" else "[G, K, N]") + " (w_layout %r)" % w_layout
    )
    return x.shape[0], (w.shape[1] if w_layout == "nk" else w.shape[2])


def check_ragged_m(
    x: Argument,
    w: Argument,
    out: Operand,
    group_sizes: Operand,
    *,
    w_layout: str = "nk",
    bias: Optional[Operand] = None,
    alpha: Scalar = 1.0,
    beta: Scalar = 0.0,
) -> None:
    """Every host-visible check of a ragged-M product; raises ValueError or
    TypeError naming the argument."""
    rows, cols = ragged_m_out_shape(x, w, w_layout)
    if isinstance(x, QuantizedOperand) and x.columnwise:
        raise ValueError(
            "%s: the rows of x are its tokens: pass the rowwise copy, not the columnwise one"
            % x.name
        )
    _require_blocks_along_contraction(
        w,
        w_layout == "nk",
        "with w_layout 'nk' pass the rowwise copy of the weights, with 'kn' the columnwise one",
    )
    quantized = [argument for argument in (x, w) if isinstance(argument, QuantizedOperand)]
    x, w = _logical(x), _logical(w)
    for operand in (x, w, out, bias):
        _require_float(operand)
    for operand in (w, out, bias):
        _require_device(operand, x.device, "%s" % x.name)
    groups = _check_group_sizes(group_sizes, x.device)
    if w.shape[0] != groups:
        raise ValueError(
            "%s: has %s groups (shape %s), but %s has %s"
            % (w.name, w.shape[0], list(w.shape), group_sizes.name, groups)
        )
    depth = w.shape[2] if w_layout == "nk" else w.shape[1]
    if depth != x.shape[1]:
        raise ValueError(
            "%s: K = %s (shape %s, w_layout %r), but %s has K = %s"
            % (w.name, depth, list(w.shape), w_layout, x.name, x.shape[1])
        )
    if tuple(out.shape) != (rows, cols):
        raise _shape_error(out, "[M, N] = [%s, %s]" % (rows, cols))
    if bias is not None and tuple(bias.shape) != (groups, cols):
        raise _shape_error(bias, "[G, N] = [%s, %s]" % (groups, cols))
    for operand in (x, out, bias):
        _require_inner_contiguous(operand)
    _stored_layout(w)
    for argument in quantized:
        _layout(argument)
        _check_quantized_scales(argument, groups)
    _check_scalar(alpha, "alpha", groups, x.device)
    _check_scalar(beta, "beta", groups, x.device)


def ragged_k_out_shape(a: Argument, b: Argument, group_sizes: Operand) -> Tuple[int, int, int]:
    """[G, P, Q] of a ragged-K product, after checking the ranks of a, b and group_sizes."""
    a, b = _logical(a), _logical(b)
    _require_rank(a, 2, "[M, P]")
    _require_rank(b, 2, "[M, Q]")
    _require_rank(group_sizes, 1, "a 1-D array [G]")
    return group_sizes.shape[0], a.shape[1], b.shape[1]


def check_ragged_k(
    a: Argument,
    b: Argument,
    out: Operand,
    group_sizes: Operand,
    *,
    alpha: Scalar = 1.0,
    beta: Scalar = 0.0,
) -> None:
    """Every host-visible check of a ragged-K product; raises ValueError or
    TypeError naming the argument."""
    expected_out = ragged_k_out_shape(a, b, group_sizes)
    for argument in (a, b):
        _require_blocks_along_contraction(
            argument, False, "the contraction is the tokens: pass the columnwise copy"
        )
    quantized = [argument for argument in (a, b) if isinstance(argument, QuantizedOperand)]
    a, b = _logical(a), _logical(b)
    for operand in (a, b, out):
        _require_float(operand)
    for operand in (b, out):
        _require_device(operand, a.device, a.name)
    groups = _check_group_sizes(group_sizes, a.device)
    if b.shape[0] != a.shape[0]:
        raise ValueError(
            "%s: has %s rows, but %s has %s (both hold the same groups of rows)"
            % (b.name, b.shape[0], a.name, a.shape[0])
        )
    if tuple(out.shape) != tuple(expected_out):
        raise _shape_error(out, "[G, P, Q] = %s" % list(expected_out))
    _stored_layout(a)
    _stored_layout(b)
    for argument in quantized:
        _layout(argument)
        _check_quantized_scales(argument, groups)
    _require_inner_contiguous(out)
    _check_scalar(alpha, "alpha", groups, a.device)
    _check_scalar(beta, "beta", groups, a.device)


# ---- descriptors ------------------------------------------------------------


def _fill(tensor: _capi.Tensor, operand: Operand, layout: Layout = Layout.N) -> None:
    """Fills a C view of `operand`; with GG_LAYOUT_T, of its last two dimensions swapped."""
    shape, strides = tuple(operand.shape), _c_strides(operand)
    if layout == Layout.T:
        shape = shape[:-2] + (shape[-1], shape[-2])
        strides = strides[:-2] + (strides[-1], 1)
    tensor.data = operand.data or None
    tensor.dtype = int(operand.dtype)
    tensor.flags = _capi.TensorFlag.POINTER_ARRAY if operand.pointer_array else 0
    tensor.rank = len(shape)
    for i, (extent, stride) in enumerate(zip(shape, strides)):
        tensor.shape[i] = extent
        tensor.strides[i] = stride


def _fill_argument(tensor: _capi.Tensor, argument: Argument, layout: Layout) -> None:
    """Fills the C view of an argument in `layout` (_layout's): a quantized
    one's data as stored, with its format and the addresses of its scales."""
    if isinstance(argument, Operand):
        _fill(tensor, argument, layout)
        return
    _fill(tensor, _element_view(argument))
    _, scaling, extent = QUANTIZE_FORMATS[argument.fmt]
    tensor.block_scaling = int(scaling)
    tensor.scale_extent = int(extent)
    _point_scales(tensor, _scale_addresses(argument))


ScaleAddresses = Tuple[int, int]  # a quantized argument's block scales and fp32 scale (0: none)


def _scale_addresses(argument: QuantizedOperand) -> ScaleAddresses:
    arrays = (argument.block_scales, argument.scale)
    return tuple(0 if array is None else array.data for array in arrays)


def _point_scales(tensor: _capi.Tensor, addresses: ScaleAddresses) -> None:
    block_scales, scale = addresses
    tensor.block_scales = block_scales or None
    tensor.scale = _float_pointer(scale)


def _fill_group_sizes(desc: _capi.GemmDesc, group_sizes: Operand) -> None:
    desc.num_groups = group_sizes.shape[0]
    desc.group_sizes.sizes = group_sizes.data or None
    desc.group_sizes.offsets = None
    desc.group_sizes.type = int(group_sizes.dtype)


def _fill_scalar(target: _capi.Scalar, value: Scalar) -> None:
    if isinstance(value, Operand):
        target.value = 0.0
        target.per_group = ctypes.cast(value.data, ctypes.POINTER(ctypes.c_float))
    else:
        target.value = float(value)
        target.per_group = None


def _c_name(argument: Argument, layout: Layout) -> str:
    """The name of an argument's C view in messages: ^T where it is the
    transpose (of a transposed view, of a columnwise copy: _layout)."""
    return argument.name + ("^T" if layout == Layout.T else "")


def _scalar_name(value: Scalar, default: str) -> str:
    return value.name if isinstance(value, Operand) else default


def path_for(device: str) -> Path:
    """The reference reads host memory; data on a GPU goes to the fastest GPU path."""
    return Path.REFERENCE if device == "cpu" else Path.AUTO


def ragged_m(
    x: Argument,
    w: Argument,
    out: Operand,
    group_sizes: Operand,
    *,
    w_layout: str = "nk",
    bias: Optional[Operand] = None,
    alpha: Scalar = 1.0,
    beta: Scalar = 0.0,
    path: Optional[Path] = None,
    zero_unused_rows: bool = False,
) -> _capi.GemmDesc:
    """out[g rows] = alpha_g * x[g rows] @ op(w[g]) + beta_g * out[g rows] + bias[g].

    x [M, K]; w [G, N, K] (w_layout "nk", the nn.Linear layout: op is the
    transpose) or [G, K, N] ("kn"); out [M, N]; bias [G, N]; group_sizes [G].
    x and w may be quantized: x its rowwise copy, w the copy whose blocks
    run along K (rowwise for "nk", columnwise for "kn").
    zero_unused_rows: the same launch writes zeros to the rows of out past
    the last group (otherwise never written).
    """
    check_ragged_m(x, w, out, group_sizes, w_layout=w_layout, bias=bias, alpha=alpha, beta=beta)
    desc = _capi.GemmDesc()
    desc.op = Op.RAGGED_M
    _fill_group_sizes(desc, group_sizes)
    _fill_argument(desc.lhs, x, Layout.N)
    desc.lhs_layout = Layout.N
    stored = _layout(w)
    _fill_argument(desc.rhs, w, stored)
    # C's GG_LAYOUT_N rhs is [G, K, N]: "kn" stored as given. Stored
    # transposed, the same memory reads as the other layout.
    as_given = Layout.N if w_layout == "kn" else Layout.T
    desc.rhs_layout = as_given if stored == Layout.N else Layout(1 - as_given)
    _fill(desc.out, out)
    if bias is not None:
        _fill(desc.bias, bias)
    _fill_scalar(desc.alpha, alpha)
    _fill_scalar(desc.beta, beta)
    desc.path = path_for(_logical(x).device) if path is None else path
    desc.flags = GemmFlag.ZERO_UNUSED_ROWS if zero_unused_rows else 0
    _c_names.record(
        desc,
        lhs=x.name,
        rhs=_c_name(w, stored),
        out=out.name,
        bias=None if bias is None else bias.name,
        group_sizes=group_sizes.name,
        alpha=_scalar_name(alpha, "alpha"),
        beta=_scalar_name(beta, "beta"),
    )
    return desc


def ragged_k(
    a: Argument,
    b: Argument,
    out: Operand,
    group_sizes: Operand,
    *,
    alpha: Scalar = 1.0,
    beta: Scalar = 0.0,
    path: Optional[Path] = None,
) -> _capi.GemmDesc:
    """out[g] = alpha_g * a[g rows]^T @ b[g rows] + beta_g * out[g].

    a [M, P]; b [M, Q]; out [G, P, Q]; group_sizes [G]. A group of size 0
    writes beta_g * out[g]. a and b may be quantized: their columnwise
    copies (blocks along the tokens), or either copy of a format without
    block scales.
    """
    check_ragged_k(a, b, out, group_sizes, alpha=alpha, beta=beta)
    desc = _capi.GemmDesc()
    desc.op = Op.RAGGED_K
    _fill_group_sizes(desc, group_sizes)
    desc.lhs_layout = _layout(a)
    _fill_argument(desc.lhs, a, desc.lhs_layout)
    desc.rhs_layout = _layout(b)
    _fill_argument(desc.rhs, b, desc.rhs_layout)
    _fill(desc.out, out)
    _fill_scalar(desc.alpha, alpha)
    _fill_scalar(desc.beta, beta)
    desc.path = path_for(_logical(a).device) if path is None else path
    _c_names.record(
        desc,
        lhs=_c_name(a, desc.lhs_layout),
        rhs=_c_name(b, desc.rhs_layout),
        out=out.name,
        group_sizes=group_sizes.name,
        alpha=_scalar_name(alpha, "alpha"),
        beta=_scalar_name(beta, "beta"),
    )
    return desc


def retargeted(
    template: _capi.GemmDesc,
    lhs: int,
    rhs: int,
    out: int,
    group_sizes: int,
    bias: int = 0,
    alpha: float = 1.0,
    beta: float = 0.0,
    *,
    lhs_scales: ScaleAddresses = (0, 0),
    rhs_scales: ScaleAddresses = (0, 0),
    alpha_per_group: int = 0,
    beta_per_group: int = 0,
) -> _capi.GemmDesc:
    """A copy of a descriptor built from views without data, pointing at the
    data of one launch, with that launch's scalars: lhs, rhs, out and bias
    are ragged_m's x, w, out and bias, or ragged_k's a, b and out;
    lhs_scales and rhs_scales the addresses of a quantized lhs's or rhs's
    block scales and fp32 scale; alpha_per_group and beta_per_group those of
    per-group fp32 arrays (0: the host value). A front end that launches the
    same shapes again and again checks and builds once per shape (no check
    reads an address or a host scalar's value) and retargets for each
    launch; the library validates every launch's descriptor again,
    addresses included."""
    desc = _capi.GemmDesc.from_buffer_copy(template)
    _c_names.carry_over(template, desc)
    desc.lhs.data = lhs or None
    desc.rhs.data = rhs or None
    desc.out.data = out or None
    desc.bias.data = bias or None
    desc.group_sizes.sizes = group_sizes or None
    _point_scales(desc.lhs, lhs_scales)
    _point_scales(desc.rhs, rhs_scales)
    desc.alpha.value = alpha
    desc.beta.value = beta
    desc.alpha.per_group = _float_pointer(alpha_per_group)
    desc.beta.per_group = _float_pointer(beta_per_group)
    return desc


# ---- grouped quantize -------------------------------------------------------

# Output formats by name: (element, block scaling, fp32 scale extent).
QUANTIZE_FORMATS = {
    "fp8_e4m3_tensor": (DType.E4M3, BlockScaling.NONE, ScaleExtent.TENSOR),
    "fp8_e4m3_group": (DType.E4M3, BlockScaling.NONE, ScaleExtent.GROUP),
    "fp8_e5m2_tensor": (DType.E5M2, BlockScaling.NONE, ScaleExtent.TENSOR),
    "fp8_e5m2_group": (DType.E5M2, BlockScaling.NONE, ScaleExtent.GROUP),
    "fp8_e4m3_1x128": (DType.E4M3, BlockScaling._1X128, ScaleExtent.NONE),
    "fp8_e5m2_1x128": (DType.E5M2, BlockScaling._1X128, ScaleExtent.NONE),
    "fp8_e4m3_128x128": (DType.E4M3, BlockScaling._128X128, ScaleExtent.NONE),
    "fp8_e5m2_128x128": (DType.E5M2, BlockScaling._128X128, ScaleExtent.NONE),
    "fp8_e4m3_rowwise": (DType.E4M3, BlockScaling.ROWWISE, ScaleExtent.NONE),
    "fp8_e5m2_rowwise": (DType.E5M2, BlockScaling.ROWWISE, ScaleExtent.NONE),
    "mxfp8_e4m3": (DType.E4M3, BlockScaling.MX32, ScaleExtent.NONE),
    "mxfp8_e5m2": (DType.E5M2, BlockScaling.MX32, ScaleExtent.NONE),
    "mxfp4": (DType.E2M1, BlockScaling.MX32, ScaleExtent.NONE),
    "nvfp4_tensor": (DType.E2M1, BlockScaling.NV16, ScaleExtent.TENSOR),
    "nvfp4_group": (DType.E2M1, BlockScaling.NV16, ScaleExtent.GROUP),
}

_BLOCK_ELEMENTS = {
    BlockScaling.MX32: 32,
    BlockScaling.NV16: 16,
    BlockScaling._1X128: 128,
    BlockScaling._128X128: 128,
}


def quantize_format(name: str) -> Tuple[DType, BlockScaling, ScaleExtent]:
    if name not in QUANTIZE_FORMATS:
        raise ValueError(
            "unknown quantize format %r; one of %s" % (name, ", ".join(sorted(QUANTIZE_FORMATS)))
        )
    return QUANTIZE_FORMATS[name]


@dataclass(frozen=True)
class QuantizeShapes:
    """Shapes (in elements) of one quantized output: data, block scales (None
    without), fp32 scale (None without)."""

    data: Tuple[int, ...]
    block_scales: Optional[Tuple[int, ...]]
    scale: Optional[Tuple[int, ...]]


def _block_scales_shape(
    scaling: BlockScaling, rows: int, cols: int, groups: int, ragged: bool
) -> Tuple[int, int]:
    """gg_block_scale_shape of a rows x cols matrix blocked along its cols;
    `ragged`: the cols are the tokens of `groups` groups, and blocks restart
    at every group start (a rowwise block is then the whole group)."""
    if scaling == BlockScaling.ROWWISE:
        return rows, groups if ragged else 1
    bs = _BLOCK_ELEMENTS[scaling]
    if scaling == BlockScaling._128X128:
        return -(-rows // bs), -(-cols // bs)
    return rows, cols // bs + min(groups, cols) if ragged else -(-cols // bs)


def quantize_shapes(
    fmt: str, input_shape: Tuple[int, ...], groups: int, columnwise: bool
) -> QuantizeShapes:
    """Output shapes for an input [M, K] (ragged, `groups` groups) or
    [G, N, K] (stacked): the rules of gg_block_scale_shape."""
    dtype, scaling, extent = quantize_format(fmt)
    stacked = len(input_shape) == 3
    tokens, k = input_shape[-2], input_shape[-1]
    rows, cols = (k, tokens) if columnwise else (tokens, k)
    lead = (input_shape[0],) if stacked else ()
    block_scales = None
    if scaling != BlockScaling.NONE:
        if scaling == BlockScaling._128X128 and not stacked:
            raise ValueError("%s is for stacked [G, N, K] weights only" % fmt)
        ragged = columnwise and not stacked
        block_scales = lead + _block_scales_shape(scaling, rows, cols, groups, ragged)
    scale = None
    if extent == ScaleExtent.TENSOR:
        scale = (1,)
    elif extent == ScaleExtent.GROUP:
        scale = (groups,)
    return QuantizeShapes(lead + (rows, cols), block_scales, scale)


def check_quantize_request(
    rowwise: Optional[str], columnwise: Optional[str], amax: bool, stacked: bool
) -> None:
    """Raises ValueError naming the argument: an unknown format, a 128x128
    format for ragged input, or nothing asked for."""
    for name, fmt in (("rowwise", rowwise), ("columnwise", columnwise)):
        if fmt is None:
            continue
        if fmt not in QUANTIZE_FORMATS:
            raise ValueError(
                "%s: unknown quantize format %r; one of %s"
                % (name, fmt, ", ".join(sorted(QUANTIZE_FORMATS)))
            )
        if QUANTIZE_FORMATS[fmt][1] == BlockScaling._128X128 and not stacked:
            raise ValueError(
                "%s: %s is for stacked [G, N, K] weights only (group_sizes None)" % (name, fmt)
            )
    if rowwise is None and columnwise is None and not amax:
        raise ValueError("grouped_quantize: nothing asked for (no rowwise, no columnwise, no amax)")


@dataclass(frozen=True)
class QuantizeArray:
    """One array a front end allocates for a quantized output: its shape and
    a dtype name that torch and jax.numpy both define."""

    shape: Tuple[int, ...]
    dtype: str


_DATA_DTYPE_NAMES = {DType.E4M3: "float8_e4m3fn", DType.E5M2: "float8_e5m2", DType.E2M1: "uint8"}


def quantize_arrays(
    fmt: str, input_shape: Tuple[int, ...], groups: int, columnwise: bool
) -> Tuple[QuantizeArray, Optional[QuantizeArray], Optional[QuantizeArray]]:
    """data, block scales, fp32 scale of one output as the front ends
    allocate them (None where the format has none). fp8 data is
    float8_e4m3fn / float8_e5m2; nvfp4 and mxfp4 data is uint8, two e2m1
    elements per byte (the even one in the low nibble), so its last
    dimension is half the element count; e8m0 (MX) and ue4m3 (nvfp4) block
    scales are uint8 bytes, 1x128, 128x128 and rowwise block scales
    float32."""
    dtype, scaling, _ = quantize_format(fmt)
    shapes = quantize_shapes(fmt, input_shape, groups, columnwise)
    data_shape = shapes.data
    if dtype == DType.E2M1:
        if data_shape[-1] % 2:
            raise ValueError(
                "%s: e2m1 packs two elements per byte; the %s output's last dimension (%d) "
                "must be even" % (fmt, "columnwise" if columnwise else "rowwise", data_shape[-1])
            )
        data_shape = data_shape[:-1] + (data_shape[-1] // 2,)
    block_scales = None
    if shapes.block_scales is not None:
        fp32 = scaling in (BlockScaling._1X128, BlockScaling._128X128, BlockScaling.ROWWISE)
        block_scales = QuantizeArray(shapes.block_scales, "float32" if fp32 else "uint8")
    scale = None if shapes.scale is None else QuantizeArray(shapes.scale, "float32")
    return QuantizeArray(data_shape, _DATA_DTYPE_NAMES[dtype]), block_scales, scale


@dataclass(frozen=True)
class QuantizedTensor:
    """One quantized output: data, block scales and fp32 scale (None where the
    format has none), its format (a QUANTIZE_FORMATS name) and whether it is
    the columnwise copy (stored transposed). Dequantized: data * block scale
    * scale. The products take it as an operand (QuantizedOperand). A front
    end whose results are trees of arrays (JAX pytrees) registers the class
    with ARRAYS as its children and METADATA as static data."""

    data: Any
    block_scales: Optional[Any]
    scale: Optional[Any]
    format: str
    columnwise: bool

    ARRAYS: ClassVar[Tuple[str, ...]] = ("data", "block_scales", "scale")
    METADATA: ClassVar[Tuple[str, ...]] = ("format", "columnwise")


class Quantized(NamedTuple):
    rowwise: Optional[QuantizedTensor]
    columnwise: Optional[QuantizedTensor]
    amax: Optional[Any]


def quantized(
    rowwise: Optional[str], columnwise: Optional[str], amax: bool, arrays: Sequence[Any]
) -> Quantized:
    """The Quantized of a front end's seven arrays (rowwise data, block
    scales, scale; columnwise likewise; amax), dropping those not asked for
    and those the formats have none of."""

    def output(fmt, columnwise_copy, data, block_scales, scale):
        if fmt is None:
            return None
        _, scaling, extent = quantize_format(fmt)
        return QuantizedTensor(
            data,
            None if scaling == BlockScaling.NONE else block_scales,
            None if extent == ScaleExtent.NONE else scale,
            fmt,
            columnwise_copy,
        )

    return Quantized(
        output(rowwise, False, *arrays[0:3]),
        output(columnwise, True, *arrays[3:6]),
        arrays[6] if amax else None,
    )


@dataclass(frozen=True)
class QuantizedOutput:
    """Addresses of one requested output (data, block scales, fp32 scale: 0 for none)."""

    fmt: str
    data: int
    block_scales: int
    scale: int


OutputAddresses = Tuple[int, int, int]  # data, block scales, fp32 scale (0: none)


def _float_pointer(address: int):
    return ctypes.cast(address, ctypes.POINTER(ctypes.c_float)) if address else None


def _point_output(target: _capi.Tensor, addresses: OutputAddresses) -> None:
    data, block_scales, scale = addresses
    target.data = data or None
    _point_scales(target, (block_scales, scale))


def grouped_quantize(
    x: Operand,
    group_sizes: Optional[Operand],
    rowwise: Optional[QuantizedOutput],
    columnwise: Optional[QuantizedOutput],
    amax: int = 0,
    *,
    path: Optional[Path] = None,
) -> _capi.QuantizeDesc:
    """The gg_quantize_desc of a grouped quantize of x ([M, K] ragged by
    group_sizes, or [G, N, K] stacked when group_sizes is None). Outputs are
    packed (e2m1: two elements per byte); the library validates the rest."""
    _require_float(x)
    _require_inner_contiguous(x)
    stacked = group_sizes is None
    _require_rank(x, 3 if stacked else 2, "[G, N, K]" if stacked else "[M, K]")
    groups = x.shape[0] if stacked else _check_group_sizes(group_sizes, x.device)
    desc = _capi.QuantizeDesc()
    desc.num_groups = groups
    if not stacked:
        desc.group_sizes.sizes = group_sizes.data or None
        desc.group_sizes.offsets = None
        desc.group_sizes.type = int(group_sizes.dtype)
    _fill(desc.input, x)
    for target, output, columnwise_output in (
        (desc.rowwise, rowwise, False),
        (desc.columnwise, columnwise, True),
    ):
        if output is None:
            continue
        dtype, scaling, extent = quantize_format(output.fmt)
        shape = quantize_shapes(output.fmt, x.shape, groups, columnwise_output).data
        target.dtype = int(dtype)
        target.rank = len(shape)
        stride = 1
        for i in reversed(range(len(shape))):
            target.shape[i] = shape[i]
            target.strides[i] = stride
            stride *= shape[i]
        target.block_scaling = int(scaling)
        target.scale_extent = int(extent)
        _point_output(target, (output.data, output.block_scales, output.scale))
    desc.amax = _float_pointer(amax)
    desc.path = path_for(x.device) if path is None else path
    _c_names.record(
        desc,
        input=x.name,
        group_sizes=None if stacked else group_sizes.name,
        rowwise="rowwise",
        columnwise="columnwise",
        amax="amax",
    )
    return desc


def quantize_retargeted(
    template: _capi.QuantizeDesc,
    x: int,
    group_sizes: int,
    rowwise: Optional[OutputAddresses],
    columnwise: Optional[OutputAddresses],
    amax: int = 0,
) -> _capi.QuantizeDesc:
    """A copy of a grouped_quantize descriptor built from views without data
    (its outputs' addresses 0), pointing at the data of one launch: x's,
    group_sizes' (0 when stacked), and the addresses of each output the
    template has (None for one it has not). As with retargeted, the library
    validates every launch's descriptor again."""
    desc = _capi.QuantizeDesc.from_buffer_copy(template)
    _c_names.carry_over(template, desc)
    desc.input.data = x or None
    desc.group_sizes.sizes = group_sizes or None
    for target, addresses in ((desc.rowwise, rowwise), (desc.columnwise, columnwise)):
        if addresses is not None:
            _point_output(target, addresses)
    desc.amax = _float_pointer(amax)
    return desc


# ---- calls ------------------------------------------------------------------

Desc = Union[_capi.GemmDesc, _capi.QuantizeDesc]


def _call(name: str, desc: Desc, *args) -> None:
    """_capi.call on a descriptor, its failure reported in the arguments'
    names rather than the descriptor's fields (_c_names)."""
    try:
        _capi.call(name, desc, *args)
    except GroupGemmError as error:
        raise type(error)(_c_names.translated(str(error), desc)) from None


def workspace_size(desc: Desc) -> int:
    """Bytes of workspace the launch needs (the library validates the descriptor)."""
    size = ctypes.c_size_t(0)
    name = (
        "gg_grouped_quantize_workspace_size"
        if isinstance(desc, _capi.QuantizeDesc)
        else "gg_grouped_gemm_workspace_size"
    )
    _call(name, desc, ctypes.byref(size))
    return size.value


def launch(desc: Desc, workspace: int, workspace_bytes: int, stream: int = 0) -> None:
    """Runs the product (or quantize) on `stream` (a cudaStream_t address; 0: the default stream)."""
    name = "gg_grouped_quantize" if isinstance(desc, _capi.QuantizeDesc) else "gg_grouped_gemm"
    _call(name, desc, workspace or None, workspace_bytes, stream or None)


def check(workspace: int, path: Path, stream: int = 0) -> DeviceFlag:
    """Reads and clears the device-side error flags of a workspace. Waits for
    `stream`: call it outside CUDA graph capture."""
    flags = ctypes.c_uint32(0)
    _capi.call("gg_check", workspace or None, int(path), stream or None, ctypes.byref(flags))
    return DeviceFlag(flags.value)


def path_available(path: Path, device: int = 0) -> Tuple[bool, str]:
    """Whether `path` can run on CUDA device `device`, and if not, why."""
    available = ctypes.c_int(0)
    _capi.call("gg_path_available", int(path), device, ctypes.byref(available))
    return bool(available.value), "" if available.value else _capi.last_error()

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
"""

import ctypes
from dataclasses import dataclass
from typing import Any, NamedTuple, Optional, Sequence, Tuple, Union

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


@dataclass(frozen=True)
class Operand:
    """A strided view of one argument. `device` is "cpu" or "cuda:<index>";
    `data` may be 0 where only the checks run (shapes known, memory not).
    With `pointer_array`, a [G, rows, cols] view whose G matrices lie apart:
    `data` is the address of an array of their G addresses, in memory the
    library reads on `device` (see expert_matrices)."""

    name: str
    data: int
    dtype: Union[DType, IndexType]
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]
    device: str
    pointer_array: bool = False


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


def ragged_m_out_shape(x: Operand, w: Operand, w_layout: str) -> Tuple[int, int]:
    """[M, N] of a ragged-M product, after checking the ranks of x and w."""
    if w_layout not in W_LAYOUTS:
        raise ValueError("w_layout: expected 'nk' or 'kn', got %r" % (w_layout,))
    _require_rank(x, 2, "[M, K]")
    _require_rank(
        w, 3, ("[G, N, K]" if w_layout == "nk" else "[G, K, N]") + " (w_layout %r)" % w_layout
    )
    return x.shape[0], (w.shape[1] if w_layout == "nk" else w.shape[2])


def check_ragged_m(
    x: Operand,
    w: Operand,
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
    _check_scalar(alpha, "alpha", groups, x.device)
    _check_scalar(beta, "beta", groups, x.device)


def ragged_k_out_shape(a: Operand, b: Operand, group_sizes: Operand) -> Tuple[int, int, int]:
    """[G, P, Q] of a ragged-K product, after checking the ranks of a, b and group_sizes."""
    _require_rank(a, 2, "[M, P]")
    _require_rank(b, 2, "[M, Q]")
    _require_rank(group_sizes, 1, "a 1-D array [G]")
    return group_sizes.shape[0], a.shape[1], b.shape[1]


def check_ragged_k(
    a: Operand,
    b: Operand,
    out: Operand,
    group_sizes: Operand,
    *,
    alpha: Scalar = 1.0,
    beta: Scalar = 0.0,
) -> None:
    """Every host-visible check of a ragged-K product; raises ValueError or
    TypeError naming the argument."""
    expected_out = ragged_k_out_shape(a, b, group_sizes)
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


def _c_name(operand: Operand, layout: Layout) -> str:
    """The name of an operand's C view in messages: ^T where it is the transpose (_fill)."""
    return operand.name + ("^T" if layout == Layout.T else "")


def _scalar_name(value: Scalar, default: str) -> str:
    return value.name if isinstance(value, Operand) else default


def path_for(device: str) -> Path:
    """The reference reads host memory; data on a GPU goes to the fastest GPU path."""
    return Path.REFERENCE if device == "cpu" else Path.AUTO


def ragged_m(
    x: Operand,
    w: Operand,
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
    zero_unused_rows: the same launch writes zeros to the rows of out past
    the last group (otherwise never written).
    """
    check_ragged_m(x, w, out, group_sizes, w_layout=w_layout, bias=bias, alpha=alpha, beta=beta)
    desc = _capi.GemmDesc()
    desc.op = Op.RAGGED_M
    _fill_group_sizes(desc, group_sizes)
    _fill(desc.lhs, x)
    desc.lhs_layout = Layout.N
    stored = _stored_layout(w)
    _fill(desc.rhs, w, stored)
    # C's GG_LAYOUT_N rhs is [G, K, N]: "kn" stored as given. Stored
    # transposed, the same memory reads as the other layout.
    as_given = Layout.N if w_layout == "kn" else Layout.T
    desc.rhs_layout = as_given if stored == Layout.N else Layout(1 - as_given)
    _fill(desc.out, out)
    if bias is not None:
        _fill(desc.bias, bias)
    _fill_scalar(desc.alpha, alpha)
    _fill_scalar(desc.beta, beta)
    desc.path = path_for(x.device) if path is None else path
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
    a: Operand,
    b: Operand,
    out: Operand,
    group_sizes: Operand,
    *,
    alpha: Scalar = 1.0,
    beta: Scalar = 0.0,
    path: Optional[Path] = None,
) -> _capi.GemmDesc:
    """out[g] = alpha_g * a[g rows]^T @ b[g rows] + beta_g * out[g].

    a [M, P]; b [M, Q]; out [G, P, Q]; group_sizes [G]. A group of size 0
    writes beta_g * out[g].
    """
    check_ragged_k(a, b, out, group_sizes, alpha=alpha, beta=beta)
    desc = _capi.GemmDesc()
    desc.op = Op.RAGGED_K
    _fill_group_sizes(desc, group_sizes)
    desc.lhs_layout = _stored_layout(a)
    _fill(desc.lhs, a, desc.lhs_layout)
    desc.rhs_layout = _stored_layout(b)
    _fill(desc.rhs, b, desc.rhs_layout)
    _fill(desc.out, out)
    _fill_scalar(desc.alpha, alpha)
    _fill_scalar(desc.beta, beta)
    desc.path = path_for(a.device) if path is None else path
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
) -> _capi.GemmDesc:
    """A copy of a descriptor built from views without data, pointing at the
    data of one launch, with that launch's host scalars: lhs, rhs, out and
    bias are ragged_m's x, w, out and bias, or ragged_k's a, b and out. A
    front end that launches the same shapes again and again checks and
    builds once per shape (no check reads an address or a host scalar's
    value) and retargets for each launch; the library validates every
    launch's descriptor again, addresses included."""
    desc = _capi.GemmDesc.from_buffer_copy(template)
    _c_names.carry_over(template, desc)
    desc.lhs.data = lhs or None
    desc.rhs.data = rhs or None
    desc.out.data = out or None
    desc.bias.data = bias or None
    desc.group_sizes.sizes = group_sizes or None
    desc.alpha.value = alpha
    desc.beta.value = beta
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
    "mxfp8_e4m3": (DType.E4M3, BlockScaling.MX32, ScaleExtent.NONE),
    "mxfp8_e5m2": (DType.E5M2, BlockScaling.MX32, ScaleExtent.NONE),
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
        bs = _BLOCK_ELEMENTS[scaling]
        if scaling == BlockScaling._128X128:
            if not stacked:
                raise ValueError("%s is for stacked [G, N, K] weights only" % fmt)
            block_scales = lead + (-(-rows // bs), -(-cols // bs))
        elif columnwise and not stacked:
            block_scales = (rows, cols // bs + min(groups, cols))
        else:
            block_scales = lead + (rows, -(-cols // bs))
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
    float8_e4m3fn / float8_e5m2; nvfp4 data is uint8, two e2m1 elements per
    byte (the even one in the low nibble), so its last dimension is half the
    element count; e8m0 (mxfp8) and ue4m3 (nvfp4) block scales are uint8
    bytes, 1x128 and 128x128 block scales float32."""
    dtype, scaling, _ = quantize_format(fmt)
    shapes = quantize_shapes(fmt, input_shape, groups, columnwise)
    data_shape = shapes.data
    if dtype == DType.E2M1:
        if data_shape[-1] % 2:
            raise ValueError(
                "%s: nvfp4 packs two elements per byte; the %s output's last dimension (%d) "
                "must be even" % (fmt, "columnwise" if columnwise else "rowwise", data_shape[-1])
            )
        data_shape = data_shape[:-1] + (data_shape[-1] // 2,)
    block_scales = None
    if shapes.block_scales is not None:
        fp32 = scaling in (BlockScaling._1X128, BlockScaling._128X128)
        block_scales = QuantizeArray(shapes.block_scales, "float32" if fp32 else "uint8")
    scale = None if shapes.scale is None else QuantizeArray(shapes.scale, "float32")
    return QuantizeArray(data_shape, _DATA_DTYPE_NAMES[dtype]), block_scales, scale


class QuantizedTensor(NamedTuple):
    """One quantized output: data, block scales and fp32 scale (None where the
    format has none). Dequantized: data * block scale * scale."""

    data: Any
    block_scales: Optional[Any]
    scale: Optional[Any]


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

    def output(fmt, data, block_scales, scale):
        if fmt is None:
            return None
        _, scaling, extent = quantize_format(fmt)
        return QuantizedTensor(
            data,
            None if scaling == BlockScaling.NONE else block_scales,
            None if extent == ScaleExtent.NONE else scale,
        )

    return Quantized(
        output(rowwise, *arrays[0:3]),
        output(columnwise, *arrays[3:6]),
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
    target.block_scales = block_scales or None
    target.scale = _float_pointer(scale)


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

"""NumPy front end: the grouped products on host arrays, through the CPU reference.

GG_PATH_REFERENCE reads and writes host memory, so numpy arrays are its
natural operands: this is the way to run the library without a GPU, and the
oracle the tests check the bindings with. bf16 and fp8 arrays are the
ml_dtypes types (numpy has none of its own); they are recognized by dtype
name, so ml_dtypes is needed only by code that creates them.

Outputs are allocated here unless `out=` is given: ragged-M outputs are
zero-filled (rows past the last group are never written), ragged-K outputs
are fully written by the product. Experts kept as separate matrices are
passed as lists of G arrays: the weights of grouped_mm, the outputs of
ragged_k_mm (per-expert gradients, accumulated with beta = 1). Each thread
gets its own zero-filled workspace, grown on demand.

Group sizes are host arrays here, so unlike the GPU front ends (which never
read them on the host, and whose bad sizes the library clamps and reports
through the workspace's flags) the products read them first: a negative
size, or sizes summing past M, raise ValueError. Operands are bfloat16,
float16 or fp8; the output may be float32.

grouped_quantize writes every format of core.QUANTIZE_FORMATS, and the
products take its outputs (core.QuantizedTensor) as operands: the
quantized formats run here, on the reference, and nowhere else yet.
"""

import threading
from typing import Optional, Sequence, Tuple, Union

import numpy as np

from . import core
from ._capi import DeviceFlag, DType, IndexType, Path

_ELEMENT_TYPES = {
    "bfloat16": DType.BF16,
    "float16": DType.FP16,
    "float32": DType.FP32,
    "float8_e4m3fn": DType.E4M3,
    "float8_e5m2": DType.E5M2,
    "int32": IndexType.INT32,
    "int64": IndexType.INT64,
    "uint8": core.Storage.UINT8,  # packed e2m1, e8m0 and ue4m3 block scales
}

# Element types of the products' operands (x and w, a and b), by dtype name.
_OPERAND_TYPES = ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")

ArrayScalar = Union[float, np.ndarray]
Operand = Union[np.ndarray, core.QuantizedTensor]


def operand(name: str, array: np.ndarray) -> core.Operand:
    """The core view of a numpy array (strides converted from bytes to elements)."""
    if not isinstance(array, np.ndarray):
        raise TypeError("%s: expected a numpy array, got %s" % (name, type(array).__name__))
    element_type = _ELEMENT_TYPES.get(array.dtype.name)
    if element_type is None:
        raise TypeError("%s: unsupported element type %s" % (name, array.dtype.name))
    itemsize = array.dtype.itemsize
    if any(stride % itemsize for stride in array.strides):
        raise ValueError(
            "%s: strides %s are not a multiple of the element size" % (name, array.strides)
        )
    return core.Operand(
        name=name,
        data=array.ctypes.data,
        dtype=element_type,
        shape=tuple(array.shape),
        strides=tuple(stride // itemsize for stride in array.strides),
        device="cpu",
    )


def argument(name: str, value: Operand) -> core.Argument:
    """The core view of an operand: an array, or grouped_quantize's output."""
    if not isinstance(value, core.QuantizedTensor):
        return operand(name, value)
    arrays = (value.data, value.block_scales, value.scale)
    parts = {
        part: None if array is None else operand("%s.%s" % (name, part), array)
        for part, array in zip(core.QuantizedTensor.ARRAYS, arrays)
    }
    return core.QuantizedOperand(name, value.format, columnwise=value.columnwise, **parts)


Matrices = Union[np.ndarray, Sequence[np.ndarray]]


def matrices_operand(name: str, arrays: Matrices) -> Tuple[core.Operand, Optional[np.ndarray]]:
    """The core view of a 3-D array, or of a list of G matrices (one per
    group, kept apart): then also the array of their addresses, which must
    live until the launch has run."""
    if isinstance(arrays, np.ndarray):
        return operand(name, arrays), None
    if not isinstance(arrays, (list, tuple)):
        raise TypeError(
            "%s: expected a numpy array or a list of matrices, got %s"
            % (name, type(arrays).__name__)
        )
    views = [operand("%s[%d]" % (name, g), array) for g, array in enumerate(arrays)]
    addresses = np.array([view.data for view in views], dtype=np.uint64)
    return core.expert_matrices(name, addresses.ctypes.data, views), addresses


class HostWorkspace:
    """A zero-filled host workspace that grows on demand, keeping its contents
    (the device-side error flags stay set until check())."""

    def __init__(self, nbytes: int = 0):
        self.buffer = np.zeros(nbytes, dtype=np.uint8)

    def reserve(self, nbytes: int) -> None:
        if nbytes > self.buffer.size:
            grown = np.zeros(nbytes, dtype=np.uint8)
            grown[: self.buffer.size] = self.buffer
            self.buffer = grown

    def run(self, desc) -> None:
        self.reserve(core.workspace_size(desc))
        core.launch(desc, self.buffer.ctypes.data, self.buffer.size)

    def check(self) -> DeviceFlag:
        """Reads and clears the flags: which group sizes were clamped since the last check."""
        if self.buffer.size == 0:  # never used: nothing can have been flagged
            return DeviceFlag(0)
        return core.check(self.buffer.ctypes.data, Path.REFERENCE)


_per_thread = threading.local()


def default_workspace() -> HostWorkspace:
    if not hasattr(_per_thread, "workspace"):
        _per_thread.workspace = HostWorkspace()
    return _per_thread.workspace


def _or_default(workspace: Optional[HostWorkspace]) -> HostWorkspace:
    return default_workspace() if workspace is None else workspace


def _require_operands(first_name: str, first, second_name: str, second: Matrices) -> None:
    """Raises TypeError naming an operand of a type no product takes, with
    the cast that makes it one (float32 data: bfloat16 operands, a float32
    output). Of a list of matrices, the first stands for all (the others
    must have its type: core.expert_matrices)."""
    checked_name = second_name
    if isinstance(second, (list, tuple)) and second:
        checked_name, second = "%s[0]" % second_name, second[0]
    for name, array in ((first_name, first), (checked_name, second)):
        if isinstance(array, core.QuantizedTensor):
            continue  # its format is checked against grouped_quantize's
        dtype = getattr(array, "dtype", None)
        if dtype is not None and dtype.name not in _OPERAND_TYPES:
            raise TypeError(
                "%s: dtype %s is not supported for operands (bfloat16, float16, float8_e4m3fn or "
                "float8_e5m2); cast %s and %s to ml_dtypes.bfloat16 and pass out_dtype=np.float32 "
                "for a float32 result" % (name, dtype.name, first_name, second_name)
            )


def _require_sizes_within(group_sizes: np.ndarray, rows: int, what: str) -> None:
    """Raises ValueError naming group_sizes where a size is negative or the
    sizes sum past `rows`, the M of `what`: the host can read these sizes."""
    total = 0
    for g, size in enumerate(int(size) for size in group_sizes):
        if size < 0:
            raise ValueError("group_sizes: group %d has size %d; sizes must be >= 0" % (g, size))
        total += size
    if total > rows:
        raise ValueError(
            "group_sizes: the sizes sum to %d, past M = %d (the rows of %s)" % (total, rows, what)
        )


def _scalar(name: str, value: ArrayScalar):
    return operand(name, value) if isinstance(value, np.ndarray) else float(value)


def _default_out_dtype(first: Operand):
    """An operand's own dtype; float32 for a quantized one."""
    return np.float32 if isinstance(first, core.QuantizedTensor) else first.dtype


def _output(out: Optional[np.ndarray], shape, dtype, beta: ArrayScalar, allocate):
    if out is None:
        if isinstance(beta, np.ndarray) or beta != 0:
            raise ValueError(
                "beta: accumulating (beta != 0) needs out=, the array to accumulate into"
            )
        return allocate(shape, dtype=dtype)
    if not isinstance(out, (np.ndarray, list, tuple)):
        raise TypeError("out: expected a numpy array, got %s" % type(out).__name__)
    return out


def grouped_mm(
    x: Operand,
    w: Union[Operand, Sequence[np.ndarray]],
    group_sizes: np.ndarray,
    *,
    w_layout: str = "nk",
    out_dtype=None,
    bias: Optional[np.ndarray] = None,
    alpha: ArrayScalar = 1.0,
    beta: ArrayScalar = 0.0,
    out: Optional[np.ndarray] = None,
    workspace: Optional[HostWorkspace] = None,
) -> np.ndarray:
    """Ragged-M product: out[g rows] = alpha * x[g rows] @ op(w[g]) + beta * out[g rows] + bias[g].

    x [M, K]; w [G, N, K] for w_layout "nk" (nn.Linear layout) or [G, K, N]
    for "kn", or a list of the G expert matrices ([N, K] or [K, N], of one
    shape, type and strides); group_sizes int32/int64 [G] with sum <= M.
    x and w may be grouped_quantize outputs (core.QuantizedTensor): x its
    rowwise copy, w the copy whose blocks run along K (the rowwise copy of
    [G, N, K] weights for "nk", the columnwise one for "kn"), both in one
    recipe, or a bf16/fp16 x with quantized weights. alpha and beta are
    floats or fp32 arrays [G]. Returns out [M, N] (dtype out_dtype, default
    x's, float32 for a quantized x). Raises ValueError where a group size is
    negative or the sizes sum past M.
    """
    _require_operands("x", x, "w", w)
    x_view = argument("x", x)
    if isinstance(w, core.QuantizedTensor):
        w_view, _w_addresses = argument("w", w), None
    else:
        w_view, _w_addresses = matrices_operand("w", w)
    shape = core.ragged_m_out_shape(x_view, w_view, w_layout)
    dtype = _default_out_dtype(x) if out_dtype is None else out_dtype
    out = _output(out, shape, dtype, beta, np.zeros)
    desc = core.ragged_m(
        x_view,
        w_view,
        operand("out", out),
        operand("group_sizes", group_sizes),
        w_layout=w_layout,
        bias=None if bias is None else operand("bias", bias),
        alpha=_scalar("alpha", alpha),
        beta=_scalar("beta", beta),
    )
    _require_sizes_within(group_sizes, shape[0], "x")
    _or_default(workspace).run(desc)
    return out


def ragged_k_mm(
    a: Operand,
    b: Operand,
    group_sizes: np.ndarray,
    *,
    out_dtype=None,
    alpha: ArrayScalar = 1.0,
    beta: ArrayScalar = 0.0,
    out: Optional[Matrices] = None,
    workspace: Optional[HostWorkspace] = None,
) -> Matrices:
    """Ragged-K product: out[g] = alpha * a[g rows]^T @ b[g rows] + beta * out[g].

    a [M, P]; b [M, Q]; group_sizes int32/int64 [G]. Returns out [G, P, Q]
    (dtype out_dtype, default a's, float32 for a quantized a); a group of
    size 0 gets beta * out[g]. out= may be a list of G separate [P, Q]
    matrices (per-expert gradients). a and b may be grouped_quantize
    outputs of one recipe: their columnwise copies (blocks along the
    tokens), or either copy of a format without block scales. Raises
    ValueError where a group size is negative or the sizes sum past M.
    """
    _require_operands("a", a, "b", b)
    a_view, b_view, sizes_view = (
        argument("a", a),
        argument("b", b),
        operand("group_sizes", group_sizes),
    )
    shape = core.ragged_k_out_shape(a_view, b_view, sizes_view)
    dtype = _default_out_dtype(a) if out_dtype is None else out_dtype
    out = _output(out, shape, dtype, beta, np.empty)
    out_view, _out_addresses = matrices_operand("out", out)
    desc = core.ragged_k(
        a_view,
        b_view,
        out_view,
        sizes_view,
        alpha=_scalar("alpha", alpha),
        beta=_scalar("beta", beta),
    )
    _require_sizes_within(group_sizes, core.argument_shape(a_view)[0], "a and b")
    _or_default(workspace).run(desc)
    return out


def _new_array(array: Optional[core.QuantizeArray]) -> Optional[np.ndarray]:
    if array is None:
        return None
    if array.dtype.startswith("float8"):
        import ml_dtypes  # noqa: PLC0415  (fp8 arrays are its types)

        return np.empty(array.shape, getattr(ml_dtypes, array.dtype))
    return np.empty(array.shape, array.dtype)


def _output_arrays(fmt: Optional[str], shape, groups: int, columnwise: bool) -> list:
    """data, block scales and fp32 scale of one output (None: not asked for, or none)."""
    if fmt is None:
        return [None] * 3
    return [_new_array(array) for array in core.quantize_arrays(fmt, shape, groups, columnwise)]


def _address(array: Optional[np.ndarray]) -> int:
    return 0 if array is None else array.ctypes.data


def _quantized_output(fmt: Optional[str], arrays) -> Optional[core.QuantizedOutput]:
    return None if fmt is None else core.QuantizedOutput(fmt, *map(_address, arrays))


def grouped_quantize(
    x: np.ndarray,
    group_sizes: Optional[np.ndarray] = None,
    *,
    rowwise: Optional[str] = None,
    columnwise: Optional[str] = None,
    amax: bool = False,
    workspace: Optional[HostWorkspace] = None,
) -> core.Quantized:
    """Quantizes x [M, K] (ragged by group_sizes [G] int32/int64) or
    stacked weights [G, N, K] (group_sizes None), bfloat16/float16/float32,
    into a rowwise output (x's shape, blocks along K) and/or a columnwise
    one (transposed, blocks along the tokens restarting at every group
    start), each in a format of core.QUANTIZE_FORMATS, as
    groupgemm.torch.grouped_quantize does; amax=True also returns each
    group's absolute maximum [G]. Entries past the last group are left
    uninitialized. Raises ValueError where a group size is negative or the
    sizes sum past M."""
    stacked = group_sizes is None
    core.check_quantize_request(rowwise, columnwise, amax, stacked)
    x_view = operand("x", x)
    sizes_view = None if stacked else operand("group_sizes", group_sizes)
    groups = x.shape[0] if stacked else len(group_sizes)
    arrays = _output_arrays(rowwise, x.shape, groups, False)
    arrays += _output_arrays(columnwise, x.shape, groups, True)
    arrays.append(np.zeros(groups, np.float32) if amax else None)
    desc = core.grouped_quantize(
        x_view,
        sizes_view,
        _quantized_output(rowwise, arrays[0:3]),
        _quantized_output(columnwise, arrays[3:6]),
        _address(arrays[6]),
    )
    if not stacked:
        _require_sizes_within(group_sizes, x.shape[0], "x")
    _or_default(workspace).run(desc)
    return core.quantized(rowwise, columnwise, amax, arrays)


def check(workspace: Optional[HostWorkspace] = None) -> DeviceFlag:
    """Reads and clears the device-side error flags of `workspace` (default:
    this thread's): non-zero when group sizes were negative or overflowed,
    which only a descriptor built with groupgemm.core and run by
    HostWorkspace.run can have (the products here refuse such sizes)."""
    return _or_default(workspace).check()

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
}

# Element types of the products' operands (x and w, a and b), by dtype name.
_OPERAND_TYPES = ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")

ArrayScalar = Union[float, np.ndarray]


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
    x: np.ndarray,
    w: Matrices,
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
    Returns out [M, N] (dtype out_dtype, default x's). Raises ValueError
    where a group size is negative or the sizes sum past M.
    """
    _require_operands("x", x, "w", w)
    x_view = operand("x", x)
    w_view, _w_addresses = matrices_operand("w", w)
    shape = core.ragged_m_out_shape(x_view, w_view, w_layout)
    out = _output(out, shape, x.dtype if out_dtype is None else out_dtype, beta, np.zeros)
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
    _require_sizes_within(group_sizes, x.shape[0], "x")
    _or_default(workspace).run(desc)
    return out


def ragged_k_mm(
    a: np.ndarray,
    b: np.ndarray,
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
    (dtype out_dtype, default a's); a group of size 0 gets beta * out[g].
    out= may be a list of G separate [P, Q] matrices (per-expert gradients).
    Raises ValueError where a group size is negative or the sizes sum past M.
    """
    _require_operands("a", a, "b", b)
    a_view, b_view, sizes_view = (
        operand("a", a),
        operand("b", b),
        operand("group_sizes", group_sizes),
    )
    shape = core.ragged_k_out_shape(a_view, b_view, sizes_view)
    out = _output(out, shape, a.dtype if out_dtype is None else out_dtype, beta, np.empty)
    out_view, _out_addresses = matrices_operand("out", out)
    desc = core.ragged_k(
        a_view,
        b_view,
        out_view,
        sizes_view,
        alpha=_scalar("alpha", alpha),
        beta=_scalar("beta", beta),
    )
    _require_sizes_within(group_sizes, a.shape[0], "a and b")
    _or_default(workspace).run(desc)
    return out


def check(workspace: Optional[HostWorkspace] = None) -> DeviceFlag:
    """Reads and clears the device-side error flags of `workspace` (default:
    this thread's): non-zero when group sizes were negative or overflowed,
    which only a descriptor built with groupgemm.core and run by
    HostWorkspace.run can have (the products here refuse such sizes)."""
    return _or_default(workspace).check()

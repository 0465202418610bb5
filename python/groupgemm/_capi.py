"""ctypes mirror of include/groupgemm/groupgemm.h, and the library loader.

This file states the C ABI once for Python: every enum and #define value,
every struct (field by field, in order) and every function prototype. Nothing
here knows about numpy or torch. tests/test_capi.py parses the header and
compiles a small C program against it to check that each value, field offset,
struct size and prototype below matches, so the two cannot drift apart
silently.

The library is loaded on first use, not at import, so `import groupgemm`
works on a machine without it. Where it is looked for, in order:
  1. the path in the environment variable GROUPGEMM_LIBRARY;
  2. groupgemm/lib/ inside this package (where `pip install .` puts it);
  3. build/release/src/ of the source tree this package sits in.
"""

import ctypes
import enum
import glob
import os
import threading
from ctypes import POINTER, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_uint32, c_void_p
from typing import List, Optional

from .errors import (
    CudaError,
    InternalError,
    InvalidArgument,
    LibraryError,
    NoDevice,
    NotSupported,
    WorkspaceTooSmall,
)

HEADER_VERSION = (0, 1, 0)  # GG_VERSION_MAJOR, _MINOR, _PATCH


class Status(enum.IntEnum):
    SUCCESS = 0
    INVALID_ARGUMENT = 1
    NOT_SUPPORTED = 2
    WORKSPACE_TOO_SMALL = 3
    NO_DEVICE = 4
    CUDA_ERROR = 5
    INTERNAL_ERROR = 6


class DType(enum.IntEnum):
    BF16 = 0
    FP16 = 1
    FP32 = 2
    E4M3 = 3
    E5M2 = 4
    E2M1 = 5


class BlockScaling(enum.IntEnum):
    NONE = 0
    MX32 = 1
    NV16 = 2
    _1X128 = 3  # C: GG_BLOCK_1X128 (a Python name cannot start with a digit)
    _128X128 = 4
    ROWWISE = 5


class ScaleExtent(enum.IntEnum):
    NONE = 0
    TENSOR = 1
    GROUP = 2


class Layout(enum.IntEnum):
    N = 0
    T = 1


class Op(enum.IntEnum):
    RAGGED_M = 0
    RAGGED_K = 1


class IndexType(enum.IntEnum):
    INT32 = 0
    INT64 = 1


class Path(enum.IntEnum):
    AUTO = 0
    REFERENCE = 1
    PORTABLE = 2
    SM90 = 3


class TensorFlag(enum.IntFlag):
    POINTER_ARRAY = 1


class GemmFlag(enum.IntFlag):
    """gg_gemm_desc.flags."""

    ZERO_UNUSED_ROWS = 1


class DeviceFlag(enum.IntFlag):
    """Device-side problems reported by gg_check (falsy when there were none)."""

    NEGATIVE_SIZE = 1
    SIZES_EXCEED_ROWS = 2
    OFFSET_OUT_OF_RANGE = 4


# The C name prefix of each family of constants, and the class mirroring it.
CONSTANT_FAMILIES = {
    "GG_STATUS_": Status,
    "GG_DTYPE_": DType,
    "GG_BLOCK_": BlockScaling,
    "GG_SCALE_": ScaleExtent,
    "GG_LAYOUT_": Layout,
    "GG_OP_": Op,
    "GG_INDEX_": IndexType,
    "GG_PATH_": Path,
    "GG_TENSOR_": TensorFlag,
    "GG_DEVICE_": DeviceFlag,
    "GG_GEMM_": GemmFlag,
}

# C enums are int-sized; struct fields and arguments of enum type use c_int.
_enum = c_int


class Tensor(ctypes.Structure):
    _fields_ = [
        ("data", c_void_p),
        ("dtype", _enum),
        ("rank", c_int32),
        ("shape", c_int64 * 3),
        ("strides", c_int64 * 3),
        ("flags", c_uint32),
        ("block_scaling", _enum),
        ("block_scales", c_void_p),
        ("scale_extent", _enum),
        ("scale", POINTER(c_float)),
    ]


class GroupSizes(ctypes.Structure):
    _fields_ = [
        ("sizes", c_void_p),
        ("offsets", c_void_p),
        ("type", _enum),
    ]


class Scalar(ctypes.Structure):
    _fields_ = [
        ("value", c_float),
        ("per_group", POINTER(c_float)),
    ]


class GemmDesc(ctypes.Structure):
    _fields_ = [
        ("op", _enum),
        ("num_groups", c_int32),
        ("group_sizes", GroupSizes),
        ("lhs", Tensor),
        ("rhs", Tensor),
        ("out", Tensor),
        ("bias", Tensor),
        ("lhs_layout", _enum),
        ("rhs_layout", _enum),
        ("alpha", Scalar),
        ("beta", Scalar),
        ("path", _enum),
        ("flags", c_uint32),
    ]


class QuantizeDesc(ctypes.Structure):
    _fields_ = [
        ("num_groups", c_int32),
        ("group_sizes", GroupSizes),
        ("input", Tensor),
        ("rowwise", Tensor),
        ("columnwise", Tensor),
        ("amax", POINTER(c_float)),
        ("path", _enum),
    ]


STRUCTS = {
    "gg_tensor": Tensor,
    "gg_group_sizes": GroupSizes,
    "gg_scalar": Scalar,
    "gg_gemm_desc": GemmDesc,
    "gg_quantize_desc": QuantizeDesc,
}

# name -> (restype, argtypes). A gg_stream_t is an opaque pointer.
PROTOTYPES = {
    "gg_version_string": (c_char_p, ()),
    "gg_version": (c_int, ()),
    "gg_status_string": (c_char_p, (_enum,)),
    "gg_last_error": (c_char_p, ()),
    "gg_path_available": (_enum, (_enum, c_int, POINTER(c_int))),
    "gg_block_scale_shape": (
        _enum,
        (_enum, c_int64, c_int64, c_int, c_int, c_int32, POINTER(c_int64)),
    ),
    "gg_grouped_gemm_workspace_size": (_enum, (POINTER(GemmDesc), POINTER(c_size_t))),
    "gg_grouped_gemm": (_enum, (POINTER(GemmDesc), c_void_p, c_size_t, c_void_p)),
    "gg_grouped_quantize_workspace_size": (_enum, (POINTER(QuantizeDesc), POINTER(c_size_t))),
    "gg_grouped_quantize": (_enum, (POINTER(QuantizeDesc), c_void_p, c_size_t, c_void_p)),
    "gg_check": (_enum, (c_void_p, _enum, c_void_p, POINTER(c_uint32))),
}

_ERRORS = {
    Status.INVALID_ARGUMENT: InvalidArgument,
    Status.NOT_SUPPORTED: NotSupported,
    Status.WORKSPACE_TOO_SMALL: WorkspaceTooSmall,
    Status.NO_DEVICE: NoDevice,
    Status.CUDA_ERROR: CudaError,
    Status.INTERNAL_ERROR: InternalError,
}

_LIBRARY_ENV = "GROUPGEMM_LIBRARY"
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_lock = threading.Lock()
_library: Optional[ctypes.CDLL] = None


def _candidates() -> List[str]:
    """Where the library may be, in search order, after GROUPGEMM_LIBRARY."""
    packaged = sorted(glob.glob(os.path.join(_PACKAGE_DIR, "lib", "libgroupgemm.so*")), key=len)
    source_tree = os.path.dirname(os.path.dirname(_PACKAGE_DIR))
    return packaged[:1] + [os.path.join(source_tree, "build", "release", "src", "libgroupgemm.so")]


def library_path() -> str:
    """The path the library is (or would be) loaded from."""
    explicit = os.environ.get(_LIBRARY_ENV)
    if explicit:
        return explicit
    candidates = _candidates()
    for path in candidates:
        if os.path.exists(path):
            return path
    raise LibraryError(
        "libgroupgemm.so not found: set %s to its path, install the package with pip, "
        "or build it into build/release (looked in: %s)" % (_LIBRARY_ENV, ", ".join(candidates))
    )


def _declare(lib: ctypes.CDLL) -> None:
    for name, (restype, argtypes) in PROTOTYPES.items():
        function = getattr(lib, name)
        function.restype = restype
        function.argtypes = list(argtypes)


def library() -> ctypes.CDLL:
    """The loaded library, its prototypes declared and its version checked."""
    global _library
    if _library is not None:  # loaded: no lock needed to read it
        return _library
    with _lock:
        if _library is None:
            path = library_path()
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                raise LibraryError("cannot load %s: %s" % (path, e)) from e
            _declare(lib)
            found = lib.gg_version()
            # Before 1.0 the minor version may change the ABI as well.
            if (found // 10000, found // 100 % 100) != HEADER_VERSION[:2]:
                raise LibraryError(
                    "%s is version %d.%d.%d; these bindings mirror %d.%d"
                    % (path, found // 10000, found // 100 % 100, found % 100, *HEADER_VERSION[:2])
                )
            _library = lib
        return _library


def last_error() -> str:
    return library().gg_last_error().decode("utf-8", "replace")


def raise_for_status(status: int) -> None:
    """Raises the exception for a failing gg_status, with gg_last_error()."""
    if status == Status.SUCCESS:
        return
    message = last_error()
    try:
        cls = _ERRORS[Status(status)]
        name = Status(status).name
    except (KeyError, ValueError):
        cls, name = InternalError, "unknown status %d" % status
    raise cls("%s: %s" % (name, message) if message else name)


def call(name: str, *args) -> None:
    """Calls a gg_* function that returns a gg_status; raises on failure."""
    raise_for_status(getattr(library(), name)(*args))

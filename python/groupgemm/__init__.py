"""groupgemm: grouped matrix products for Mixture-of-Experts layers.

The package is a thin layer over the C library libgroupgemm.so (loaded with
ctypes on first use; see _capi for where it is looked for). Importing it
needs neither numpy nor torch:

  groupgemm.numpy   the products on numpy arrays, through the CPU reference
  groupgemm.torch   torch custom ops (CPU and CUDA), autograd, GroupedLinear
  groupgemm.core    the framework-neutral layer both are built on
  groupgemm.bench   `python -m groupgemm.bench`: timings beside torch's own
"""

from . import _capi
from ._capi import DeviceFlag, DType, IndexType, Layout, Path, Status, library_path
from .errors import (
    CudaError,
    GroupGemmError,
    InternalError,
    InvalidArgument,
    LibraryError,
    NoDevice,
    NotSupported,
    WorkspaceTooSmall,
)

__version__ = "%d.%d.%d" % _capi.HEADER_VERSION


def library_version() -> str:
    """The version string of the loaded libgroupgemm.so."""
    return _capi.library().gg_version_string().decode()


__all__ = [
    "CudaError",
    "DType",
    "DeviceFlag",
    "GroupGemmError",
    "IndexType",
    "InternalError",
    "InvalidArgument",
    "Layout",
    "LibraryError",
    "NoDevice",
    "NotSupported",
    "Path",
    "Status",
    "WorkspaceTooSmall",
    "library_path",
    "library_version",
]

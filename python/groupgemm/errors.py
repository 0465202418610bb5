"""Exceptions raised by groupgemm.

Every failing C call returns a gg_status; the binding (_capi.raise_for_status)
turns it into the subclass for that status, carrying the library's own
message (gg_last_error(), which names the offending argument). Argument
errors are also ValueErrors, so code that handles bad input generically still
catches them. Errors the Python layer finds itself, before any call into the
library, are plain ValueError/TypeError naming the Python argument.
"""


class GroupGemmError(Exception):
    """Base class of every error the library reports."""


class InvalidArgument(GroupGemmError, ValueError):
    """GG_STATUS_INVALID_ARGUMENT: a host-visible argument is wrong."""


class NotSupported(GroupGemmError):
    """GG_STATUS_NOT_SUPPORTED: expressible, but no path implements it."""


class WorkspaceTooSmall(GroupGemmError):
    """GG_STATUS_WORKSPACE_TOO_SMALL."""


class NoDevice(GroupGemmError):
    """GG_STATUS_NO_DEVICE: a GPU path was asked for without a usable GPU."""


class CudaError(GroupGemmError):
    """GG_STATUS_CUDA_ERROR: a CUDA runtime call failed."""


class InternalError(GroupGemmError):
    """GG_STATUS_INTERNAL_ERROR, or a status these bindings do not know."""


class LibraryError(GroupGemmError, OSError):
    """libgroupgemm.so could not be found or loaded, or does not match these bindings."""

"""libgroupgemm_jax.so: where it is, and its handlers registered with XLA.

The library holds the XLA FFI handlers (src/jax/ffi_handlers.cpp), two per
operation (ragged-M, ragged-K, grouped quantize): one for CUDA, registered
command-buffer compatible, and one for the CPU, running the library's
reference. It links libgroupgemm.so, which is
loaded first (through groupgemm._capi), so the dynamic loader finds it by its
soname. Where libgroupgemm_jax.so is looked for, in order:
  1. the path in the environment variable GROUPGEMM_JAX_LIBRARY;
  2. the directory of the loaded libgroupgemm.so (the build puts both in
     <build>/src/, `pip install .` in groupgemm/lib/).

Registration happens once, on the first operation traced, not at import.
"""

import ctypes
import os
import threading

import jax

from .. import _capi
from ..errors import LibraryError

LIBRARY_NAME = "libgroupgemm_jax.so"

# XLA target name -> exported handler symbol, without its platform suffix.
TARGETS = {
    "groupgemm_ragged_m": "gg_jax_ragged_m",
    "groupgemm_ragged_k": "gg_jax_ragged_k",
    "groupgemm_quantize": "gg_jax_quantize",
}
# jax's platform names, and the suffix of each handler symbol.
PLATFORMS = {"CUDA": "_cuda", "cpu": "_cpu"}

_lock = threading.Lock()
_library = None


def library_path() -> str:
    """The path of libgroupgemm_jax.so that will be (or was) loaded."""
    explicit = os.environ.get("GROUPGEMM_JAX_LIBRARY")
    if explicit:
        return explicit
    return os.path.join(os.path.dirname(os.path.realpath(_capi.library_path())), LIBRARY_NAME)


def library() -> ctypes.CDLL:
    """Loads the handler library and registers its targets (once)."""
    global _library
    if _library is not None:
        return _library
    with _lock:
        if _library is None:
            _capi.library()  # libgroupgemm.so first: the handlers link it
            path = library_path()
            if not os.path.exists(path):
                raise LibraryError(
                    "%s not found at %s: build it (scripts/build.sh builds it when jax is "
                    "importable) or point GROUPGEMM_JAX_LIBRARY at it" % (LIBRARY_NAME, path)
                )
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                raise LibraryError("cannot load %s: %s" % (path, e)) from None
            for target, symbol in TARGETS.items():
                for platform, suffix in PLATFORMS.items():
                    handler = getattr(lib, symbol + suffix)
                    jax.ffi.register_ffi_target(
                        target, jax.ffi.pycapsule(handler), platform=platform
                    )
            _library = lib
    return _library

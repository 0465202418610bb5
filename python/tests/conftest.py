"""Shared test setup.

Makes the package importable from the source tree when it is not installed,
and provides `lib`: the loaded libgroupgemm.so. When GROUPGEMM_LIBRARY names
a library, failing to load it fails the tests that need it (a CI run must not
turn a broken build into skips); with no library anywhere, they are skipped
with the reason. Likewise, with GROUPGEMM_EXPECT_GPU=1 (which
scripts/python_tests.sh sets where nvidia-smi lists a GPU) a torch or jax
that is installed but sees no GPU stops the run before any test: their GPU
tests would otherwise all be skipped.
"""

import importlib.util
import os
import sys

import pytest

if importlib.util.find_spec("groupgemm") is None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from groupgemm import LibraryError, _capi  # noqa: E402


@pytest.fixture(scope="session")
def lib():
    try:
        return _capi.library()
    except LibraryError as e:
        if os.environ.get("GROUPGEMM_LIBRARY"):
            raise
        pytest.skip("libgroupgemm.so is not available: %s" % e)


def pytest_sessionstart(session):
    if os.environ.get("GROUPGEMM_EXPECT_GPU") != "1":
        return
    blind = []
    if importlib.util.find_spec("torch") is not None:
        import torch

        if not torch.cuda.is_available():
            blind.append("torch %s sees no CUDA GPU" % torch.__version__)
    if importlib.util.find_spec("jax") is not None:
        import jax

        try:
            jax.devices("gpu")
        except RuntimeError as e:
            blind.append("jax %s sees no GPU (%s)" % (jax.__version__, e))
    if blind:
        pytest.exit("GROUPGEMM_EXPECT_GPU=1, but " + "; ".join(blind), returncode=1)

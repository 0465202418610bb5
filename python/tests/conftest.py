"""Shared test setup.

Makes the package importable from the source tree when it is not installed,
and provides `lib`: the loaded libgroupgemm.so. When GROUPGEMM_LIBRARY names
a library, failing to load it fails the tests that need it (a CI run must not
turn a broken build into skips); with no library anywhere, they are skipped
with the reason.
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

"""The optional frameworks, torch and jax, and what to install for each.

The base package needs neither. A module that does is still importable
without it where its command line must answer --help (the benchmarks, and
groupgemm.jax, the package of one); it then says in one line what to
install, when it is run or used, rather than failing with a traceback.
"""

import importlib.util
import sys
from typing import Optional

_INSTALL = {
    "torch": 'pip install "groupgemm[torch]" (or pip install torch)',
    "jax": 'pip install "groupgemm[jax]" (or pip install jax)',
}


def installed(framework: str) -> bool:
    return importlib.util.find_spec(framework) is not None


def needs(user: str, framework: str) -> str:
    """The one line that says `user` needs `framework` and how to get it."""
    return "%s needs %s, which is not installed: %s" % (user, framework, _INSTALL[framework])


def missing_framework(error: ModuleNotFoundError) -> Optional[str]:
    """The framework whose absence raised `error` (jaxlib counts as jax),
    or None when something else is missing: that error is a real one."""
    top = (error.name or "").split(".")[0]
    top = "jax" if top == "jaxlib" else top
    return top if top in _INSTALL else None


def report_missing(user: str, framework: str) -> bool:
    """Prints needs()'s line to stderr and returns True where `framework` is
    not installed; a command's main() then exits non-zero."""
    if installed(framework):
        return False
    print(needs(user, framework), file=sys.stderr)
    return True


class Absent:
    """Stands in for a framework (or a module built on one) that is not
    installed: any use raises ModuleNotFoundError with needs()'s line."""

    def __init__(self, user: str, framework: str):
        self._framework = framework
        self._message = needs(user, framework)

    def __getattr__(self, name: str):
        raise ModuleNotFoundError(self._message, name=self._framework)

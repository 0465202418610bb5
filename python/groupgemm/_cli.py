"""The `groupgemm` command that `pip install` puts on PATH.

It runs the command-line tool the wheel ships in the package,
groupgemm/bin/groupgemm (a native program: the CLI of src/cli), in place of
this process, so that its exit code, output and signals are the tool's own.
"""

import os
import sys


def binary_path() -> str:
    """Where the installed package keeps the command-line tool."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "groupgemm")


def main() -> None:
    path = binary_path()
    if not os.access(path, os.X_OK):
        sys.exit(
            "groupgemm: the command-line tool is not at %s: install the package with "
            "`pip install .` (which builds it), or run build/release/src/cli/groupgemm "
            "from a source build" % path
        )
    os.execv(path, [path] + sys.argv[1:])

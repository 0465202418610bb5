"""The commands and modules that need torch or jax, run where it is hidden:
--help works, and a run or a call says in one line what to install.

Each runs in a fresh interpreter whose sys.modules maps torch, jax and
jaxlib to None, which makes their import fail as if they were not
installed, whether or not they are.
"""

import os
import subprocess
import sys

import pytest

import groupgemm

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(groupgemm.__file__)))
HIDE_FRAMEWORKS = "import sys; sys.modules.update(torch=None, jax=None, jaxlib=None)\n"

COMMANDS = [
    ("groupgemm.bench", "torch"),
    ("groupgemm.bench_quantize", "torch"),
    ("groupgemm.jax.bench", "jax"),
]


def run_hidden(code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [PYTHON_DIR, env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", HIDE_FRAMEWORKS + code],
        capture_output=True, text=True, env=env, timeout=120,
    )


def run_command(module: str, *args: str) -> subprocess.CompletedProcess:
    return run_hidden(
        "import runpy\nsys.argv = [%r] + %r\nrunpy.run_module(%r, run_name='__main__')"
        % (module, list(args), module)
    )


def assert_says_what_to_install(stderr: str, framework: str) -> None:
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert 'pip install "groupgemm[%s]"' % framework in lines[0]
    assert "pip install %s)" % framework in lines[0]


@pytest.mark.parametrize("module, framework", COMMANDS)
def test_help_works_without_the_framework(module, framework):
    result = run_command(module, "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: python -m %s" % module)


@pytest.mark.parametrize("module, framework", COMMANDS)
def test_a_run_without_the_framework_says_what_to_install(module, framework):
    result = run_command(module)
    assert result.returncode != 0
    assert result.stderr.strip().startswith("python -m %s needs %s" % (module, framework))
    assert_says_what_to_install(result.stderr, framework)


def test_the_jax_front_end_without_jax_says_what_to_install():
    result = run_hidden(
        "import groupgemm.jax\n"
        "try:\n"
        "    groupgemm.jax.ragged_dot(None, None, None)\n"
        "except ModuleNotFoundError as error:\n"
        "    print(error, file=sys.stderr)\n"
        "    sys.exit(0 if error.name == 'jax' else 1)\n"
        "sys.exit(1)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("groupgemm.jax needs jax")
    assert_says_what_to_install(result.stderr, "jax")

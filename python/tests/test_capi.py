"""The ctypes mirror against the C header, and the library's status mapping.

The header is the contract: its constants, struct layouts and prototypes are
read here from the header text (and, for layouts, from the C compiler), never
from the bindings under test, and compared with what _capi declares.
"""

import ctypes
import os
import re
import shutil
import subprocess
import sys
from ctypes import POINTER, c_char_p, c_float, c_int, c_int32, c_int64, c_size_t, c_uint32, c_void_p

import pytest

import groupgemm
from groupgemm import _capi, core, errors

_HERE = os.path.dirname(os.path.abspath(__file__))


def _header_path():
    for include in (
        os.path.join(_HERE, "..", "..", "include"),  # source tree
        os.path.join(os.path.dirname(groupgemm.__file__), "include"),  # installed wheel
    ):
        path = os.path.join(include, "groupgemm", "groupgemm.h")
        if os.path.exists(path):
            return os.path.normpath(path)
    pytest.skip("groupgemm.h not found beside the package")


@pytest.fixture(scope="module")
def header():
    with open(_header_path()) as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def _enums(header):
    """{C enum type: {member: value}}, implicit values counted as C does."""
    enums = {}
    for name, body in re.findall(r"typedef\s+GG_ENUM\((\w+)\)\s*\{(.*?)\}", header, flags=re.S):
        members, next_value = {}, 0
        for entry in filter(None, (e.strip() for e in body.split(","))):
            member, _, value = (part.strip() for part in entry.partition("="))
            next_value = int(value, 0) if value else next_value
            members[member] = next_value
            next_value += 1
        enums[name] = members
    declared = re.findall(r"\btypedef\s+(?:enum|GG_ENUM)\b", header)
    assert len(enums) == len(declared), "an enum of the header was not parsed"
    return enums


def _defines(header):
    return {
        name: int(value, 0)
        for name, value in re.findall(
            r"#define\s+(GG_\w+)\s+\(?(0x[0-9a-fA-F]+|\d+)[uU]?\)?\s*$", header, flags=re.M
        )
    }


def _structs(header):
    """{C struct: [field names in order]}."""
    structs = {}
    for name, body in re.findall(
        r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*\w+\s*;", header, flags=re.S
    ):
        declarations = filter(None, (d.strip() for d in body.split(";")))
        structs[name] = [re.search(r"(\w+)\s*(\[\s*\w+\s*\])?$", d).group(1) for d in declarations]
    return structs


def _functions(header):
    """{function: (return type, [parameter types])}, types with names removed
    and arrays written as pointers."""

    def type_of(declaration):
        match = re.match(r"^(.*?)\s*\b(\w+)\s*(\[\s*\w*\s*\])?$", declaration.strip())
        c_type = match.group(1) + ("*" if match.group(3) else "")
        return re.sub(r"\s+\*", "*", c_type).strip()

    functions = {}
    for ret, name, params in re.findall(
        r"GG_API\s+([\w\s\*]+?)\s*\b(gg_\w+)\s*\(([^)]*)\)\s*;", header
    ):
        params = params.strip()
        parameter_types = [] if params in ("", "void") else [type_of(p) for p in params.split(",")]
        functions[name] = (re.sub(r"\s+\*", "*", ret).strip(), parameter_types)
    return functions


def _python_name(member):
    # A Python identifier cannot start with a digit: GG_BLOCK_1X128 is BlockScaling._1X128.
    return "_" + member if member[0].isdigit() else member


def test_every_constant_matches_the_header(header):
    constants = dict(_defines(header))
    for members in _enums(header).values():
        constants.update(members)
    version = tuple(constants.pop("GG_VERSION_%s" % part) for part in ("MAJOR", "MINOR", "PATCH"))
    assert _capi.HEADER_VERSION == version

    mirrored = set()
    for c_name, value in constants.items():
        prefixes = [p for p in _capi.CONSTANT_FAMILIES if c_name.startswith(p)]
        assert prefixes, "%s has no Python mirror" % c_name
        prefix = max(prefixes, key=len)
        family = _capi.CONSTANT_FAMILIES[prefix]
        member = _python_name(c_name[len(prefix) :])
        assert member in family.__members__, "%s: %s.%s is missing" % (
            c_name,
            family.__name__,
            member,
        )
        assert int(family[member]) == value, c_name
        mirrored.add((family, member))
    for family in _capi.CONSTANT_FAMILIES.values():
        for member in family.__members__:
            assert (family, member) in mirrored, "%s.%s is not in the header" % (
                family.__name__,
                member,
            )


def test_every_struct_has_the_header_fields_in_order(header):
    structs = _structs(header)
    assert set(structs) == set(_capi.STRUCTS)
    for c_name, fields in structs.items():
        assert [f[0] for f in _capi.STRUCTS[c_name]._fields_] == fields, c_name


def test_struct_layouts_match_the_c_compiler(header, tmp_path):
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to measure the header's struct layouts")
    lines = []
    for c_name, struct in _capi.STRUCTS.items():
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (c_name, c_name))
        for field, _ in struct._fields_:
            lines.append(
                'printf("%s.%s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s*)0)->%s));'
                % (c_name, field, c_name, field, c_name, field)
            )
    for enum_name in _enums(header):
        lines.append('printf("%s %%zu\\n", sizeof(%s));' % (enum_name, enum_name))
    source = tmp_path / "layout.c"
    source.write_text(
        "#include <stddef.h>\n#include <stdio.h>\n#include <groupgemm/groupgemm.h>\n"
        "int main(void) {\n%s\nreturn 0;\n}\n" % "\n".join(lines)
    )
    include = os.path.dirname(os.path.dirname(_header_path()))
    binary = tmp_path / "layout"
    subprocess.run(
        [compiler, "-std=c99", "-I", include, str(source), "-o", str(binary)], check=True
    )
    measured = dict(
        line.split(" ", 1)
        for line in subprocess.run(
            [str(binary)], check=True, capture_output=True, text=True
        ).stdout.splitlines()
    )
    for c_name, struct in _capi.STRUCTS.items():
        assert int(measured[c_name]) == ctypes.sizeof(struct), c_name
        for field, _ in struct._fields_:
            offset, size = (int(v) for v in measured["%s.%s" % (c_name, field)].split())
            descriptor = getattr(struct, field)
            assert (descriptor.offset, descriptor.size) == (offset, size), "%s.%s" % (c_name, field)
    for enum_name in _enums(header):
        assert int(measured[enum_name]) == ctypes.sizeof(c_int), enum_name


def _ctypes_type(c_type, enum_names):
    """The ctypes type the C ABI needs for `c_type` (stated here independently of _capi)."""
    scalars = {
        "int": c_int,
        "int32_t": c_int32,
        "int64_t": c_int64,
        "size_t": c_size_t,
        "uint32_t": c_uint32,
        "float": c_float,
    }
    base = c_type.replace("const ", "").rstrip("*").strip()
    depth = len(c_type) - len(c_type.rstrip("*"))
    if base == "gg_stream_t" and depth == 0:
        return c_void_p
    if depth == 1 and base == "void":
        return c_void_p
    if depth == 1 and base == "char":
        return c_char_p
    if base in enum_names:
        pointee = c_int
    elif base in scalars:
        pointee = scalars[base]
    else:
        pointee = _capi.STRUCTS[base]
    return POINTER(pointee) if depth == 1 else pointee


def test_every_function_has_the_header_prototype(header):
    functions = _functions(header)
    assert set(functions) == set(_capi.PROTOTYPES)
    enum_names = set(_enums(header))
    for name, (ret, params) in functions.items():
        restype, argtypes = _capi.PROTOTYPES[name]
        assert restype is _ctypes_type(ret, enum_names), name
        assert list(argtypes) == [_ctypes_type(p, enum_names) for p in params], name


def test_library_reports_the_header_version(lib):
    major, minor, patch = _capi.HEADER_VERSION
    assert lib.gg_version() == major * 10000 + minor * 100 + patch
    assert groupgemm.library_version() == "%d.%d.%d" % _capi.HEADER_VERSION


def test_every_status_has_a_name_and_an_exception(lib):
    for status in _capi.Status:
        assert lib.gg_status_string(status), status
        if status == _capi.Status.SUCCESS:
            _capi.raise_for_status(status)
            continue
        with pytest.raises(errors.GroupGemmError) as raised:
            _capi.raise_for_status(status)
        assert status.name in str(raised.value)
    with pytest.raises(errors.InvalidArgument):
        _capi.raise_for_status(_capi.Status.INVALID_ARGUMENT)
    with pytest.raises(errors.InternalError):
        _capi.raise_for_status(99)


def test_argument_errors_are_value_errors_with_the_library_message(lib):
    # A NULL descriptor: the library names the argument.
    size = ctypes.c_size_t(0)
    with pytest.raises(ValueError) as raised:
        _capi.call("gg_grouped_gemm_workspace_size", None, ctypes.byref(size))
    assert isinstance(raised.value, errors.InvalidArgument)
    assert "desc" in str(raised.value)


def test_a_gpu_path_without_a_gpu_reports_why(lib):
    available, why = core.path_available(_capi.Path.PORTABLE, 0)
    if available:
        pytest.skip("a GPU is present")
    assert why


def test_loader_names_the_places_it_looked(monkeypatch, tmp_path):
    monkeypatch.delenv("GROUPGEMM_LIBRARY", raising=False)
    monkeypatch.setattr(_capi, "_candidates", lambda: [str(tmp_path / "libgroupgemm.so")])
    with pytest.raises(errors.LibraryError) as raised:
        _capi.library_path()
    assert str(tmp_path) in str(raised.value) and "GROUPGEMM_LIBRARY" in str(raised.value)


def test_loader_prefers_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GROUPGEMM_LIBRARY", str(tmp_path / "custom.so"))
    assert _capi.library_path() == str(tmp_path / "custom.so")


def test_import_needs_neither_numpy_nor_torch():
    # A None entry in sys.modules makes importing that module fail.
    code = (
        "import sys; sys.modules['numpy'] = None; sys.modules['torch'] = None\n"
        "import groupgemm, groupgemm.core, groupgemm.presets\n"
        "print(groupgemm.__version__)\n"
    )
    package_root = os.path.dirname(os.path.dirname(groupgemm.__file__))
    env = dict(os.environ, PYTHONPATH=package_root)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "%d.%d.%d" % _capi.HEADER_VERSION

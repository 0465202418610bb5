"""groupgemm.jax against jax.lax.ragged_dot, on the CPU (the library's
reference, through the CPU FFI handlers) and, where jax sees one, on a GPU.

Expectations come from jax.lax.ragged_dot / ragged_dot_general on the same
values upcast to fp32 (never from the ops under test), or from per-group
numpy products. Small-integer inputs and cotangents keep every sum exact in
fp32 and in bf16 results, so CPU comparisons are exact; the GPU cases with
random values compare within a rounding bound. jax_enable_x64 stays off
throughout: group sizes are int32.

grouped_quantize is compared bit for bit with the library's reference run
through groupgemm.core on numpy arrays (what the torch front end's CPU path
runs), on every entry some group defines, and with values worked out here.
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="jax is not installed")
import jax.numpy as jnp  # noqa: E402

from groupgemm import DeviceFlag, LibraryError, core  # noqa: E402
from groupgemm import numpy as ggnp  # noqa: E402

ggj = pytest.importorskip("groupgemm.jax", reason="groupgemm.jax needs jax")
from groupgemm.jax import _ffi  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module", autouse=True)
def handlers(lib):
    """The handler library, loaded and registered. A CI run that names a
    library (GROUPGEMM_LIBRARY) must have built the handlers beside it."""
    try:
        return _ffi.library()
    except LibraryError as e:
        if os.environ.get("GROUPGEMM_LIBRARY"):
            raise
        pytest.skip("libgroupgemm_jax.so is not available: %s" % e)


def _gpu():
    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        return None


GPU = _gpu()
needs_gpu = pytest.mark.skipif(GPU is None, reason="jax sees no GPU")
PLATFORMS = ["cpu", pytest.param("gpu", marks=needs_gpu)]

SIZES = [3, 0, 5, 1, 0, 7]  # empty groups, and sum 16 < M = 20 rows
M, K, N = 20, 32, 48


def device(platform):
    return jax.devices("cpu")[0] if platform == "cpu" else GPU


@pytest.fixture(autouse=True)
def default_device_of_the_test(request):
    """Each test runs with jax.default_device naming its platform's device:
    the CPU unless it is parametrized with platform "gpu", so that the
    arrays it makes land there. Imported by the other JAX test modules."""
    callspec = getattr(request.node, "callspec", None)
    platform = callspec.params.get("platform", "cpu") if callspec else "cpu"
    with jax.default_device(device(platform)):
        yield


def small_integers(rng, shape, dtype=jnp.bfloat16):
    return jnp.asarray(rng.integers(-2, 3, shape).astype(np.float32), dtype)


def make(platform, sizes=SIZES, rows=M, k=K, n=N, rhs_layout="kn", seed=0):
    rng = np.random.default_rng(seed)
    groups = len(sizes)
    lhs = small_integers(rng, (rows, k))
    rhs = small_integers(rng, (groups, k, n) if rhs_layout == "kn" else (groups, n, k))
    put = lambda a: jax.device_put(a, device(platform))  # noqa: E731
    return put(lhs), put(rhs), put(jnp.asarray(sizes, jnp.int32))


def f32(a):
    return a.astype(jnp.float32)


def reference(lhs, rhs, group_sizes, rhs_layout="kn"):
    """jax.lax.ragged_dot in fp32 on the CPU."""
    cpu = jax.devices("cpu")[0]
    rhs = rhs if rhs_layout == "kn" else jnp.swapaxes(rhs, 1, 2)
    args = [jax.device_put(f32(a) if a.dtype != jnp.int32 else a, cpu)
            for a in (lhs, rhs, group_sizes)]
    return jax.lax.ragged_dot(*args)


def assert_equal(actual, expected):
    np.testing.assert_array_equal(np.asarray(f32(actual)), np.asarray(f32(expected)))


def test_no_x64():
    assert not jax.config.jax_enable_x64


# ---- forward ---------------------------------------------------------------------


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("rhs_layout", ["kn", "nk"])
@pytest.mark.parametrize("jit", [False, True])
def test_ragged_dot_values(platform, rhs_layout, jit):
    lhs, rhs, sizes = make(platform, rhs_layout=rhs_layout)
    fn = lambda a, b, c: ggj.ragged_dot(  # noqa: E731
        a, b, c, preferred_element_type=jnp.float32, rhs_layout=rhs_layout)
    out = (jax.jit(fn) if jit else fn)(lhs, rhs, sizes)
    assert out.shape == (M, N) and out.dtype == jnp.float32
    assert_equal(out, reference(lhs, rhs, sizes, rhs_layout))
    assert_equal(out[sum(SIZES):], jnp.zeros((M - sum(SIZES), N)))  # the tail is zeros


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(
    "sizes,rows",
    [([7], 7), ([4], 9), ([0, 0, 0], 5), ([5, 0, 4], 9), ([0, 9, 0, 0], 12), ([0, 0], 0)],
    ids=["G1-full", "G1-tail", "all-empty", "full", "one-hot-tail", "no-rows"],
)
def test_ragged_dot_edge_sizes(platform, sizes, rows):
    lhs, rhs, gs = make(platform, sizes=sizes, rows=rows)
    out = ggj.ragged_dot(lhs, rhs, gs, preferred_element_type=jnp.float32)
    assert_equal(out, reference(lhs, rhs, gs))
    # The weight gradient over these rows (none, for no-rows: zeros).
    drhs = jax.grad(lambda b: ggj.ragged_dot(lhs, b, gs, preferred_element_type=jnp.float32)
                    .sum())(rhs)
    cpu = jax.devices("cpu")[0]
    ref_drhs = jax.grad(lambda b: jax.lax.ragged_dot(
        jax.device_put(f32(lhs), cpu), b, jax.device_put(gs, cpu)).sum())(
            jax.device_put(f32(rhs), cpu))
    assert_equal(drhs, ref_drhs)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ragged_dot_dtypes_follow_jax(platform):
    lhs, rhs, sizes = make(platform)
    for preferred in (None, jnp.bfloat16, jnp.float32):
        ours = ggj.ragged_dot(lhs, rhs, sizes, preferred_element_type=preferred)
        theirs = jax.eval_shape(
            lambda a, b, c: jax.lax.ragged_dot(a, b, c, preferred_element_type=preferred),
            lhs, rhs, sizes)
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
        assert_equal(ours, reference(lhs, rhs, sizes))  # small sums: exact in bf16 too
    half = ggj.ragged_dot(lhs.astype(jnp.float16), rhs.astype(jnp.float16), sizes)
    assert half.dtype == jnp.float16
    assert_equal(half, reference(lhs, rhs, sizes))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ragged_dot_positional_precision(platform):
    lhs, rhs, sizes = make(platform)
    out = ggj.ragged_dot(lhs, rhs, sizes, jax.lax.Precision.HIGHEST, jnp.float32)
    assert_equal(out, reference(lhs, rhs, sizes))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ragged_dot_bias(platform):
    lhs, rhs, sizes = make(platform)
    bias = jax.device_put(small_integers(np.random.default_rng(1), (len(SIZES), N), jnp.float32),
                          device(platform))
    out = ggj.ragged_dot(lhs, rhs, sizes, preferred_element_type=jnp.float32, bias=bias)
    group_of_row = np.repeat(np.arange(len(SIZES)), SIZES)
    expected = np.array(reference(lhs, rhs, sizes))
    expected[: sum(SIZES)] += np.asarray(bias)[group_of_row]
    np.testing.assert_array_equal(np.asarray(out), expected)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ragged_dot_k_values(platform):
    rng = np.random.default_rng(2)
    a = jax.device_put(small_integers(rng, (M, 24)), device(platform))
    b = jax.device_put(small_integers(rng, (M, 40)), device(platform))
    sizes = jax.device_put(jnp.asarray(SIZES, jnp.int32), device(platform))
    out = jax.jit(lambda x, y, s: ggj.ragged_dot_k(x, y, s, preferred_element_type=jnp.float32))(
        a, b, sizes)
    numbers = jax.lax.RaggedDotDimensionNumbers(
        dot_dimension_numbers=(([0], [0]), ([], [])),
        lhs_ragged_dimensions=[0],
        rhs_group_dimensions=[],
    )
    cpu = jax.devices("cpu")[0]
    expected = jax.lax.ragged_dot_general(
        jax.device_put(f32(a), cpu), jax.device_put(f32(b), cpu), jax.device_put(sizes, cpu),
        numbers)
    assert out.shape == (len(SIZES), 24, 40)
    assert_equal(out, expected)
    assert_equal(out[1], jnp.zeros((24, 40)))  # an empty group gives zeros


# ---- gradients -------------------------------------------------------------------


def _cotangent(shape, seed=3):
    return jnp.asarray(np.random.default_rng(seed).integers(-1, 2, shape).astype(np.float32))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("rhs_layout", ["kn", "nk"])
def test_ragged_dot_grads(platform, rhs_layout):
    lhs, rhs, sizes = make(platform, rhs_layout=rhs_layout)
    cot = jax.device_put(_cotangent((M, N)), device(platform))

    def ours(a, b):
        out = ggj.ragged_dot(a, b, sizes, preferred_element_type=jnp.float32,
                             rhs_layout=rhs_layout)
        return (out * cot).sum()

    cpu = jax.devices("cpu")[0]
    cpu_sizes, cpu_cot = jax.device_put(sizes, cpu), jax.device_put(cot, cpu)

    def theirs(a, b):
        b = b if rhs_layout == "kn" else jnp.swapaxes(b, 1, 2)
        return (jax.lax.ragged_dot(a, b, cpu_sizes) * cpu_cot).sum()

    dlhs, drhs = jax.jit(jax.grad(ours, argnums=(0, 1)))(lhs, rhs)
    ref_lhs, ref_rhs = jax.grad(theirs, argnums=(0, 1))(
        jax.device_put(f32(lhs), cpu), jax.device_put(f32(rhs), cpu))
    assert dlhs.dtype == lhs.dtype and drhs.dtype == rhs.dtype
    assert_equal(dlhs, ref_lhs)  # rows past the last group: zeros in both
    assert_equal(drhs, ref_rhs)  # empty groups: zeros in both


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ragged_dot_grads_group_sizes_and_bias(platform):
    lhs, rhs, sizes = make(platform)
    bias = jax.device_put(jnp.zeros((len(SIZES), N), jnp.float32), device(platform))
    cot = jax.device_put(_cotangent((M, N)), device(platform))

    def loss(b, s):
        out = ggj.ragged_dot(lhs, rhs, s, preferred_element_type=jnp.float32, bias=b)
        return (out * cot).sum()

    dbias, dsizes = jax.grad(loss, argnums=(0, 1), allow_int=True)(bias, sizes)
    assert dsizes.dtype == jax.dtypes.float0
    starts = np.concatenate([[0], np.cumsum(SIZES)])
    expected = np.stack([np.asarray(cot)[starts[g]:starts[g + 1]].sum(0)
                         for g in range(len(SIZES))])
    np.testing.assert_array_equal(np.asarray(dbias), expected)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ragged_dot_k_grads(platform):
    rng = np.random.default_rng(4)
    put = lambda x: jax.device_put(x, device(platform))  # noqa: E731
    a, b = put(small_integers(rng, (M, 16))), put(small_integers(rng, (M, 24)))
    sizes = put(jnp.asarray(SIZES, jnp.int32))
    cot = put(_cotangent((len(SIZES), 16, 24)))
    da, db = jax.jit(jax.grad(
        lambda x, y: (ggj.ragged_dot_k(x, y, sizes, preferred_element_type=jnp.float32)
                      * cot).sum(), argnums=(0, 1)))(a, b)
    starts = np.concatenate([[0], np.cumsum(SIZES)])
    expected_a, expected_b = np.zeros((M, 16)), np.zeros((M, 24))
    for g in range(len(SIZES)):
        rows = slice(starts[g], starts[g + 1])
        expected_a[rows] = np.asarray(f32(b))[rows] @ np.asarray(cot)[g].T
        expected_b[rows] = np.asarray(f32(a))[rows] @ np.asarray(cot)[g]
    np.testing.assert_array_equal(np.asarray(f32(da)), expected_a)
    np.testing.assert_array_equal(np.asarray(f32(db)), expected_b)


# ---- what XLA runs ------------------------------------------------------------------
# The optimized HLO of the jitted products (compiled for the CPU here; the
# custom calls and what surrounds them are the same for a GPU): our custom
# calls and nothing else that touches data, no transposed weights for dgrad,
# no converts of the sizes, no copies or fills of the outputs.

_PLUMBING = {"parameter", "constant", "get-tuple-element", "tuple", "custom-call"}


def _instructions(fn, *args):
    """(opcode, line) of every instruction of fn's optimized entry computation."""
    text = jax.jit(fn).lower(*args).compile().as_text()
    entry = text[text.index("\nENTRY "):]
    body = entry[entry.index("{") + 1:entry.index("\n}")]
    # "%name = <shape or (tuple of shapes)> opcode(operands), ..."
    pattern = re.compile(r" = (?:\([^)]*\)|\S+) ([\w-]+)\(")
    return [(pattern.search(line).group(1), line) for line in body.strip().splitlines()]


def _custom_calls(instructions):
    return [line for opcode, line in instructions if opcode == "custom-call"]


@pytest.mark.parametrize("rhs_layout", ["kn", "nk"])
def test_forward_and_backward_run_three_custom_calls_and_nothing_else(rhs_layout):
    groups, cols = len(SIZES), 40
    w_shape = (groups, K, cols) if rhs_layout == "kn" else (groups, cols, K)
    args = (_spec((M, K)), _spec(w_shape), _spec((groups,), jnp.int32), _spec((M, cols)))

    def forward_backward(x, w, s, dy):
        y, vjp = jax.vjp(lambda a, b: ggj.ragged_dot(a, b, s, rhs_layout=rhs_layout), x, w)
        return y, vjp(dy)

    instructions = _instructions(forward_backward, *args)
    assert {opcode for opcode, _ in instructions} <= _PLUMBING, instructions
    calls = _custom_calls(instructions)
    targets = sorted(line.split('custom_call_target="')[1].split('"')[0] for line in calls)
    assert targets == ["groupgemm_ragged_k", "groupgemm_ragged_m", "groupgemm_ragged_m"]
    # The weights go to both ragged-M calls as the parameter itself, read in
    # the other layout by dgrad (an attribute), never transposed first.
    assert all("flags = 0 : i32" in line for line in calls)
    layouts = sorted(line.split("rhs_layout = ")[1].split(" ")[0] for line in calls
                     if "groupgemm_ragged_m" in line)
    assert layouts == ["0", "1"]


def test_quantized_operands_go_to_the_product_as_the_quantizer_wrote_them():
    """quantize -> product: three custom calls, and no copy, transpose or
    conversion of the quantized arrays between them."""
    groups = len(SIZES)
    args = (_spec((M, K)), _spec((groups, N, K)), _spec((groups,), jnp.int32))

    def product(x, w, s):
        qx = ggj.grouped_quantize(x, s, rowwise="nvfp4_group")
        qw = ggj.grouped_quantize(w, rowwise="nvfp4_tensor")
        return ggj.ragged_dot(qx.rowwise, qw.rowwise, s, rhs_layout="nk")

    instructions = _instructions(product, *args)
    assert {opcode for opcode, _ in instructions} <= _PLUMBING, instructions
    targets = sorted(line.split('custom_call_target="')[1].split('"')[0]
                     for line in _custom_calls(instructions))
    assert targets == ["groupgemm_quantize", "groupgemm_quantize", "groupgemm_ragged_m"]


def test_only_the_with_flags_functions_ask_for_the_flags():
    args = (_spec((M, K)), _spec((len(SIZES), K, N)), _spec((len(SIZES),), jnp.int32))
    plain = _custom_calls(_instructions(ggj.ragged_dot, *args))
    flagged = _instructions(ggj.ragged_dot_with_flags, *args)
    assert len(plain) == 1 and "flags = 0 : i32" in plain[0]
    assert [line for line in _custom_calls(flagged) if "flags = 1 : i32" in line]
    x, sizes = _spec((M, K), jnp.float32), _spec((len(SIZES),), jnp.int32)
    quantize = lambda x_, s: ggj.grouped_quantize(x_, s, rowwise="mxfp8_e4m3")  # noqa: E731
    assert "flags = 0 : i32" in _custom_calls(_instructions(quantize, x, sizes))[0]


# ---- device flags ------------------------------------------------------------------


@pytest.mark.parametrize("platform", PLATFORMS)
def test_bad_sizes_are_clamped_and_flagged(platform):
    lhs, rhs, _ = make(platform)
    bad = jax.device_put(jnp.asarray([3, -2, 30, 1, 0, 0], jnp.int32), device(platform))
    out, flags = jax.jit(lambda a, b, s: ggj.ragged_dot_with_flags(
        a, b, s, preferred_element_type=jnp.float32))(lhs, rhs, bad)
    flag = ggj.check(flags)
    assert flag & DeviceFlag.NEGATIVE_SIZE and flag & DeviceFlag.SIZES_EXCEED_ROWS
    clamped = jnp.asarray([3, 0, M - 3, 0, 0, 0], jnp.int32)
    assert_equal(out, reference(lhs, rhs, clamped))
    _, ok = ggj.ragged_dot_with_flags(lhs, rhs, jax.device_put(jnp.asarray(SIZES, jnp.int32),
                                                               device(platform)))
    assert not ggj.check(ok)


# ---- trace-time errors -------------------------------------------------------------


def _spec(shape, dtype=jnp.bfloat16):
    return jax.ShapeDtypeStruct(shape, dtype)


@pytest.mark.parametrize(
    "args,kwargs,error,match",
    [
        ((_spec((M,)), _spec((6, K, N)), _spec((6,), jnp.int32)), {}, ValueError,
         r"lhs: expected \[M, K\]"),
        ((_spec((M, K)), _spec((K, N)), _spec((6,), jnp.int32)), {}, ValueError,
         r"rhs: expected \[G, K, N\]"),
        ((_spec((M, K)), _spec((6, K + 8, N)), _spec((6,), jnp.int32)), {}, ValueError,
         r"rhs: K = 40"),
        ((_spec((M, K)), _spec((5, K, N)), _spec((6,), jnp.int32)), {}, ValueError,
         r"rhs: has 5 groups"),
        ((_spec((M, K)), _spec((6, K, N)), _spec((6,), jnp.float32)), {}, TypeError,
         r"group_sizes: expected int32 or int64"),
        ((_spec((M, K)), _spec((6, K, N)), _spec((6, 1), jnp.int32)), {}, ValueError,
         r"group_sizes: expected a 1-D array"),
        ((_spec((M, K), jnp.float32), _spec((6, K, N), jnp.float32), _spec((6,), jnp.int32)),
         {}, TypeError, r"lhs: dtype float32 is not supported"),
        ((_spec((M, K)), _spec((6, K, N), jnp.float16), _spec((6,), jnp.int32)), {},
         TypeError, r"rhs: dtype float16 differs from lhs's bfloat16"),
        ((_spec((M, K)), _spec((6, K, N)), _spec((6,), jnp.int32)),
         {"preferred_element_type": jnp.int32}, TypeError, r"preferred_element_type: int32"),
        ((_spec((M, K)), _spec((6, N, K)), _spec((6,), jnp.int32)),
         {"rhs_layout": "nk", "bias": _spec((6, K), jnp.float32)}, ValueError,
         r"bias: expected \[G, N\] = \[6, 48\]"),
        ((_spec((M, K)), _spec((6, K, N)), _spec((6,), jnp.int32)), {"rhs_layout": "mn"},
         ValueError, r"rhs_layout: expected 'kn'"),
        ((_spec((M, K)), _spec((6, K, N)), _spec((6,), jnp.int32)),
         {"group_offset": _spec((1,), jnp.int32)}, NotImplementedError, r"group_offset"),
    ],
)
def test_ragged_dot_errors_at_trace_time(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        jax.eval_shape(lambda *a: ggj.ragged_dot(*a, **kwargs), *args)


def test_ragged_dot_k_errors_at_trace_time():
    sizes = _spec((6,), jnp.int32)
    with pytest.raises(ValueError, match=r"b: has 19 rows, but a has 20"):
        jax.eval_shape(ggj.ragged_dot_k, _spec((M, 8)), _spec((M - 1, 8)), sizes)
    with pytest.raises(ValueError, match=r"a: expected \[M, P\]"):
        jax.eval_shape(ggj.ragged_dot_k, _spec((M,)), _spec((M, 8)), sizes)
    with pytest.raises(TypeError, match=r"b: dtype float16 differs"):
        jax.eval_shape(ggj.ragged_dot_k, _spec((M, 8)), _spec((M, 8), jnp.float16), sizes)


# ---- grouped quantize ----------------------------------------------------------------

RAGGED_FORMATS = sorted(f for f in core.QUANTIZE_FORMATS if not f.endswith("128x128"))
Q_SIZES = [33, 0, 1, 129, 31, 62]  # empty, a group of 1, unaligned; sum 256 = Q_ROWS
Q_ROWS, Q_K = 256, 160
STACKED_SHAPE = (3, 136, 160)


def quantize_input(shape, dtype=jnp.bfloat16, seed=0):
    """Normal values, each row scaled by its own power of two."""
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal(shape) * np.exp2(rng.integers(-8, 8, shape[:-1] + (1,)))
    return jnp.asarray(rows.astype(np.float32), dtype)


def reference_quantize(x, sizes, rowwise, columnwise, amax):
    """The seven arrays of core.quantized (None where not asked for), from
    the library's CPU reference on numpy arrays, allocated as the front ends
    allocate them (core.quantize_arrays)."""
    x = np.asarray(x)
    sizes = None if sizes is None else np.asarray(sizes, np.int32)
    groups = x.shape[0] if sizes is None else len(sizes)
    arrays, outputs = [], []
    for fmt, columnwise_output in ((rowwise, False), (columnwise, True)):
        if fmt is None:
            arrays += [None] * 3
            outputs.append(None)
            continue
        made = [None if a is None else np.zeros(a.shape, np.dtype(getattr(jnp, a.dtype)))
                for a in core.quantize_arrays(fmt, x.shape, groups, columnwise_output)]
        arrays += made
        outputs.append(core.QuantizedOutput(fmt, *(0 if a is None else a.ctypes.data
                                                   for a in made)))
    arrays.append(np.zeros(groups, np.float32) if amax else None)
    desc = core.grouped_quantize(
        ggnp.operand("x", x), None if sizes is None else ggnp.operand("group_sizes", sizes),
        outputs[0], outputs[1], 0 if arrays[6] is None else arrays[6].ctypes.data)
    ggnp.default_workspace().run(desc)
    return arrays


def _bits(a):
    a = np.asarray(a)
    return a.view(np.uint8) if a.dtype.itemsize == 1 else a.view(np.int32)


def _defined(name, a, fmt, sizes):
    """The part of a ragged output that some group defines: rows (rowwise)
    or columns (columnwise) up to the sizes' sum, and the columnwise block
    scales the groups use (blocks restart at every group start)."""
    if sizes is None:
        return a
    total = sum(sizes)
    packed = 2 if fmt.startswith(("nvfp4", "mxfp4")) else 1
    if name == "rowwise data" or name == "rowwise block_scales":
        return a[:total]
    if name == "columnwise data":
        return a[:, : total // packed]
    if name == "columnwise block_scales" and not fmt.endswith("_rowwise"):  # rowwise: [K, G]
        block = 32 if fmt.startswith("mx") else 16 if fmt.startswith("nvfp4") else 128
        return a[:, : sum(-(-s // block) for s in sizes)]
    return a


def assert_quantized(got, want, rowwise, columnwise, sizes=None):
    want = core.quantized(rowwise, columnwise, want[6] is not None, want)
    for side, fmt in (("rowwise", rowwise), ("columnwise", columnwise)):
        ours, theirs = getattr(got, side), getattr(want, side)
        assert (ours is None) == (theirs is None), side
        if ours is None:
            continue
        for field in ("data", "block_scales", "scale"):
            a, b = getattr(ours, field), getattr(theirs, field)
            name = "%s %s" % (side, field)
            assert (a is None) == (b is None), name
            if a is None:
                continue
            assert a.shape == b.shape and np.dtype(a.dtype) == b.dtype, name
            a, b = (_bits(_defined(name, np.asarray(v), fmt, sizes)) for v in (a, b))
            diff = np.argwhere(a != b)
            assert diff.size == 0, "%s %s: first mismatch at %s: got %s, want %s" % (
                fmt, name, diff[0].tolist(), a[tuple(diff[0])], b[tuple(diff[0])])
    assert (got.amax is None) == (want.amax is None)
    if got.amax is not None:
        np.testing.assert_array_equal(_bits(got.amax), _bits(want.amax))


def _quantize_jit(rowwise, columnwise, amax):
    return jax.jit(lambda x, s=None: ggj.grouped_quantize(
        x, s, rowwise=rowwise, columnwise=columnwise, amax=amax))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("fmt", RAGGED_FORMATS)
def test_quantize_ragged_matches_the_reference(platform, fmt):
    x = quantize_input((Q_ROWS, Q_K))
    sizes = jax.device_put(jnp.asarray(Q_SIZES, jnp.int32), device(platform))
    quantize = _quantize_jit(fmt, fmt, True)
    got = quantize(jax.device_put(x, device(platform)), sizes)
    assert_quantized(got, reference_quantize(x, Q_SIZES, fmt, fmt, True), fmt, fmt, Q_SIZES)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("fmt", sorted(core.QUANTIZE_FORMATS))
def test_quantize_stacked_matches_the_reference(platform, fmt):
    w = quantize_input(STACKED_SHAPE, seed=1)
    quantize = _quantize_jit(fmt, fmt, True)
    got = quantize(jax.device_put(w, device(platform)))
    assert_quantized(got, reference_quantize(w, None, fmt, fmt, True), fmt, fmt)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16, jnp.float32])
@pytest.mark.parametrize(
    "sizes,rows",
    [([5, 0, 1, 7], 20), ([0, 0, 0], 8), ([8], 8), ([1, 1, 0, 1], 3), ([0, 0], 0)],
    ids=["tail", "all-empty", "G1", "ones", "no-rows"],
)
def test_quantize_edge_sizes(platform, dtype, sizes, rows):
    """Rows past the last group are undefined, so only the groups' entries compare."""
    x = quantize_input((rows, 64), dtype, seed=2)
    put = lambda a: jax.device_put(a, device(platform))  # noqa: E731
    pairs = (("fp8_e4m3_group", "mxfp8_e5m2"), ("nvfp4_tensor", "fp8_e5m2_1x128"))
    for rowwise, columnwise in pairs:
        got = ggj.grouped_quantize(put(x), put(jnp.asarray(sizes, jnp.int32)), rowwise=rowwise,
                                   columnwise=columnwise, amax=True)
        want = reference_quantize(x, sizes, rowwise, columnwise, True)
        assert_quantized(got, want, rowwise, columnwise, sizes)


def test_quantize_mxfp8_of_ones_is_worked_out_here():
    # amax 1: X = floor(log2 1) - 8 = -8, e8m0 code 127 - 8 = 119; 1 / 2^-8 =
    # 256 is e4m3 0x78. Columnwise, one block per group.
    q = ggj.grouped_quantize(jnp.ones((4, 64), jnp.bfloat16), jnp.asarray([3, 1], jnp.int32),
                             rowwise="mxfp8_e4m3", columnwise="mxfp8_e4m3", amax=True)
    assert (_bits(q.rowwise.data) == 0x78).all()
    assert (np.asarray(q.rowwise.block_scales) == 119).all()
    assert (_bits(q.columnwise.data) == 0x78).all()
    assert q.columnwise.block_scales.shape == (64, 2)
    assert (np.asarray(q.columnwise.block_scales) == 119).all()
    assert q.amax.tolist() == [1.0, 1.0] and q.rowwise.scale is None


def test_quantize_nvfp4_tensor_scale_is_worked_out_here():
    # amax 2688 = 6 * 448: tensor scale 1, block scale ue4m3(448) = 0x7E, and
    # 2688 / 448 = 6, the e2m1 max 0x7 (two per byte: 0x77).
    q = ggj.grouped_quantize(jnp.full((2, 32), 2688.0, jnp.float32), jnp.asarray([2], jnp.int32),
                             rowwise="nvfp4_tensor")
    assert q.rowwise.scale.tolist() == [1.0]
    assert (np.asarray(q.rowwise.block_scales) == 0x7E).all()
    assert (np.asarray(q.rowwise.data) == 0x77).all()
    assert q.columnwise is None and q.amax is None


def test_quantize_shapes_and_dtypes():
    x = _spec((64, 96))
    q = jax.eval_shape(lambda a, s: ggj.grouped_quantize(
        a, s, rowwise="nvfp4_group", columnwise="fp8_e4m3_1x128"), x, _spec((2,), jnp.int32))
    assert (q.rowwise.data.shape, q.rowwise.data.dtype) == ((64, 48), jnp.uint8)
    assert (q.rowwise.block_scales.shape, q.rowwise.block_scales.dtype) == ((64, 6), jnp.uint8)
    assert (q.rowwise.scale.shape, q.rowwise.scale.dtype) == ((2,), jnp.float32)
    assert (q.columnwise.data.shape, q.columnwise.data.dtype) == ((96, 64), jnp.float8_e4m3fn)
    assert q.columnwise.block_scales.shape == (96, 0 + 2)  # 64 // 128 + min(G, 64)
    assert q.columnwise.block_scales.dtype == jnp.float32 and q.columnwise.scale is None
    assert q.amax is None
    e5m2 = jax.eval_shape(lambda a: ggj.grouped_quantize(a, rowwise="mxfp8_e5m2", amax=True),
                          _spec((3, 32, 64), jnp.float32))
    assert (e5m2.rowwise.data.dtype, e5m2.rowwise.block_scales.shape) == (jnp.float8_e5m2,
                                                                           (3, 32, 2))
    assert e5m2.amax.shape == (3,) and e5m2.columnwise is None


@pytest.mark.parametrize("platform", PLATFORMS)
def test_quantize_bad_sizes_are_clamped_and_flagged(platform):
    x = quantize_input((20, 64), seed=3)
    put = lambda a: jax.device_put(a, device(platform))  # noqa: E731
    bad = put(jnp.asarray([3, -2, 30, 1], jnp.int32))
    q, flags = jax.jit(lambda a, s: ggj.grouped_quantize_with_flags(
        a, s, rowwise="fp8_e4m3_group", amax=True))(put(x), bad)
    flag = ggj.check(flags)
    assert flag & DeviceFlag.NEGATIVE_SIZE and flag & DeviceFlag.SIZES_EXCEED_ROWS
    clamped = [3, 0, 17, 0]
    want = reference_quantize(x, clamped, "fp8_e4m3_group", None, True)
    assert_quantized(q, want, "fp8_e4m3_group", None, clamped)
    _, ok = ggj.grouped_quantize_with_flags(put(x), put(jnp.asarray([20], jnp.int32)),
                                            columnwise="mxfp8_e4m3")
    assert not ggj.check(ok)


@pytest.mark.parametrize(
    "x,sizes,kwargs,error,match",
    [
        (_spec((M, K), jnp.int32), _spec((2,), jnp.int32), {"rowwise": "mxfp8_e4m3"}, TypeError,
         r"x: dtype int32 is not supported"),
        (_spec((M,)), _spec((2,), jnp.int32), {"rowwise": "mxfp8_e4m3"}, ValueError,
         r"x: expected \[M, K\]"),
        (_spec((M, K)), None, {"rowwise": "mxfp8_e4m3"}, ValueError, r"x: expected \[G, N, K\]"),
        (_spec((M, K)), _spec((2,), jnp.float32), {"rowwise": "mxfp8_e4m3"}, TypeError,
         r"group_sizes: expected int32 or int64"),
        (_spec((M, K)), _spec((2, 1), jnp.int32), {"rowwise": "mxfp8_e4m3"}, ValueError,
         r"group_sizes: expected a 1-D array"),
        (_spec((M, K)), _spec((2,), jnp.int32), {"rowwise": "fp8"}, ValueError,
         r"rowwise: unknown quantize format 'fp8'"),
        (_spec((M, K)), _spec((2,), jnp.int32), {"columnwise": "mxfp6"}, ValueError,
         r"columnwise: unknown quantize format 'mxfp6'"),
        (_spec((M, K)), _spec((2,), jnp.int32), {"rowwise": "fp8_e4m3_128x128"}, ValueError,
         r"rowwise: fp8_e4m3_128x128 is for stacked"),
        (_spec((M, K)), _spec((2,), jnp.int32), {}, ValueError, r"nothing asked for"),
        (_spec((M, K + 1)), _spec((2,), jnp.int32), {"rowwise": "nvfp4_group"}, ValueError,
         r"the rowwise output's last dimension \(33\) must be even"),
    ],
)
def test_quantize_errors_at_trace_time(x, sizes, kwargs, error, match):
    with pytest.raises(error, match=match):
        if sizes is None:
            jax.eval_shape(lambda a: ggj.grouped_quantize(a, **kwargs), x)
        else:
            jax.eval_shape(lambda a, s: ggj.grouped_quantize(a, s, **kwargs), x, sizes)


# ---- Flax ----------------------------------------------------------------------------


def test_grouped_dense():
    pytest.importorskip("flax", reason="flax is not installed (GroupedDense is optional)")
    lhs, _, sizes = make("cpu")
    layer = ggj.GroupedDense(features=N, num_groups=len(SIZES), dtype=jnp.bfloat16,
                             param_dtype=jnp.bfloat16)
    params = layer.init(jax.random.PRNGKey(0), lhs, sizes)
    kernel = params["params"]["kernel"]
    bias = params["params"]["bias"]
    assert kernel.shape == (len(SIZES), K, N) and bias.shape == (len(SIZES), N)
    out = jax.jit(layer.apply)(params, lhs, sizes)
    expected = np.array(reference(lhs, kernel, sizes))
    expected[: sum(SIZES)] += np.asarray(f32(bias))[np.repeat(np.arange(len(SIZES)), SIZES)]
    np.testing.assert_allclose(np.asarray(f32(out)), expected, rtol=1e-2, atol=1e-2)
    grads = jax.grad(lambda p: f32(layer.apply(p, lhs, sizes)).sum())(params)
    assert grads["params"]["kernel"].shape == kernel.shape


# ---- GPU: random values, command buffers ----------------------------------------------


@needs_gpu
@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16])
def test_gpu_random_values_and_grads(dtype):
    sizes = [130, 0, 257, 1, 0, 64, 300]  # tile +- 1, empty, sum 752 < M
    rows, k, n = 800, 256, 384
    rng = np.random.default_rng(5)
    lhs = jax.device_put(jnp.asarray(rng.standard_normal((rows, k)), dtype), GPU)
    rhs = jax.device_put(jnp.asarray(rng.standard_normal((len(sizes), k, n)) / 16, dtype), GPU)
    gs = jax.device_put(jnp.asarray(sizes, jnp.int32), GPU)
    out = jax.jit(lambda a, b, s: ggj.ragged_dot(a, b, s, preferred_element_type=jnp.float32))(
        lhs, rhs, gs)
    expected = np.asarray(reference(lhs, rhs, gs))
    np.testing.assert_allclose(np.asarray(out), expected, rtol=2e-3, atol=2e-3)
    cot = jax.device_put(jnp.asarray(rng.standard_normal((rows, n)), jnp.float32), GPU)
    dlhs, drhs = jax.jit(jax.grad(lambda a, b: (ggj.ragged_dot(
        a, b, gs, preferred_element_type=jnp.float32) * cot).sum(), argnums=(0, 1)))(lhs, rhs)
    cpu = jax.devices("cpu")[0]
    ref = jax.grad(lambda a, b: (jax.lax.ragged_dot(a, b, jax.device_put(gs, cpu))
                                 * jax.device_put(f32(cot.astype(dtype)), cpu)).sum(),
                   argnums=(0, 1))(jax.device_put(f32(lhs), cpu), jax.device_put(f32(rhs), cpu))
    tol = 2e-2 if dtype == jnp.bfloat16 else 4e-3
    for ours, theirs in zip((dlhs, drhs), ref):
        scale = float(jnp.abs(theirs).max())
        np.testing.assert_allclose(np.asarray(f32(ours)), np.asarray(theirs),
                                   rtol=tol, atol=tol * scale)


@needs_gpu
def test_gpu_quantize_jit_replays_with_changed_sizes():
    """One compiled quantize, run with other sizes each time (nvfp4 group
    scales take the amax launch, whose accumulators the last CTA clears for
    the next call), each result bit-exact against the reference."""
    fmt = "nvfp4_group"
    x = quantize_input((Q_ROWS, 128), seed=4)
    gx = jax.device_put(x, GPU)
    sizes0 = jax.device_put(jnp.asarray(Q_SIZES, jnp.int32), GPU)
    compiled = _quantize_jit(fmt, fmt, True).lower(gx, sizes0).compile()
    for sizes in ([256, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 256], [40, 40, 40, 40, 40, 56], Q_SIZES):
        got = compiled(gx, jax.device_put(jnp.asarray(sizes, jnp.int32), GPU))
        assert_quantized(got, reference_quantize(x, sizes, fmt, fmt, True), fmt, fmt, sizes)


@needs_gpu
def test_gpu_command_buffer_replay_with_changed_sizes():
    """A jitted training step compiled with command buffers for custom calls,
    run with different group sizes each time (same shapes, so the same
    executable and command buffer), each result checked. In a subprocess,
    since XLA_FLAGS is read once per process."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_gpu_enable_command_buffer="
                        "FUSION,CUSTOM_CALL --xla_gpu_graph_min_graph_size=1").strip()
    result = subprocess.run([sys.executable, os.path.join(HERE, "jax_command_buffer_step.py")],
                            env=env, capture_output=True, text=True, timeout=600)
    print(result.stdout[-4000:], result.stderr[-4000:])
    assert result.returncode == 0, result.stderr[-4000:]
    assert "command buffer replays: ok" in result.stdout

"""The products on numpy arrays through the CPU reference, against float64 loops.

Expectations are computed here, group by group in float64, from the formulas
of groupgemm.h. Small-integer inputs make every sum exact in fp32 (and in
fp16/bf16 outputs), so those cases compare bit for bit; random inputs are
compared within a bound derived from the accumulation's rounding.
"""

import re

import numpy as np
import pytest

from groupgemm import DeviceFlag, GroupGemmError, core
from groupgemm import numpy as ggnp

pytestmark = pytest.mark.usefixtures("lib")

SIZES = [3, 0, 5, 1]  # a zero-size group, and sum 9 < M = 12 rows


def offsets(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def small_integers(rng, shape, dtype):
    return rng.integers(-3, 4, size=shape).astype(np.float32).astype(dtype)


def expected_ragged_m(x, w, sizes, w_layout, out, alpha=1.0, beta=0.0, bias=None):
    """float64 of the defining formula, rows past the last group left as `out` has them."""
    result = out.astype(np.float64)
    starts = offsets(sizes)
    for g, size in enumerate(sizes):
        rows = slice(starts[g], starts[g] + size)
        wg = w[g].astype(np.float64)
        product = x[rows].astype(np.float64) @ (wg.T if w_layout == "nk" else wg)
        alpha_g = alpha[g] if isinstance(alpha, np.ndarray) else alpha
        beta_g = beta[g] if isinstance(beta, np.ndarray) else beta
        result[rows] = alpha_g * product + (beta_g * result[rows] if beta_g != 0 else 0)
        if bias is not None:
            result[rows] += bias[g].astype(np.float64)
    return result


def expected_ragged_k(a, b, sizes, out, alpha=1.0, beta=0.0):
    result = out.astype(np.float64)
    starts = offsets(sizes)
    for g, size in enumerate(sizes):
        rows = slice(starts[g], starts[g] + size)
        product = a[rows].astype(np.float64).T @ b[rows].astype(np.float64)
        result[g] = alpha * product + (beta * result[g] if beta != 0 else 0)
    return result


def weights(rng, groups, k, n, w_layout, dtype, values=small_integers):
    shape = (groups, n, k) if w_layout == "nk" else (groups, k, n)
    return values(rng, shape, dtype)


def apart(matrices):
    """Each matrix copied into an allocation of its own, as per-expert tensors are."""
    return [np.array(matrix, copy=True) for matrix in matrices]


@pytest.mark.parametrize("w_layout", ["nk", "kn"])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize("out_dtype", [np.float32, np.float16])
def test_ragged_m_exact_on_small_integers(w_layout, index_type, out_dtype):
    rng = np.random.default_rng(1)
    m, k, n = 12, 24, 40
    x = small_integers(rng, (m, k), np.float16)
    w = weights(rng, len(SIZES), k, n, w_layout, np.float16)
    out = np.full((m, n), np.nan, dtype=out_dtype)  # poisoned: beta = 0 must not read it
    result = ggnp.grouped_mm(x, w, np.array(SIZES, dtype=index_type), w_layout=w_layout, out=out)
    assert result is out
    np.testing.assert_array_equal(
        out, expected_ragged_m(x, w, SIZES, w_layout, np.full((m, n), np.nan))
    )


def test_ragged_m_allocates_zeroed_rows_past_the_groups():
    rng = np.random.default_rng(2)
    x = small_integers(rng, (12, 16), np.float16)
    w = weights(rng, len(SIZES), 16, 8, "nk", np.float16)
    out = ggnp.grouped_mm(x, w, np.array(SIZES, np.int32), out_dtype=np.float32)
    assert out.dtype == np.float32 and out.shape == (12, 8)
    np.testing.assert_array_equal(out, expected_ragged_m(x, w, SIZES, "nk", np.zeros((12, 8))))


@pytest.mark.parametrize("w_layout", ["nk", "kn"])
def test_ragged_m_random_within_rounding_bound(w_layout):
    rng = np.random.default_rng(3)
    sizes = [17, 0, 40, 7, 0, 33]
    m, k, n = 110, 96, 72
    x = rng.standard_normal((m, k)).astype(np.float16)
    w = weights(
        rng, len(sizes), k, n, w_layout, np.float16, lambda r, s, d: r.standard_normal(s).astype(d)
    )
    out = ggnp.grouped_mm(x, w, np.array(sizes, np.int32), w_layout=w_layout, out_dtype=np.float32)
    expected = expected_ragged_m(x, w, sizes, w_layout, np.zeros((m, n)))
    magnitude = expected_ragged_m(np.abs(x), np.abs(w), sizes, w_layout, np.zeros((m, n)))
    bound = k * 2.0**-23 * magnitude + 2.0**-24 * np.abs(expected)  # fp32 accumulation, fp32 output
    assert np.all(np.abs(out - expected) <= bound)


@pytest.mark.parametrize("w_layout", ["nk", "kn"])
def test_ragged_m_reads_a_transposed_weight_view_in_place(w_layout):
    rng = np.random.default_rng(4)
    x = small_integers(rng, (12, 24), np.float16)
    other = "kn" if w_layout == "nk" else "nk"
    stored = weights(rng, len(SIZES), 24, 16, other, np.float16)
    view = stored.transpose(0, 2, 1)  # the w_layout shape, its last dimension strided
    assert not view.flags.c_contiguous
    out = ggnp.grouped_mm(
        x, view, np.array(SIZES, np.int32), w_layout=w_layout, out_dtype=np.float32
    )
    np.testing.assert_array_equal(
        out, expected_ragged_m(x, view, SIZES, w_layout, np.zeros((12, 16)))
    )


def test_ragged_m_alpha_beta_bias():
    rng = np.random.default_rng(5)
    m, k, n = 12, 32, 24
    x = small_integers(rng, (m, k), np.float16)
    w = weights(rng, len(SIZES), k, n, "nk", np.float16)
    bias = small_integers(rng, (len(SIZES), n), np.float32)
    start = small_integers(rng, (m, n), np.float32)
    out = start.copy()
    ggnp.grouped_mm(x, w, np.array(SIZES, np.int32), bias=bias, alpha=2.0, beta=-1.0, out=out)
    np.testing.assert_array_equal(out, expected_ragged_m(x, w, SIZES, "nk", start, 2.0, -1.0, bias))


def test_ragged_m_per_group_alpha_and_beta():
    rng = np.random.default_rng(6)
    m, k, n = 12, 16, 8
    x = small_integers(rng, (m, k), np.float16)
    w = weights(rng, len(SIZES), k, n, "kn", np.float16)
    alpha = np.array([1.0, 2.0, 0.5, -3.0], np.float32)
    beta = np.array([0.0, 1.0, 2.0, 0.5], np.float32)
    start = small_integers(rng, (m, n), np.float32)
    out = start.copy()
    ggnp.grouped_mm(x, w, np.array(SIZES, np.int32), w_layout="kn", alpha=alpha, beta=beta, out=out)
    np.testing.assert_array_equal(out, expected_ragged_m(x, w, SIZES, "kn", start, alpha, beta))


def test_ragged_m_bf16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(7)
    x = small_integers(rng, (12, 16), ml_dtypes.bfloat16)
    w = weights(rng, len(SIZES), 16, 24, "nk", ml_dtypes.bfloat16)
    out = ggnp.grouped_mm(x, w, np.array(SIZES, np.int32))
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(
        out.astype(np.float64), expected_ragged_m(x, w, SIZES, "nk", np.zeros((12, 24)))
    )


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_ragged_k_exact_and_empty_groups_written(index_type):
    rng = np.random.default_rng(8)
    m, p, q = 12, 24, 16
    a = small_integers(rng, (m, p), np.float16)
    b = small_integers(rng, (m, q), np.float16)
    out = np.full((len(SIZES), p, q), np.nan, np.float32)  # the empty group must become zeros
    ggnp.ragged_k_mm(a, b, np.array(SIZES, index_type), out=out)
    np.testing.assert_array_equal(out, expected_ragged_k(a, b, SIZES, np.zeros(out.shape)))
    assert np.all(out[1] == 0)


@pytest.mark.parametrize("per_expert", [False, True])
def test_ragged_k_accumulates_with_beta(per_expert):
    rng = np.random.default_rng(9)
    m, p, q = 12, 8, 24
    a = small_integers(rng, (m, p), np.float16)
    b = small_integers(rng, (m, q), np.float16)
    start = small_integers(rng, (len(SIZES), p, q), np.float32)
    # per_expert: G separate fp32 main grads, accumulated in place
    out = apart(start) if per_expert else start.copy()
    result = ggnp.ragged_k_mm(a, b, np.array(SIZES, np.int32), alpha=2.0, beta=1.0, out=out)
    assert result is out
    np.testing.assert_array_equal(np.stack(out), expected_ragged_k(a, b, SIZES, start, 2.0, 1.0))


def test_ragged_k_reads_column_major_operands_in_place():
    rng = np.random.default_rng(10)
    m, p, q = 12, 16, 8
    a = np.asfortranarray(small_integers(rng, (m, p), np.float16))
    b = np.asfortranarray(small_integers(rng, (m, q), np.float16))
    out = ggnp.ragged_k_mm(a, b, np.array(SIZES, np.int32), out_dtype=np.float32)
    np.testing.assert_array_equal(out, expected_ragged_k(a, b, SIZES, np.zeros(out.shape)))


# Empty dimensions, as a framework's empty arrays come (numpy 2 gives them
# zero strides): (M, K, N, sizes) and (M, P, Q, sizes).
EMPTY_RAGGED_M = [
    (0, 16, 8, [0, 0, 0]),  # M = 0
    (12, 16, 0, [3, 0, 5]),  # N = 0
    (12, 0, 8, [3, 0, 5]),  # K = 0: the groups' rows are beta * out + bias
    (12, 16, 8, [0, 0, 0]),  # every group empty: out is untouched
]
EMPTY_RAGGED_K = [
    (0, 16, 8, [0, 0, 0]),  # M = 0: every group empty
    (12, 0, 8, [3, 0, 5]),  # P = 0
    (12, 16, 0, [3, 0, 5]),  # Q = 0
    (12, 16, 8, [0, 0, 0]),  # every group empty: out[g] = beta * out[g]
]


@pytest.mark.parametrize("m, k, n, sizes", EMPTY_RAGGED_M)
@pytest.mark.parametrize("w_layout", ["nk", "kn"])
def test_ragged_m_empty_dimensions(m, k, n, sizes, w_layout):
    rng = np.random.default_rng(14)
    x = small_integers(rng, (m, k), np.float16)
    w = weights(rng, len(sizes), k, n, w_layout, np.float16)
    group_sizes = np.array(sizes, np.int32)
    out = ggnp.grouped_mm(x, w, group_sizes, w_layout=w_layout, out_dtype=np.float32)
    assert out.shape == (m, n) and out.dtype == np.float32
    np.testing.assert_array_equal(out, expected_ragged_m(x, w, sizes, w_layout, np.zeros((m, n))))
    bias = small_integers(rng, (len(sizes), n), np.float32)
    start = small_integers(rng, (m, n), np.float32)
    out = start.copy()
    ggnp.grouped_mm(x, w, group_sizes, w_layout=w_layout, bias=bias, beta=0.5, out=out)
    np.testing.assert_array_equal(
        out, expected_ragged_m(x, w, sizes, w_layout, start, beta=0.5, bias=bias)
    )


@pytest.mark.parametrize("m, p, q, sizes", EMPTY_RAGGED_K)
def test_ragged_k_empty_dimensions(m, p, q, sizes):
    rng = np.random.default_rng(15)
    a = small_integers(rng, (m, p), np.float16)
    b = small_integers(rng, (m, q), np.float16)
    group_sizes = np.array(sizes, np.int64)
    out = ggnp.ragged_k_mm(a, b, group_sizes, out_dtype=np.float32)  # allocated uninitialized
    assert out.shape == (len(sizes), p, q) and out.dtype == np.float32
    np.testing.assert_array_equal(out, expected_ragged_k(a, b, sizes, np.zeros(out.shape)))
    start = small_integers(rng, (len(sizes), p, q), np.float32)
    out = start.copy()
    ggnp.ragged_k_mm(a, b, group_sizes, alpha=2.0, beta=0.5, out=out)
    np.testing.assert_array_equal(out, expected_ragged_k(a, b, sizes, start, 2.0, 0.5))


def test_an_empty_bf16_batch():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    x = np.zeros((0, 64), ml_dtypes.bfloat16)
    w = np.zeros((4, 32, 64), ml_dtypes.bfloat16)
    out = ggnp.grouped_mm(x, w, np.zeros(4, np.int32))
    assert out.shape == (0, 32) and out.dtype == ml_dtypes.bfloat16


@pytest.mark.parametrize("w_layout", ["nk", "kn"])
@pytest.mark.parametrize("transposed", [False, True])
def test_ragged_m_per_expert_weights(w_layout, transposed):
    rng = np.random.default_rng(13)
    m, k, n = 12, 24, 16
    x = small_integers(rng, (m, k), np.float16)
    if transposed:  # each expert a transposed view of the other layout, read in place
        other = "kn" if w_layout == "nk" else "nk"
        experts = [matrix.T for matrix in apart(weights(rng, len(SIZES), k, n, other, np.float16))]
    else:
        experts = apart(weights(rng, len(SIZES), k, n, w_layout, np.float16))
    out = np.full((m, n), np.nan, np.float32)
    ggnp.grouped_mm(x, experts, np.array(SIZES, np.int32), w_layout=w_layout, out=out)
    np.testing.assert_array_equal(
        out, expected_ragged_m(x, np.stack(experts), SIZES, w_layout, np.full((m, n), np.nan))
    )


@pytest.mark.parametrize(
    "experts, error, names",
    [
        ([], ValueError, "w: needs at least one matrix"),
        (
            [np.zeros((8, 16), np.float16)] * 3 + [np.zeros((8, 15), np.float16)],
            ValueError,
            "w[3]: has shape [8, 15], unlike w[0] ([8, 16])",
        ),
        (
            [np.zeros((8, 16), np.float16)] + [np.zeros((8, 16), np.float32)] * 3,
            ValueError,
            "w[1]: has dtype fp32, unlike w[0] (fp16)",
        ),
        (
            [np.zeros((8, 16), np.float16)] * 3 + [np.zeros((8, 32), np.float16)[:, ::2]],
            ValueError,
            "w[3]: has strides [32, 2], unlike w[0] ([16, 1])",
        ),
        ([np.zeros((8, 16), np.float16)] * 3, ValueError, "w: has 3 groups"),
        ([np.zeros((8, 16), np.float16)] * 3 + [[0.0]], TypeError, "w[3]: expected a numpy array"),
        (
            [np.zeros((4, 8, 16), np.float16)] * 4,
            ValueError,
            "w[0]: expected a matrix [rows, cols]",
        ),
        ("w", TypeError, "w: expected a numpy array or a list of matrices"),
    ],
)
def test_bad_per_expert_weights_raise_naming_the_matrix(experts, error, names):
    with pytest.raises(error) as raised:
        ggnp.grouped_mm(**_ragged_m_args(w=experts))
    assert names in str(raised.value)


@pytest.mark.parametrize(
    "sizes, message",
    [
        ([3, -1, 2], "group_sizes: group 1 has size -1; sizes must be >= 0"),
        ([5, 9], "group_sizes: the sizes sum to 14, past M = 10"),
    ],
)
def test_bad_host_sizes_raise_naming_group_sizes(sizes, message):
    rng = np.random.default_rng(11)
    x, b = small_integers(rng, (10, 8), np.float16), small_integers(rng, (10, 4), np.float16)
    w = weights(rng, len(sizes), 8, 8, "nk", np.float16)
    out = np.full((10, 8), np.nan, np.float32)
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        ggnp.grouped_mm(x, w, np.array(sizes, np.int32), out=out)
    assert np.all(np.isnan(out))  # refused before the launch
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        ggnp.ragged_k_mm(x, b, np.array(sizes, np.int64))


def test_bad_sizes_of_a_core_descriptor_are_clamped_and_reported_by_check():
    # The library's own rule, for sizes the host does not read (the GPU
    # front ends'): here a descriptor built with core and run directly.
    rng = np.random.default_rng(11)
    workspace = ggnp.HostWorkspace()
    x = small_integers(rng, (10, 8), np.float16)
    w = weights(rng, 2, 8, 8, "nk", np.float16)

    def run(sizes):
        out = np.zeros((10, 8), np.float32)
        group_sizes = np.array(sizes, np.int32)
        views = (ggnp.operand(name, array) for name, array in
                 (("x", x), ("w", w), ("out", out), ("group_sizes", group_sizes)))
        workspace.run(core.ragged_m(*views))
        return out

    assert ggnp.check(workspace) == 0
    run([-1, 3])
    assert ggnp.check(workspace) == DeviceFlag.NEGATIVE_SIZE
    assert ggnp.check(workspace) == 0  # read and cleared
    out = run([5, 9])
    assert ggnp.check(workspace) == DeviceFlag.SIZES_EXCEED_ROWS
    # The second group is cut at M: rows 5..9.
    np.testing.assert_array_equal(out, expected_ragged_m(x, w, [5, 5], "nk", np.zeros((10, 8))))


def _ragged_m_args(**changes):
    rng = np.random.default_rng(12)
    args = dict(
        x=small_integers(rng, (12, 16), np.float16),
        w=weights(rng, 4, 16, 8, "nk", np.float16),
        group_sizes=np.array(SIZES, np.int32),
    )
    args.update(changes)
    return args


@pytest.mark.parametrize(
    "changes, error, names",
    [
        (dict(w=np.zeros((3, 8, 16), np.float16)), ValueError, "w: has 3 groups"),
        (dict(w=np.zeros((4, 8, 15), np.float16)), ValueError, "w: K = 15"),
        (dict(w=np.zeros((8, 16), np.float16)), ValueError, "w: expected [G, N, K]"),
        (dict(x=np.zeros((12, 16, 1), np.float16)), ValueError, "x: expected [M, K]"),
        (
            dict(x=np.zeros((16, 12), np.float16).T),
            ValueError,
            "x: the last dimension must be contiguous",
        ),
        (
            dict(group_sizes=np.array(SIZES, np.float32)),
            TypeError,
            "group_sizes: expected int32 or int64",
        ),
        (
            dict(group_sizes=np.zeros((0,), np.int32)),
            ValueError,
            "group_sizes: needs at least one group",
        ),
        (
            dict(group_sizes=np.array(SIZES * 2, np.int32)[::2]),
            ValueError,
            "group_sizes: must be contiguous",
        ),
        (dict(x=np.zeros((12, 16), np.int8)), TypeError, "x: dtype int8 is not supported"),
        (dict(out=np.zeros((12, 8), np.int8)), TypeError, "out: unsupported element type int8"),
        (dict(x=[[1.0]]), TypeError, "x: expected a numpy array"),
        (dict(w_layout="kk"), ValueError, "w_layout: expected 'nk' or 'kn'"),
        (dict(beta=1.0), ValueError, "beta: accumulating (beta != 0) needs out="),
        (dict(out=np.zeros((12, 9), np.float32)), ValueError, "out: expected [M, N] = [12, 8]"),
        (dict(bias=np.zeros((4, 9), np.float32)), ValueError, "bias: expected [G, N] = [4, 8]"),
        (
            dict(alpha=np.ones(3, np.float32)),
            ValueError,
            "alpha: expected a contiguous fp32 array [G]",
        ),
        (dict(alpha=np.ones(4, np.float64)), TypeError, "alpha: unsupported element type float64"),
        (
            dict(group_sizes=np.array([3, 0, 5, 5], np.int32)),
            ValueError,
            "group_sizes: the sizes sum to 13, past M = 12 (the rows of x)",
        ),
    ],
)
def test_bad_arguments_raise_naming_the_argument(changes, error, names):
    with pytest.raises(error) as raised:
        ggnp.grouped_mm(**_ragged_m_args(**changes))
    assert names in str(raised.value)


@pytest.mark.parametrize(
    "changes, names",
    [
        (dict(b=np.zeros((11, 8), np.float16)), "b: has 11 rows, but a has 12"),
        (dict(out=np.zeros((4, 16, 9), np.float32)), "out: expected [G, P, Q] = [4, 16, 8]"),
        (dict(a=np.zeros((12,), np.float16)), "a: expected [M, P]"),
    ],
)
def test_bad_ragged_k_arguments_raise_naming_the_argument(changes, names):
    args = dict(
        a=np.zeros((12, 16), np.float16),
        b=np.zeros((12, 8), np.float16),
        group_sizes=np.array(SIZES, np.int32),
    )
    args.update(changes)
    with pytest.raises(ValueError) as raised:
        ggnp.ragged_k_mm(**args)
    assert names in str(raised.value)


def test_library_rejections_carry_its_message_in_argument_names():
    # fp8 output is not an output format; the Python layer leaves formats to the library.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    with pytest.raises(GroupGemmError) as raised:
        ggnp.grouped_mm(**_ragged_m_args(), out_dtype=ml_dtypes.float8_e4m3fn)
    assert str(raised.value).startswith("INVALID_ARGUMENT: out")
    assert "desc->" not in str(raised.value)


def test_library_rejections_name_a_transposed_operand_as_read():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.zeros((16, 12), ml_dtypes.bfloat16).T  # [M, P] read as its transpose in place
    b = np.zeros((12, 8), np.float16)
    with pytest.raises(GroupGemmError, match=re.escape("a^T (bf16) x b (fp16): operands of")):
        ggnp.ragged_k_mm(a, b, np.array(SIZES, np.int32))


@pytest.mark.parametrize("product", ["grouped_mm", "ragged_k_mm"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_wide_float_operands_raise_suggesting_the_cast(product, dtype):
    first, second = ("x", "w") if product == "grouped_mm" else ("a", "b")
    args = _ragged_m_args() if product == "grouped_mm" else dict(
        a=np.zeros((12, 16), np.float16), b=np.zeros((12, 8), np.float16),
        group_sizes=np.array(SIZES, np.int32))
    args[first] = args[first].astype(dtype)
    args[second] = args[second].astype(dtype)
    with pytest.raises(TypeError) as raised:
        getattr(ggnp, product)(**args)
    message = str(raised.value)
    assert message.startswith("%s: dtype %s is not supported" % (first, np.dtype(dtype).name))
    assert "cast %s and %s to ml_dtypes.bfloat16 and pass out_dtype=np.float32" % (
        first, second) in message


def test_a_wide_float_weight_list_is_named():
    experts = [np.zeros((8, 16), np.float32)] * 4
    with pytest.raises(TypeError, match=re.escape("w[0]: dtype float32 is not supported")):
        ggnp.grouped_mm(**_ragged_m_args(w=experts))

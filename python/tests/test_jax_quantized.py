"""Quantized operands of groupgemm.jax.ragged_dot and ragged_dot_k, on the
CPU (the library's reference, through the CPU FFI handlers).

Each case quantizes with grouped_quantize and multiplies in one jitted
function, then checks both steps against fake_quant.py, the tests' float64
model of the formats: the quantized arrays, dequantized by the formats'
definitions, hold the values quantized within each format's error
(assert_quantizes), and the product is the float64 product of those
dequantized operands to within fp32 accumulation. Together: quantize ->
product computes the product of the values, so the scale layouts the
quantizer writes are those the product reads, in every format, rowwise and
columnwise. Inputs scale each row and column by its own power of two, so a
misplaced scale shows. Group sizes hold 0, 1, 31 and 33, all tokens in one
group, all groups empty, and sums below and at M; every size set runs the
one compiled function.
"""

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="jax is not installed")
import jax.numpy as jnp  # noqa: E402

import fake_quant  # noqa: E402
from groupgemm import NotSupported, core  # noqa: E402

ggj = pytest.importorskip("groupgemm.jax", reason="groupgemm.jax needs jax")
from test_jax import GPU, default_device_of_the_test, handlers, needs_gpu  # noqa: E402,F401

# Entries past the last group are undefined (XLA leaves those bytes as they
# were): fake_quant reads them, and makes them NaN.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

M, K, N, G = 72, 160, 48, 4  # K: 1x128 and 128x128 blocks end part-way
P, Q = 40, 24  # ragged-K's a [M, P], b [M, Q]
SIZE_SETS = {
    "0-1-31-33": [31, 0, 1, 33],  # sum 65 < M
    "one-group": [0, M, 0, 0],
    "all-empty": [0, 0, 0, 0],
    "full": [33, 1, 31, 7],
}
ALPHA = np.array([1.0, -2.0, 0.5, 3.0], np.float32)

# Quantized x quantized ragged-M pairs (lhs, rhs), then weight-only (bf16 lhs).
RAGGED_M_PAIRS = [
    ("fp8_e4m3_tensor", "fp8_e4m3_tensor"),
    ("fp8_e4m3_group", "fp8_e5m2_group"),
    ("fp8_e5m2_tensor", "fp8_e4m3_group"),
    ("fp8_e4m3_rowwise", "fp8_e4m3_rowwise"),
    ("fp8_e5m2_rowwise", "fp8_e4m3_rowwise"),
    ("fp8_e4m3_1x128", "fp8_e4m3_128x128"),
    ("fp8_e5m2_1x128", "fp8_e4m3_1x128"),
    ("mxfp8_e4m3", "mxfp8_e4m3"),
    ("mxfp8_e5m2", "mxfp4"),
    ("mxfp4", "mxfp4"),
    ("nvfp4_tensor", "nvfp4_group"),
    ("nvfp4_group", "nvfp4_tensor"),
    (None, "fp8_e4m3_tensor"),
    (None, "fp8_e5m2_group"),
    (None, "fp8_e4m3_rowwise"),
    (None, "mxfp8_e4m3"),
    (None, "mxfp4"),
    (None, "nvfp4_group"),
]
# ragged-K pairs (a, b), both columnwise copies.
RAGGED_K_PAIRS = [
    ("fp8_e4m3_tensor", "fp8_e5m2_tensor"),
    ("fp8_e4m3_group", "fp8_e4m3_group"),
    ("fp8_e4m3_rowwise", "fp8_e5m2_rowwise"),
    ("fp8_e4m3_1x128", "fp8_e5m2_1x128"),
    ("mxfp8_e4m3", "mxfp8_e5m2"),
    ("mxfp4", "mxfp4"),
    ("mxfp8_e4m3", "mxfp4"),
    ("nvfp4_tensor", "nvfp4_group"),
]


def test_no_x64():
    assert not jax.config.jax_enable_x64


def values(shape, seed, dtype=jnp.bfloat16):
    """Normal values, each row and each column scaled by its own power of two."""
    rng = np.random.default_rng(seed)
    row_exp = rng.integers(-4, 5, shape[:-1] + (1,))
    col_exp = rng.integers(-4, 5, shape[:-2] + (1, shape[-1]))
    return jnp.asarray(rng.standard_normal(shape) * np.exp2(row_exp + col_exp), dtype)


def f64(a):
    return np.asarray(jnp.asarray(a, jnp.float32), np.float64)


def _bits(a):
    """An array as fake_quant reads it: fp8 as its bytes, the rest as itself."""
    a = np.asarray(a)
    return a.view(np.uint8) if a.dtype.itemsize == 1 else a


def dequantized(q, sizes=None):
    """(values, regions) of a QuantizedTensor: fake_quant.dequantize."""
    optional = lambda a: None if a is None else _bits(a)  # noqa: E731
    return fake_quant.dequantize(q.format, _bits(q.data), optional(q.block_scales),
                                 optional(q.scale), sizes, q.columnwise)


def model_of(q, sizes=None):
    return dequantized(q, sizes)[0]


def assert_product(out, want, magnitude, depth, fp8_cores=False):
    """out: the model's product within fp32 accumulation over `depth`
    products (fp8_cores: fp8 tensor cores' accumulation, fake_quant);
    zeros where the model has none (rows past the groups)."""
    out = np.asarray(out, np.float64)
    fake_quant.assert_fp32_accumulation(out, want, magnitude, depth, fp8_cores=fp8_cores)
    np.testing.assert_array_equal(out[np.isnan(want)], 0.0)


def test_quantized_tensor_is_a_pytree_with_static_format():
    w = values((G, N, K), seed=0)
    q = jax.jit(lambda a: ggj.grouped_quantize(a, rowwise="nvfp4_group",
                                               columnwise="mxfp8_e5m2"))(w)
    assert (q.rowwise.format, q.rowwise.columnwise) == ("nvfp4_group", False)
    assert (q.columnwise.format, q.columnwise.columnwise) == ("mxfp8_e5m2", True)
    leaves, tree = jax.tree_util.tree_flatten(q.rowwise)
    assert [a.shape for a in leaves] == [(G, N, K // 2), (G, N, K // 16), (G,)]
    assert jax.tree_util.tree_unflatten(tree, leaves) == q.rowwise


# ---- the model's reading of every format ------------------------------------------


@pytest.mark.parametrize("fmt", sorted(core.QUANTIZE_FORMATS))
def test_model_dequantizes_what_grouped_quantize_wrote(fmt):
    """Rowwise and columnwise copies, ragged and stacked, each within its
    format's error of the values: the model reads the scales where the
    quantizer writes them."""
    w = values((G, N, K), seed=1)
    q = jax.jit(lambda a: ggj.grouped_quantize(a, rowwise=fmt, columnwise=fmt))(w)
    for copy in (q.rowwise, q.columnwise):
        fake_quant.assert_quantizes(fmt, f64(w), *dequantized(copy))
    if fmt.endswith("128x128"):
        return
    x = values((M, K), seed=2)
    quantize = jax.jit(lambda a, s: ggj.grouped_quantize(a, s, rowwise=fmt, columnwise=fmt))
    for sizes in SIZE_SETS.values():
        q = quantize(x, jnp.asarray(sizes, jnp.int32))
        for copy in (q.rowwise, q.columnwise):
            fake_quant.assert_quantizes(fmt, f64(x), *dequantized(copy, sizes))


# ---- ragged-M ----------------------------------------------------------------------


def _weights_and_copy(rhs_layout):
    """The weights in rhs_layout, and the copy whose blocks run along K."""
    if rhs_layout == "nk":
        return values((G, N, K), seed=3), "rowwise"
    return values((G, K, N), seed=3), "columnwise"


def _quantized_ragged_m(lhs_fmt, rhs_fmt, rhs_layout, copy, lhs_dtype=jnp.bfloat16):
    """jit(x, w, sizes) -> (out fp32, lhs operand, rhs operand), quantizing in the same function."""

    def run(x, w, sizes):
        lhs = x.astype(lhs_dtype)
        if lhs_fmt is not None:
            lhs = ggj.grouped_quantize(x, sizes, rowwise=lhs_fmt).rowwise
        rhs = getattr(ggj.grouped_quantize(w, **{copy: rhs_fmt}), copy)
        out = ggj.ragged_dot(lhs, rhs, sizes, preferred_element_type=jnp.float32,
                             rhs_layout=rhs_layout)
        return out, lhs, rhs

    return jax.jit(run)


def _check_ragged_m(run, rhs_layout, lhs_fmt):
    x = values((M, K), seed=4)
    w, _ = _weights_and_copy(rhs_layout)
    for sizes in SIZE_SETS.values():
        out, lhs, rhs = run(x, w, jnp.asarray(sizes, jnp.int32))
        lhs_values = f64(lhs) if lhs_fmt is None else model_of(lhs, sizes)
        rhs_values = model_of(rhs)
        assert_product(out, fake_quant.ragged_m(lhs_values, rhs_values, sizes, rhs_layout),
                       fake_quant.ragged_m(np.abs(lhs_values), np.abs(rhs_values), sizes,
                                           rhs_layout), K)


@pytest.mark.parametrize("rhs_layout", ["kn", "nk"])
@pytest.mark.parametrize("lhs_fmt,rhs_fmt", RAGGED_M_PAIRS)
def test_ragged_m(lhs_fmt, rhs_fmt, rhs_layout):
    _, copy = _weights_and_copy(rhs_layout)
    _check_ragged_m(_quantized_ragged_m(lhs_fmt, rhs_fmt, rhs_layout, copy), rhs_layout, lhs_fmt)


@pytest.mark.parametrize("rhs_fmt", ["fp8_e4m3_tensor", "fp8_e5m2_group", "fp8_e4m3_128x128"])
def test_ragged_m_formats_without_blocks_along_k_take_either_copy(rhs_fmt):
    """No block scales, or 128x128 tiles: the copy blocked across K serves too."""
    lhs_fmt = "fp8_e4m3_1x128" if rhs_fmt.endswith("128x128") else "fp8_e4m3_tensor"
    for rhs_layout, copy in (("kn", "rowwise"), ("nk", "columnwise")):
        _check_ragged_m(_quantized_ragged_m(lhs_fmt, rhs_fmt, rhs_layout, copy), rhs_layout,
                        lhs_fmt)


def test_ragged_m_weight_only_float16():
    _check_ragged_m(_quantized_ragged_m(None, "nvfp4_tensor", "nk", "rowwise", jnp.float16),
                    "nk", None)


def test_ragged_m_no_rows():
    x, sizes = values((0, K), seed=5), jnp.zeros((G,), jnp.int32)
    for lhs_fmt, rhs_fmt in (("mxfp4", "mxfp4"), (None, "fp8_e4m3_rowwise")):
        out, _, _ = _quantized_ragged_m(lhs_fmt, rhs_fmt, "nk", "rowwise")(
            x, values((G, N, K), seed=6), sizes)
        assert out.shape == (0, N)


# ---- ragged-K ----------------------------------------------------------------------


def _quantized_ragged_k(a_fmt, b_fmt, copy="columnwise"):
    def run(a, b, sizes):
        qa = getattr(ggj.grouped_quantize(a, sizes, **{copy: a_fmt}), copy)
        qb = getattr(ggj.grouped_quantize(b, sizes, **{copy: b_fmt}), copy)
        return ggj.ragged_dot_k(qa, qb, sizes, preferred_element_type=jnp.float32), qa, qb

    return jax.jit(run)


def _check_ragged_k(run):
    a, b = values((M, P), seed=7), values((M, Q), seed=8)
    for sizes in SIZE_SETS.values():
        out, qa, qb = run(a, b, jnp.asarray(sizes, jnp.int32))
        a_values, b_values = model_of(qa, sizes), model_of(qb, sizes)
        assert out.shape == (G, P, Q)
        assert_product(out, fake_quant.ragged_k(a_values, b_values, sizes),
                       fake_quant.ragged_k(np.abs(a_values), np.abs(b_values), sizes), M)


@pytest.mark.parametrize("a_fmt,b_fmt", RAGGED_K_PAIRS)
def test_ragged_k(a_fmt, b_fmt):
    _check_ragged_k(_quantized_ragged_k(a_fmt, b_fmt))


def test_ragged_k_formats_without_blocks_take_the_rowwise_copy():
    _check_ragged_k(_quantized_ragged_k("fp8_e4m3_group", "fp8_e5m2_tensor", "rowwise"))


def test_ragged_k_no_rows():
    sizes = jnp.zeros((G,), jnp.int32)
    out, _, _ = _quantized_ragged_k("mxfp8_e4m3", "mxfp8_e4m3")(
        values((0, P), seed=9), values((0, Q), seed=10), sizes)
    np.testing.assert_array_equal(np.asarray(out), np.zeros((G, P, Q)))


# ---- per-group alpha ------------------------------------------------------------------


def test_per_group_alpha_quantized():
    x, w = values((M, K), seed=11), values((G, N, K), seed=12)
    sizes = SIZE_SETS["full"]
    alpha = jnp.asarray(ALPHA)

    @jax.jit
    def run(x, w, s, alpha):
        qx = ggj.grouped_quantize(x, s, rowwise="mxfp8_e4m3", columnwise="mxfp8_e4m3")
        qw = ggj.grouped_quantize(w, rowwise="mxfp8_e4m3")
        out = ggj.ragged_dot(qx.rowwise, qw.rowwise, s, preferred_element_type=jnp.float32,
                             rhs_layout="nk", alpha=alpha)
        wgrad = ggj.ragged_dot_k(qx.columnwise, qx.columnwise, s, alpha=alpha,
                                 preferred_element_type=jnp.float32)
        return out, wgrad, qx, qw

    out, wgrad, qx, qw = run(x, w, jnp.asarray(sizes, jnp.int32), alpha)
    lhs, rhs = model_of(qx.rowwise, sizes), model_of(qw.rowwise)
    assert_product(out, fake_quant.ragged_m(lhs, rhs, sizes, "nk", ALPHA),
                   fake_quant.ragged_m(np.abs(lhs), np.abs(rhs), sizes, "nk", np.abs(ALPHA)), K)
    tokens = model_of(qx.columnwise, sizes)
    assert_product(wgrad, fake_quant.ragged_k(tokens, tokens, sizes, ALPHA),
                   fake_quant.ragged_k(np.abs(tokens), np.abs(tokens), sizes, np.abs(ALPHA)), M)


def test_per_group_alpha_16_bit_with_gradients():
    """alpha_g scales the product and every gradient of group g (small integers: exact)."""
    rng = np.random.default_rng(13)
    x = jnp.asarray(rng.integers(-2, 3, (M, K)), jnp.bfloat16)
    w = jnp.asarray(rng.integers(-2, 3, (G, K, N)), jnp.bfloat16)
    cot = rng.integers(-1, 2, (M, N)).astype(np.float64)
    sizes = SIZE_SETS["0-1-31-33"]
    s, alpha = jnp.asarray(sizes, jnp.int32), jnp.asarray(ALPHA)

    def loss(x, w):
        out = ggj.ragged_dot(x, w, s, preferred_element_type=jnp.float32, alpha=alpha)
        return (out * jnp.asarray(cot, jnp.float32)).sum(), out

    (_, out), (dx, dw) = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))(x, w)
    zero_past = lambda a: np.nan_to_num(a, nan=0.0)  # noqa: E731  (rows past the groups)
    np.testing.assert_array_equal(np.asarray(out), zero_past(fake_quant.ragged_m(
        f64(x), f64(w), sizes, "kn", ALPHA)))
    np.testing.assert_array_equal(f64(dx), zero_past(fake_quant.ragged_m(cot, f64(w), sizes, "nk",
                                                                         ALPHA)))
    np.testing.assert_array_equal(f64(dw), fake_quant.ragged_k(f64(x), cot, sizes, ALPHA))
    a, b = jnp.asarray(rng.integers(-2, 3, (M, P)), jnp.bfloat16), x[:, :Q]
    dk = rng.integers(-1, 2, (G, P, Q)).astype(np.float64)
    da, db = jax.grad(lambda a, b: (ggj.ragged_dot_k(a, b, s, alpha=alpha,
                                                     preferred_element_type=jnp.float32)
                                    * jnp.asarray(dk, jnp.float32)).sum(), argnums=(0, 1))(a, b)
    # da[g rows] = alpha_g * b[g rows] @ dk[g]^T; db[g rows] = alpha_g * a[g rows] @ dk[g].
    np.testing.assert_array_equal(f64(da), zero_past(fake_quant.ragged_m(f64(b), dk, sizes, "nk",
                                                                         ALPHA)))
    np.testing.assert_array_equal(f64(db), zero_past(fake_quant.ragged_m(f64(a), dk, sizes, "kn",
                                                                         ALPHA)))


# ---- gradients --------------------------------------------------------------------------


def _operands(lhs_fmt="mxfp8_e4m3", rhs_fmt="mxfp8_e4m3"):
    x, w = values((M, K), seed=14), values((G, N, K), seed=15)
    s = jnp.asarray(SIZE_SETS["0-1-31-33"], jnp.int32)
    lhs = x if lhs_fmt is None else ggj.grouped_quantize(x, s, rowwise=lhs_fmt).rowwise
    return lhs, ggj.grouped_quantize(w, rowwise=rhs_fmt).rowwise, s


def test_bias_gradient_of_a_quantized_product():
    lhs, rhs, s = _operands()
    bias = jnp.zeros((G, N), jnp.float32)
    cot = np.random.default_rng(16).integers(-1, 2, (M, N)).astype(np.float32)
    dbias = jax.jit(jax.grad(lambda b: (ggj.ragged_dot(
        lhs, rhs, s, rhs_layout="nk", bias=b, preferred_element_type=jnp.float32) * cot).sum()))(
            bias)
    starts = np.concatenate([[0], np.cumsum(SIZE_SETS["0-1-31-33"])])
    expected = np.stack([cot[starts[g]:starts[g + 1]].sum(0) for g in range(G)])
    np.testing.assert_array_equal(np.asarray(dbias), expected)


def test_gradients_not_computed_are_refused_by_name():
    lhs, rhs, s = _operands()
    product = lambda a, b, alpha=1.0: ggj.ragged_dot(  # noqa: E731
        a, b, s, rhs_layout="nk", alpha=alpha, preferred_element_type=jnp.float32).sum()
    with pytest.raises(TypeError, match=r"rhs: a quantized operand is a constant"):
        jax.jit(jax.grad(lambda data: product(lhs, core.QuantizedTensor(
            data, rhs.block_scales, rhs.scale, rhs.format, rhs.columnwise))))(rhs.data)
    x, rhs, _ = _operands(lhs_fmt=None, rhs_fmt="nvfp4_group")
    with pytest.raises(TypeError, match=r"lhs: a product with a quantized rhs is not "
                                        r"differentiable in lhs"):
        jax.jit(jax.grad(lambda a: product(a, rhs)))(x)
    with pytest.raises(TypeError, match=r"alpha: a per-group alpha array is not differentiated"):
        jax.grad(lambda alpha: product(x, rhs, alpha))(jnp.asarray(ALPHA))
    q = ggj.grouped_quantize(x, s, columnwise="fp8_e4m3_tensor").columnwise
    with pytest.raises(TypeError, match=r"b: a quantized operand is a constant"):
        jax.grad(lambda scale: ggj.ragged_dot_k(q, core.QuantizedTensor(
            q.data, None, scale, q.format, True), s).astype(jnp.float32).sum())(q.scale)


# ---- bad input, at trace time -------------------------------------------------------------


def _spec(shape, dtype=jnp.bfloat16):
    return jax.ShapeDtypeStruct(shape, dtype)


def _quantized_spec(fmt, shape, columnwise=False, sizes=True, **replaced):
    """The QuantizedTensor of ShapeDtypeStructs that grouped_quantize
    returns, with the fields in `replaced` replaced."""
    groups = G if sizes else shape[0]
    arrays = core.quantize_arrays(fmt, shape, groups, columnwise)
    specs = [None if a is None else _spec(a.shape, getattr(jnp, a.dtype)) for a in arrays]
    fields = dict(zip(("data", "block_scales", "scale"), specs), format=fmt,
                  columnwise=columnwise)
    fields.update(replaced)
    return core.QuantizedTensor(**fields)


SIZES_SPEC = _spec((G,), jnp.int32)


@pytest.mark.parametrize(
    "lhs,rhs,kwargs,error,match",
    [
        (_quantized_spec("mxfp8_e4m3", (M, K)),
         _quantized_spec("nvfp4_group", (G, N, K), sizes=False), {}, NotSupported,
         r"lhs \(mxfp8 e4m3\) x rhs \(nvfp4 \(group scales\)\): operands of different formats"),
        (_quantized_spec("mxfp8_e4m3", (M, K)), _spec((G, N, K)), {}, NotSupported,
         r"a quantized lhs needs a quantized rhs"),
        (_quantized_spec("mxfp8_e4m3", (M, K), block_scales=_spec((M, K // 32 + 1), jnp.uint8)),
         _quantized_spec("mxfp8_e4m3", (G, N, K), sizes=False), {}, ValueError,
         r"lhs\.block_scales: expected \[72, 5\]"),
        (_quantized_spec("mxfp8_e4m3", (M, K), block_scales=_spec((M, K // 32), jnp.float32)),
         _quantized_spec("mxfp8_e4m3", (G, N, K), sizes=False), {}, TypeError,
         r"lhs\.block_scales: mxfp8_e4m3 block scales are uint8, got float32"),
        (_quantized_spec("fp8_e4m3_group", (M, K)),
         _quantized_spec("fp8_e4m3_group", (G, N, K), sizes=False, scale=_spec((1,), jnp.float32)),
         {}, ValueError, r"rhs\.scale: expected \[4\]"),
        (_quantized_spec("fp8_e4m3_tensor", (M, K), data=_spec((M, K), jnp.float8_e5m2)),
         _quantized_spec("fp8_e4m3_tensor", (G, N, K), sizes=False), {}, TypeError,
         r"lhs\.data: fp8_e4m3_tensor data is float8_e4m3fn, got float8_e5m2"),
        (_quantized_spec("mxfp8_e4m3", (M, K)),
         _quantized_spec("mxfp8_e4m3", (G, K, N), sizes=False), {"rhs_layout": "kn"}, ValueError,
         r"rhs: the mxfp8_e4m3 block scales of its rowwise copy run across the contraction"),
        (_quantized_spec("mxfp8_e4m3", (M, K), columnwise=True),
         _quantized_spec("mxfp8_e4m3", (G, N, K), sizes=False), {}, ValueError,
         r"lhs: the rows of x are its tokens"),
        (_spec((M, K)), _quantized_spec("mxfp8_e4m3", (G, N, K + 32), sizes=False), {},
         ValueError, r"rhs: K = 192"),
        (_spec((M, K)), _quantized_spec("mxfp8_e4m3", (G, N, K), sizes=False),
         {"alpha": _spec((G + 1,), jnp.float32)}, ValueError, r"alpha: expected a contiguous fp32 "
                                                               r"array \[G\] with G = 4"),
        (_spec((M, K), jnp.float32), _quantized_spec("mxfp8_e4m3", (G, N, K), sizes=False), {},
         TypeError, r"lhs: dtype float32 is not supported"),
        (ggj.Quantized(None, None, None), _spec((G, N, K)), {}, TypeError,
         r"lhs: expected an array or a QuantizedTensor, got Quantized \(grouped_quantize returns "
         r"both copies"),
    ],
)
def test_ragged_dot_errors_at_trace_time(lhs, rhs, kwargs, error, match):
    kwargs.setdefault("rhs_layout", "nk")
    fn = jax.jit(lambda a, b, s: ggj.ragged_dot(a, b, s, **kwargs))
    with pytest.raises(error, match=match):
        jax.eval_shape(fn, lhs, rhs, SIZES_SPEC)


def test_ragged_dot_k_errors_at_trace_time():
    fn = jax.jit(lambda a, b, s: ggj.ragged_dot_k(a, b, s))
    with pytest.raises(ValueError, match=r"a: the mxfp8_e4m3 block scales of its rowwise copy run "
                                         r"across the contraction"):
        jax.eval_shape(fn, _quantized_spec("mxfp8_e4m3", (M, P)),
                       _quantized_spec("mxfp8_e4m3", (M, Q), columnwise=True), SIZES_SPEC)
    with pytest.raises(NotSupported, match=r"weight-only \(16-bit lhs, quantized rhs\) is for "
                                           r"ragged-M"):
        jax.eval_shape(fn, _spec((M, P)), _quantized_spec("mxfp8_e4m3", (M, Q), columnwise=True),
                       SIZES_SPEC)
    with pytest.raises(ValueError, match=r"b: has 71 rows, but a has 72"):
        jax.eval_shape(fn, _quantized_spec("mxfp8_e4m3", (M, P), columnwise=True),
                       _quantized_spec("mxfp8_e4m3", (M - 1, Q), columnwise=True), SIZES_SPEC)


def lowered(platform, fn, *specs):
    """fn jitted and lowered for `platform` ("cpu" or "cuda"): where a
    computation runs is decided then, from where its inputs are placed. No
    GPU is needed to lower for one."""
    return jax.jit(fn).trace(*specs).lower(lowering_platforms=(platform,))


def test_a_gpu_refuses_quantized_products_when_lowered_for_it():
    """No GPU path runs fp8 1x128 x 128x128 with weights [G, K, N] (fp8
    wgmma reads K-major weights, and the portable path has no promotion
    every 128 of K): lowered for a GPU, NotSupported, naming both paths,
    no fallback; lowered for the CPU, the reference runs it."""
    specs = (_quantized_spec("fp8_e4m3_1x128", (M, K)),
             _quantized_spec("fp8_e4m3_128x128", (G, K, N), sizes=False), SIZES_SPEC)
    fprop = lambda a, b, s: ggj.ragged_dot(a, b, s)  # noqa: E731
    jax.eval_shape(fprop, *specs)  # tracing decides nothing
    lowered("cpu", fprop, *specs)
    with pytest.raises(NotSupported, match=r"no GPU path runs this product: portable: .*; sm90: "
                                           r".*rhs must be GG_LAYOUT_T"):
        lowered("cuda", fprop, *specs)


@needs_gpu
def test_where_the_inputs_are_placed_decides_not_the_default_device():
    """The default device a GPU, inputs on the CPU: the product that no GPU
    path runs is not refused, and runs on the CPU."""
    cpu = jax.devices("cpu")[0]
    sizes = jax.device_put(jnp.asarray(SIZE_SETS["full"], jnp.int32), cpu)
    rng = np.random.default_rng(5)
    x, w = (jax.device_put(jnp.asarray(rng.standard_normal(shape), jnp.bfloat16), cpu)
            for shape in ((M, K), (G, K, N)))
    with jax.default_device(GPU):
        qx = ggj.grouped_quantize(x, sizes, rowwise="fp8_e4m3_1x128").rowwise
        qw = ggj.grouped_quantize(w, rowwise="fp8_e4m3_128x128").rowwise
        out = jax.jit(lambda u, v, s: ggj.ragged_dot(u, v, s))(qx, qw, sizes)
    assert out.devices() == {cpu} and out.shape == (M, N)


def test_a_gpu_accepts_what_its_paths_run():
    specs = (_quantized_spec("fp8_e4m3_tensor", (M, K)),
             _quantized_spec("fp8_e4m3_tensor", (G, N, K), sizes=False), SIZES_SPEC)
    for platform in ("cpu", "cuda"):
        lowered(platform, lambda a, b, s: ggj.ragged_dot(a, b, s, rhs_layout="nk"), *specs)

"""groupgemm.torch.grouped_mm and ragged_k_mm on quantized operands, on the
CPU (the library's reference), against the fake-quant model of
fake_quant.py: each operand is quantized with grouped_quantize, dequantized
here in float64 from its own arrays, and multiplied in float64. The product
must match that model within an fp32 accumulation's rounding, and the
dequantized values the original inputs within the format's error: together
they show that the quantizer writes its scales where the products read
them, for rowwise copies (x, "nk" weights) and columnwise ones ("kn"
weights, the token operands of ragged-K) alike.
"""

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import fake_quant as fq  # noqa: E402
import groupgemm.torch as ggt  # noqa: E402
from groupgemm import NotSupported  # noqa: E402

pytestmark = pytest.mark.usefixtures("lib")

M, K, N = 72, 160, 48  # K: one full and one partial 1x128 block
P, Q = 48, 32
SIZES = {
    "edges": [1, 0, 31, 33],  # an empty group, partial blocks, sum 65 < M
    "one_group": [0, 0, M, 0],
    "all_empty": [0, 0, 0, 0],
}
G = 4
ALPHAS = [0.5, 2.0, -1.0, 1.0]

# (x format, w format): one recipe, element types mixed where it allows; None: bf16 x.
RAGGED_M_PAIRS = [
    ("fp8_e4m3_tensor", "fp8_e4m3_tensor"),
    ("fp8_e4m3_group", "fp8_e5m2_group"),
    ("fp8_e4m3_rowwise", "fp8_e4m3_rowwise"),
    ("fp8_e4m3_1x128", "fp8_e4m3_128x128"),
    ("mxfp8_e4m3", "mxfp8_e5m2"),
    ("mxfp4", "mxfp4"),
    ("mxfp8_e4m3", "mxfp4"),
    ("nvfp4_tensor", "nvfp4_group"),
    (None, "fp8_e4m3_tensor"),
    (None, "fp8_e5m2_rowwise"),
    (None, "mxfp8_e4m3"),
    (None, "mxfp4"),
    (None, "nvfp4_group"),
]
RAGGED_K_PAIRS = [
    ("fp8_e4m3_tensor", "fp8_e5m2_tensor"),
    ("fp8_e4m3_group", "fp8_e4m3_group"),
    ("fp8_e4m3_rowwise", "fp8_e5m2_rowwise"),
    ("fp8_e4m3_1x128", "fp8_e5m2_1x128"),
    ("mxfp8_e4m3", "mxfp8_e5m2"),
    ("mxfp4", "mxfp4"),
    ("nvfp4_group", "nvfp4_tensor"),
]


def _input(shape, seed):
    """bf16 values whose rows span 2^-6 .. 2^6, so that a scale read from
    the wrong block is off by far more than the format's error."""
    generator = torch.Generator().manual_seed(seed)
    rows = torch.exp2(torch.randint(-6, 7, shape[:-1] + (1,), generator=generator).float())
    return (torch.randn(shape, generator=generator) * rows).bfloat16()


def _sizes(sizes):
    return torch.tensor(sizes, dtype=torch.int32)


def dequantized(q, sizes, original):
    """q's values in float64 (fake_quant's reading of its arrays), checked
    against the tensor it was quantized from."""
    values, regions = fq.dequantize(
        q.format,
        q.data.view(torch.uint8).numpy(),
        None if q.block_scales is None else q.block_scales.numpy(),
        None if q.scale is None else q.scale.numpy(),
        sizes,
        q.columnwise,
    )
    fq.assert_quantizes(q.format, original.double().numpy(), values, regions)
    return values


def _operand(tensor, fmt, sizes, columnwise):
    """(operand, its float64 values): tensor itself without a format, else
    its rowwise or columnwise copy."""
    if fmt is None:
        return tensor, tensor.double().numpy()
    group_sizes = None if sizes is None else _sizes(sizes)
    q = ggt.grouped_quantize(
        tensor, group_sizes, **{"columnwise" if columnwise else "rowwise": fmt}
    )
    q = q.columnwise if columnwise else q.rowwise
    return q, dequantized(q, sizes, tensor)


@pytest.mark.parametrize("sizes", list(SIZES))
@pytest.mark.parametrize("w_layout", ["nk", "kn"])
@pytest.mark.parametrize("x_fmt, w_fmt", RAGGED_M_PAIRS)
def test_ragged_m(x_fmt, w_fmt, w_layout, sizes):
    sizes = SIZES[sizes]
    x, x_values = _operand(_input((M, K), 1), x_fmt, sizes, columnwise=False)
    # "kn" reads the columnwise copy of [G, K, N] (dgrad's use of [G, N, K] weights).
    w_shape = (G, N, K) if w_layout == "nk" else (G, K, N)
    w, w_values = _operand(_input(w_shape, 2), w_fmt, None, columnwise=w_layout == "kn")
    # A per-group alpha with "kn", a host one with "nk".
    alpha = torch.tensor(ALPHAS) if w_layout == "kn" else 2.0
    y = torch.full((M, N), 7.0)  # rows past the groups must keep it
    ggt.grouped_mm(x, w, _sizes(sizes), w_layout=w_layout, alpha=alpha, out=y)
    alphas = np.array(ALPHAS) if w_layout == "kn" else 2.0
    want = fq.ragged_m(x_values, w_values, sizes, w_layout, alphas)
    magnitude = fq.ragged_m(np.abs(x_values), np.abs(w_values), sizes, w_layout, np.abs(alphas))
    fq.assert_fp32_accumulation(y.numpy(), want, magnitude, K)
    assert torch.all(y[sum(sizes) :] == 7.0)


def test_default_result_dtypes():
    sizes = _sizes(SIZES["edges"])
    x = _input((M, K), 30)
    q = ggt.grouped_quantize(x, sizes, rowwise="fp8_e4m3_tensor", columnwise="fp8_e4m3_tensor")
    w = ggt.grouped_quantize(_input((G, N, K), 31), rowwise="fp8_e4m3_tensor").rowwise
    assert ggt.grouped_mm(q.rowwise, w, sizes).dtype == torch.float32
    assert ggt.grouped_mm(x, w, sizes).dtype == torch.bfloat16  # weight-only: x's
    assert ggt.ragged_k_mm(q.columnwise, q.columnwise, sizes).dtype == torch.float32


@pytest.mark.parametrize("sizes", list(SIZES))
@pytest.mark.parametrize("a_fmt, b_fmt", RAGGED_K_PAIRS)
def test_ragged_k(a_fmt, b_fmt, sizes):
    sizes = SIZES[sizes]
    a, a_values = _operand(_input((M, P), 3), a_fmt, sizes, columnwise=True)
    b, b_values = _operand(_input((M, Q), 4), b_fmt, sizes, columnwise=True)
    out = ggt.ragged_k_mm(a, b, _sizes(sizes), alpha=torch.tensor(ALPHAS))
    assert out.dtype == torch.float32 and out.shape == (G, P, Q)
    want = fq.ragged_k(a_values, b_values, sizes, np.array(ALPHAS))
    magnitude = fq.ragged_k(np.abs(a_values), np.abs(b_values), sizes, np.abs(ALPHAS))
    fq.assert_fp32_accumulation(out.numpy(), want, magnitude, M)


def test_ragged_k_reads_rowwise_copies_of_formats_without_blocks():
    # A tensor or group scale is one factor per group of tokens whichever
    # way the data is stored.
    sizes = SIZES["edges"]
    a, a_values = _operand(_input((M, P), 5), "fp8_e4m3_group", sizes, columnwise=False)
    b, b_values = _operand(_input((M, Q), 6), "fp8_e5m2_tensor", sizes, columnwise=True)
    out = ggt.ragged_k_mm(a, b, _sizes(sizes), out_dtype=torch.float32)
    want = fq.ragged_k(a_values, b_values, sizes)
    magnitude = fq.ragged_k(np.abs(a_values), np.abs(b_values), sizes)
    fq.assert_fp32_accumulation(out.numpy(), want, magnitude, M)


def test_out_forms_accumulate_quantized_products():
    sizes = SIZES["edges"]
    fmt = "mxfp8_e4m3"
    x, x_values = _operand(_input((M, K), 7), fmt, sizes, columnwise=False)
    w, w_values = _operand(_input((G, N, K), 8), fmt, None, columnwise=False)
    start = _input((M, N), 9).float()
    y = start.clone()
    ggt.grouped_mm(x, w, _sizes(sizes), beta=1.0, out=y)
    want = fq.ragged_m(x_values, w_values, sizes, "nk") + start.double().numpy()
    magnitude = fq.ragged_m(np.abs(x_values), np.abs(w_values), sizes, "nk") + start.abs().numpy()
    fq.assert_fp32_accumulation(y.numpy(), want, magnitude, K + 1)
    assert torch.equal(y[sum(sizes):], start[sum(sizes):])  # rows past the groups untouched

    a, a_values = _operand(_input((M, P), 10), fmt, sizes, columnwise=True)
    main_grad = torch.ones(G, P, P)
    ggt.ragged_k_mm(a, a, _sizes(sizes), beta=1.0, out=main_grad)
    want = fq.ragged_k(a_values, a_values, sizes) + 1
    magnitude = fq.ragged_k(np.abs(a_values), np.abs(a_values), sizes) + 1
    fq.assert_fp32_accumulation(main_grad.numpy(), want, magnitude, M + 1)


@pytest.mark.parametrize("fmt", ["nvfp4_group", "fp8_e4m3_rowwise"])
def test_compiled_quantize_and_products_match_eager(fmt):
    sizes = _sizes(SIZES["edges"])

    def step(x, w, sizes):
        qx = ggt.grouped_quantize(x, sizes, rowwise=fmt, columnwise=fmt)
        qw = ggt.grouped_quantize(w, rowwise=fmt, columnwise=fmt)
        fprop = ggt.grouped_mm(qx.rowwise, qw.rowwise, sizes, out_dtype=torch.bfloat16)
        dgrad = ggt.grouped_mm(fprop, qw.columnwise, sizes, w_layout="kn")  # weight-only
        wgrad = ggt.ragged_k_mm(qx.columnwise, qx.columnwise, sizes, alpha=torch.tensor(ALPHAS))
        return fprop, dgrad, wgrad

    x, w = _input((M, K), 11), _input((G, N, K), 12)
    eager = step(x, w, sizes)
    compiled = torch.compile(step, fullgraph=True)(x, w, sizes)
    rows = sum(SIZES["edges"])
    torch.testing.assert_close(compiled[0][:rows], eager[0][:rows], rtol=0, atol=0)
    torch.testing.assert_close(compiled[1][:rows], eager[1][:rows], rtol=0, atol=0)
    torch.testing.assert_close(compiled[2], eager[2], rtol=0, atol=0)


def test_opcheck_with_quantized_operands():
    """torch's checks of the registrations (fake kernels against real ones)
    with quantized operands' parts and a per-group alpha."""
    sizes = _sizes([3, 0, 5, 12])
    qx = ggt.grouped_quantize(_input((20, 64), 13), sizes, rowwise="nvfp4_group").rowwise
    qw = ggt.grouped_quantize(_input((G, 16, 64), 14), columnwise="mxfp8_e4m3").columnwise
    qa = ggt.grouped_quantize(_input((20, 32), 15), sizes, columnwise="mxfp4").columnwise

    def parts(q):
        return q.data, q.block_scales, q.scale, q.format, q.columnwise

    ops = torch.ops.groupgemm
    weights = ggt.grouped_quantize(_input((G, 16, 64), 16), rowwise="nvfp4_tensor").rowwise
    torch.library.opcheck(
        ops.grouped_mm.default,
        (*parts(qx), *parts(weights), sizes, "nk", None, None, 1.0, torch.tensor(ALPHAS)),
    )
    x = _input((20, 16), 17)
    # torch's schema check multiplies the arguments, which fp8 tensors cannot on the CPU.
    torch.library.opcheck(
        ops.grouped_mm.default,
        (x, None, None, None, False, *parts(qw), sizes, "kn", torch.bfloat16, None, 1.0, None),
        test_utils=("test_faketensor", "test_autograd_registration", "test_aot_dispatch_dynamic"),
    )
    torch.library.opcheck(
        ops.ragged_k_mm.default, (*parts(qa), *parts(qa), sizes, None, 2.0, None)
    )


# ---- bad input ----------------------------------------------------------------


def _bad_cases():
    sizes = _sizes(SIZES["edges"])
    x = _input((M, K), 20)
    q = ggt.grouped_quantize(x, sizes, rowwise="mxfp8_e4m3", columnwise="mxfp8_e4m3")
    qx = q.rowwise
    weights = _input((G, N, K), 21)
    qw = ggt.grouped_quantize(weights, rowwise="mxfp8_e4m3", columnwise="mxfp8_e4m3")
    nvfp4_w = ggt.grouped_quantize(weights, rowwise="nvfp4_group").rowwise
    e5m2_bits = qx.data.view(torch.float8_e5m2)
    float_scales = qw.rowwise.block_scales.float()
    mm = ggt.grouped_mm
    return sizes, [
        (
            "mismatched formats",
            lambda: mm(qx, nvfp4_w, sizes),
            NotSupported,
            "x (mxfp8 e4m3) x w (nvfp4",
        ),
        ("a quantized x, bf16 w", lambda: mm(qx, weights, sizes), NotSupported, "x (mxfp8 e4m3)"),
        (
            "weight-only in ragged-K",
            lambda: ggt.ragged_k_mm(x, q.columnwise, sizes),
            NotSupported,
            "weight-only (16-bit lhs, quantized rhs) is for ragged-M",
        ),
        (
            "block scales of a wrong shape",
            lambda: mm(dataclasses.replace(qx, block_scales=qx.block_scales[:, :4]), qw.rowwise,
                       sizes),
            ValueError,
            "x.block_scales: expected [72, 5] (mxfp8_e4m3 block scales of x rowwise)",
        ),
        (
            "block scales of a wrong dtype",
            lambda: mm(qx, dataclasses.replace(qw.rowwise, block_scales=float_scales), sizes),
            TypeError,
            "w.block_scales: mxfp8_e4m3 block scales are uint8, got float32",
        ),
        (
            "a missing fp32 scale",
            lambda: mm(x, dataclasses.replace(nvfp4_w, scale=None), sizes),
            ValueError,
            "w: nvfp4_group needs fp32 scale [4] of float32",
        ),
        (
            "a scale the format has not",
            lambda: mm(dataclasses.replace(qx, scale=torch.ones(1)), qw.rowwise, sizes),
            ValueError,
            "x.scale: mxfp8_e4m3 has no fp32 scale",
        ),
        (
            "data of another element type",
            lambda: mm(dataclasses.replace(qx, data=e5m2_bits), qw.rowwise, sizes),
            TypeError,
            "x.data: mxfp8_e4m3 data is float8_e4m3fn, got float8_e5m2",
        ),
        (
            "an unknown format",
            lambda: mm(dataclasses.replace(qx, format="mxfp8"), qw.rowwise, sizes),
            ValueError,
            "x: unknown quantize format 'mxfp8'",
        ),
        (
            "a columnwise x",
            lambda: mm(q.columnwise, qw.rowwise, sizes),
            ValueError,
            "x: the rows of x are its tokens: pass the rowwise copy",
        ),
        (
            "a w copy blocked across K",
            lambda: mm(qx, qw.columnwise, sizes),
            ValueError,
            "w: the mxfp8_e4m3 block scales of its columnwise copy run across the contraction",
        ),
        (
            "a rowwise copy in ragged-K",
            lambda: ggt.ragged_k_mm(qx, q.columnwise, sizes),
            ValueError,
            "a: the mxfp8_e4m3 block scales of its rowwise copy run across the contraction",
        ),
        (
            "a per-group alpha of a wrong length",
            lambda: mm(qx, qw.rowwise, sizes, alpha=torch.ones(3)),
            ValueError,
            "alpha: expected a contiguous fp32 array [G] with G = 4",
        ),
        (
            "a per-group alpha not fp32",
            lambda: mm(qx, qw.rowwise, sizes, alpha=torch.ones(4, dtype=torch.float16)),
            TypeError,
            "alpha: a per-group alpha must be fp32",
        ),
        (
            "a list for x",
            lambda: mm([qx.data], qw.rowwise, sizes),
            TypeError,
            "x: expected a torch.Tensor or a QuantizedTensor",
        ),
    ]


def test_bad_input_names_the_argument():
    _, cases = _bad_cases()
    for what, call, error, message in cases:
        with pytest.raises(error) as raised:
            call()
        assert message in str(raised.value), (what, str(raised.value))


@pytest.mark.parametrize(
    "what",
    ["mismatched formats", "block scales of a wrong shape", "a columnwise x",
     "a per-group alpha of a wrong length"],
)
def test_bad_input_under_torch_compile(what):
    # Shapes and types fail in the fake kernels, while tracing; the formats
    # of a pair are the library's to judge, when the compiled graph runs.
    _, cases = _bad_cases()
    call, message = next((call, message) for name, call, _, message in cases if name == what)
    with pytest.raises(Exception) as raised:
        torch.compile(call, fullgraph=True)()
    assert message in str(raised.value), str(raised.value)


def test_no_gradient_through_a_quantized_operand():
    sizes = _sizes(SIZES["edges"])
    w = ggt.grouped_quantize(_input((G, N, K), 22), rowwise="fp8_e4m3_tensor").rowwise
    x = _input((M, K), 23).requires_grad_()
    y = ggt.grouped_mm(x, w, sizes, out_dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match="grouped_mm: no gradient through a quantized"):
        y.float().sum().backward()


def test_per_group_alpha_gradients():
    sizes = SIZES["edges"]
    x = _input((M, K), 24).requires_grad_()
    w = _input((G, N, K), 25).requires_grad_()
    alpha = torch.tensor(ALPHAS)
    y = ggt.grouped_mm(x, w, _sizes(sizes), alpha=alpha, out_dtype=torch.float32)
    dy = _input((M, N), 26).float()
    y.backward(dy)
    xr = x.detach().double().requires_grad_()
    wr = w.detach().double().requires_grad_()
    starts = fq.offsets(sizes)
    yr = torch.cat(
        [ALPHAS[g] * xr[starts[g] : starts[g] + s] @ wr[g].T for g, s in enumerate(sizes)]
    )
    yr.backward(dy[: sum(sizes)].double())
    torch.testing.assert_close(x.grad.double(), xr.grad, rtol=2**-7, atol=1e-2)
    torch.testing.assert_close(w.grad.double(), wr.grad, rtol=2**-7, atol=1e-2)


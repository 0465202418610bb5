"""Quantized products on CUDA tensors (the portable path's decode kernels,
what GG_PATH_AUTO picks for them on every GPU) against the float64
fake-quant model: every format pair of test_torch_quantized_mm that a GPU
path runs, ragged-M with both weight layouts and ragged-K, on the same
edge sizes plus groups of hundreds of tokens. Operands are quantized on the
CPU (the reference quantizer writes every format) and moved to the GPU, so
the model reads exactly the arrays the kernel reads. fp8 1x128/128x128
block scales have no GPU kernel: they must be refused, naming the formats.
These tests verify the kernels before they answer users, so they run them
with GROUPGEMM_UNVERIFIED_KERNELS=1 (src/kernels/verified_kernels.h).
"""

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import fake_quant as fq  # noqa: E402
import groupgemm.torch as ggt  # noqa: E402
import test_torch_quantized_mm as cpu  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("lib"),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]



@pytest.fixture(autouse=True)
def _unverified_kernels_run(monkeypatch):
    monkeypatch.setenv("GROUPGEMM_UNVERIFIED_KERNELS", "1")


SIZES = dict(cpu.SIZES, long=[0, 300, 1, 700])


def _blockwise(fmt):
    return fmt is not None and ("1x128" in fmt or "128x128" in fmt)


def _cuda(operand):
    if isinstance(operand, torch.Tensor):
        return operand.cuda()
    arrays = {f: None if getattr(operand, f) is None else getattr(operand, f).cuda()
              for f in ("data", "block_scales", "scale")}
    return dataclasses.replace(operand, **arrays)


def _rows(sizes, multiple=1):
    rows = max(cpu.M, sum(sizes) + 5)
    return -(-rows // multiple) * multiple


@pytest.mark.parametrize("sizes", list(SIZES))
@pytest.mark.parametrize("w_layout", ["nk", "kn"])
@pytest.mark.parametrize(
    "x_fmt, w_fmt", [p for p in cpu.RAGGED_M_PAIRS if not _blockwise(p[0]) and not _blockwise(p[1])]
)
def test_ragged_m(x_fmt, w_fmt, w_layout, sizes):
    sizes = SIZES[sizes]
    m = _rows(sizes)
    x, x_values = cpu._operand(cpu._input((m, cpu.K), 1), x_fmt, sizes, columnwise=False)
    w_shape = (cpu.G, cpu.N, cpu.K) if w_layout == "nk" else (cpu.G, cpu.K, cpu.N)
    w, w_values = cpu._operand(cpu._input(w_shape, 2), w_fmt, None, columnwise=w_layout == "kn")
    alpha = torch.tensor(cpu.ALPHAS).cuda() if w_layout == "kn" else 2.0
    y = torch.full((m, cpu.N), 7.0, device="cuda")  # rows past the groups must keep it
    ggt.grouped_mm(_cuda(x), _cuda(w), cpu._sizes(sizes).cuda(), w_layout=w_layout, alpha=alpha,
                   out=y)
    y = y.cpu()
    alphas = np.array(cpu.ALPHAS) if w_layout == "kn" else 2.0
    want = fq.ragged_m(x_values, w_values, sizes, w_layout, alphas)
    magnitude = fq.ragged_m(np.abs(x_values), np.abs(w_values), sizes, w_layout, np.abs(alphas))
    fq.assert_fp32_accumulation(y.numpy(), want, magnitude, cpu.K,
                                fp8_cores=fq.on_fp8_cores(x_fmt, w_fmt, "cuda"))
    assert torch.all(y[sum(sizes):] == 7.0)


# The weight gradient's fp8 1x128 blocks along the tokens: the sm90 fp8
# pairs, e5m2 gradients or e4m3 ones times e4m3 activations.
BLOCKWISE_RAGGED_K_PAIRS = [("fp8_e5m2_1x128", "fp8_e4m3_1x128"),
                            ("fp8_e4m3_1x128", "fp8_e4m3_1x128")]


@pytest.mark.parametrize("sizes", list(SIZES))
@pytest.mark.parametrize(
    "a_fmt, b_fmt",
    [p for p in cpu.RAGGED_K_PAIRS if not _blockwise(p[0])] + BLOCKWISE_RAGGED_K_PAIRS)
def test_ragged_k(a_fmt, b_fmt, sizes):
    sizes = SIZES[sizes]
    m = _rows(sizes, 32)  # the token-contiguous copies' rows: 16-byte aligned on a GPU path
    a, a_values = cpu._operand(cpu._input((m, cpu.P), 3), a_fmt, sizes, columnwise=True)
    b, b_values = cpu._operand(cpu._input((m, cpu.Q), 4), b_fmt, sizes, columnwise=True)
    alphas = torch.tensor(cpu.ALPHAS).cuda()
    out = ggt.ragged_k_mm(_cuda(a), _cuda(b), cpu._sizes(sizes).cuda(), alpha=alphas).cpu()
    want = fq.ragged_k(a_values, b_values, sizes, np.array(cpu.ALPHAS))
    magnitude = fq.ragged_k(np.abs(a_values), np.abs(b_values), sizes, np.abs(cpu.ALPHAS))
    fq.assert_fp32_accumulation(out.numpy(), want, magnitude, m,
                                fp8_cores=fq.on_fp8_cores(a_fmt, b_fmt, "cuda"))


@pytest.mark.parametrize("sizes", list(SIZES))
@pytest.mark.parametrize("x_fmt", ["fp8_e4m3_1x128", "fp8_e5m2_1x128"])
def test_blockwise_fp8_ragged_m(x_fmt, sizes):
    """1x128 activations (or gradients) x 128x128 weights: the sm90 path's
    block-scaled kernel."""
    sizes = SIZES[sizes]
    m = _rows(sizes)
    x, x_values = cpu._operand(cpu._input((m, cpu.K), 5), x_fmt, sizes, columnwise=False)
    w, w_values = cpu._operand(cpu._input((cpu.G, cpu.N, cpu.K), 6), "fp8_e4m3_128x128", None,
                               False)
    y = ggt.grouped_mm(_cuda(x), _cuda(w), cpu._sizes(sizes).cuda(), out_dtype=torch.float32)
    want = fq.ragged_m(x_values, w_values, sizes, "nk", 1.0)
    magnitude = fq.ragged_m(np.abs(x_values), np.abs(w_values), sizes, "nk", 1.0)
    rows = sum(sizes)
    fq.assert_fp32_accumulation(y.cpu().numpy()[:rows], want[:rows], magnitude[:rows], cpu.K,
                                fp8_cores=True)


def _copy_into(dst, src):
    """Writes a fresh quantization into the device buffers of `dst` (what
    a captured graph reads)."""
    for field in ("data", "block_scales", "scale"):
        if getattr(dst, field) is not None:
            getattr(dst, field).copy_(getattr(src, field))


@pytest.mark.parametrize("fmt", ["mxfp8_e4m3", "nvfp4_group", "fp8_e4m3_rowwise"])
def test_graph_replays_with_sizes_changed_on_the_device(fmt):
    """Both ops captured once in a CUDA graph, replayed after the sizes (and
    the token operands' ragged-K scales, requantized for them) changed on
    the device; every replay equals the model of its own sizes."""
    m = 96
    routings = ([1, 0, 31, 33], [0, 0, 0, 90], [0, 0, 0, 0], [24, 24, 24, 24], [96, 0, 0, 0])
    x_src, a_src, b_src = cpu._input((m, cpu.K), 11), cpu._input((m, cpu.P), 13), cpu._input(
        (m, cpu.Q), 14)
    w, w_values = cpu._operand(cpu._input((cpu.G, cpu.N, cpu.K), 12), fmt, None, False)
    w = _cuda(w)

    def operands(routing):
        x = cpu._operand(x_src, fmt, routing, columnwise=False)
        a = cpu._operand(a_src, fmt, routing, columnwise=True)
        b = cpu._operand(b_src, fmt, routing, columnwise=True)
        return x, a, b

    (x, _), (a, _), (b, _) = operands(routings[0])
    x, a, b = _cuda(x), _cuda(a), _cuda(b)
    sizes = cpu._sizes(routings[0]).cuda()
    ggt.grouped_mm(x, w, sizes)  # sizes the workspace before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ggt.grouped_mm(x, w, sizes, out_dtype=torch.float32)
        z = ggt.ragged_k_mm(a, b, sizes, out_dtype=torch.float32)
    for routing in routings:
        (x_new, x_values), (a_new, a_values), (b_new, b_values) = operands(routing)
        for dst, src in ((x, x_new), (a, a_new), (b, b_new)):
            _copy_into(dst, _cuda(src))
        sizes.copy_(cpu._sizes(routing))
        y.fill_(float("nan")), z.fill_(float("nan"))
        graph.replay()
        rows = sum(routing)
        want = fq.ragged_m(x_values, w_values, routing, "nk", 1.0)
        magnitude = fq.ragged_m(np.abs(x_values), np.abs(w_values), routing, "nk", 1.0)
        fp8_cores = fq.on_fp8_cores(fmt, fmt, "cuda")
        fq.assert_fp32_accumulation(y.cpu().numpy()[:rows], want[:rows], magnitude[:rows], cpu.K,
                                    fp8_cores=fp8_cores)
        want = fq.ragged_k(a_values, b_values, routing, 1.0)
        magnitude = fq.ragged_k(np.abs(a_values), np.abs(b_values), routing, 1.0)
        fq.assert_fp32_accumulation(z.cpu().numpy(), want, magnitude, m, fp8_cores=fp8_cores)
    assert ggt.check() == 0


def test_256_groups_with_empty_and_unaligned_ones():
    generator = np.random.default_rng(256)
    sizes = [int(s) for s in generator.choice([0, 0, 1, 3, 17, 31, 33, 64], size=256)]
    m = sum(sizes) + 7
    x, x_values = cpu._operand(cpu._input((m, cpu.K), 21), "mxfp8_e4m3", sizes, columnwise=False)
    w, w_values = cpu._operand(cpu._input((256, cpu.N, cpu.K), 22), "mxfp4", None, False)
    y = ggt.grouped_mm(_cuda(x), _cuda(w), cpu._sizes(sizes).cuda(), out_dtype=torch.float32)
    want = fq.ragged_m(x_values, w_values, sizes, "nk", 1.0)
    magnitude = fq.ragged_m(np.abs(x_values), np.abs(w_values), sizes, "nk", 1.0)
    rows = sum(sizes)
    fq.assert_fp32_accumulation(y.cpu().numpy()[:rows], want[:rows], magnitude[:rows], cpu.K)


@pytest.mark.parametrize(
    "sizes, clamped",
    [([5, -3, 30, 10], [5, 0, 30, 10]),  # negative: counts as 0
     ([5, 0, 60, 40], [5, 0, 60, 7])],  # past M = 72: cut at M
)
def test_bad_device_sizes_are_clamped_and_flagged(sizes, clamped):
    """Nothing is written outside the rows the clamped groups own, and
    check() reports the bad sizes."""
    x, x_values = cpu._operand(cpu._input((cpu.M, cpu.K), 31), "mxfp8_e4m3", clamped, False)
    w, w_values = cpu._operand(cpu._input((cpu.G, cpu.N, cpu.K), 32), "mxfp8_e4m3", None, False)
    assert ggt.check() == 0
    y = torch.full((cpu.M, cpu.N), 7.0, device="cuda")
    ggt.grouped_mm(_cuda(x), _cuda(w), cpu._sizes(sizes).cuda(), out=y)
    assert ggt.check() != 0
    y = y.cpu()
    want = fq.ragged_m(x_values, w_values, clamped, "nk", 1.0)
    magnitude = fq.ragged_m(np.abs(x_values), np.abs(w_values), clamped, "nk", 1.0)
    fq.assert_fp32_accumulation(y.numpy(), want, magnitude, cpu.K)
    assert torch.all(y[sum(clamped):] == 7.0)

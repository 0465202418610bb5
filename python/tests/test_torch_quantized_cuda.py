"""Quantized products on CUDA tensors (the portable path's decode kernels,
what GG_PATH_AUTO picks for them on every GPU) against the float64
fake-quant model: every format pair of test_torch_quantized_mm that a GPU
path runs, ragged-M with both weight layouts and ragged-K, on the same
edge sizes plus groups of hundreds of tokens. Operands are quantized on the
CPU (the reference quantizer writes every format) and moved to the GPU, so
the model reads exactly the arrays the kernel reads. fp8 1x128/128x128
block scales have no GPU kernel: they must be refused, naming the formats.
"""

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import fake_quant as fq  # noqa: E402
import groupgemm.torch as ggt  # noqa: E402
import test_torch_quantized_mm as cpu  # noqa: E402
from groupgemm import NotSupported  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("lib"),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]

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
    fq.assert_fp32_accumulation(y.numpy(), want, magnitude, cpu.K)
    assert torch.all(y[sum(sizes):] == 7.0)


@pytest.mark.parametrize("sizes", list(SIZES))
@pytest.mark.parametrize("a_fmt, b_fmt", [p for p in cpu.RAGGED_K_PAIRS if not _blockwise(p[0])])
def test_ragged_k(a_fmt, b_fmt, sizes):
    sizes = SIZES[sizes]
    m = _rows(sizes, 32)  # the token-contiguous copies' rows: 16-byte aligned on a GPU path
    a, a_values = cpu._operand(cpu._input((m, cpu.P), 3), a_fmt, sizes, columnwise=True)
    b, b_values = cpu._operand(cpu._input((m, cpu.Q), 4), b_fmt, sizes, columnwise=True)
    alphas = torch.tensor(cpu.ALPHAS).cuda()
    out = ggt.ragged_k_mm(_cuda(a), _cuda(b), cpu._sizes(sizes).cuda(), alpha=alphas).cpu()
    want = fq.ragged_k(a_values, b_values, sizes, np.array(cpu.ALPHAS))
    magnitude = fq.ragged_k(np.abs(a_values), np.abs(b_values), sizes, np.abs(cpu.ALPHAS))
    fq.assert_fp32_accumulation(out.numpy(), want, magnitude, m)


def test_blockwise_fp8_is_refused_naming_the_formats():
    sizes = SIZES["edges"]
    x, _ = cpu._operand(cpu._input((cpu.M, cpu.K), 5), "fp8_e4m3_1x128", sizes, columnwise=False)
    w, _ = cpu._operand(cpu._input((cpu.G, cpu.N, cpu.K), 6), "fp8_e4m3_128x128", None, False)
    with pytest.raises(NotSupported, match="1x128"):
        ggt.grouped_mm(_cuda(x), _cuda(w), cpu._sizes(sizes).cuda())

"""groupgemm.numpy's grouped_quantize and its outputs as the products'
operands, against the fake-quant model of fake_quant.py (as
test_torch_quantized_mm.py does for torch, on fewer cases: the checks and
descriptors are core's, shared by both)."""

import dataclasses

import numpy as np
import pytest

import fake_quant as fq
from groupgemm import NotSupported
from groupgemm import numpy as ggnp

pytestmark = pytest.mark.usefixtures("lib")
ml_dtypes = pytest.importorskip("ml_dtypes")

SIZES = [1, 0, 31, 33]  # sum 65 < M
M, K, N, G = 72, 160, 48, 4


def _input(rng, shape):
    rows = np.exp2(rng.integers(-6, 7, shape[:-1] + (1,)))
    return (rng.standard_normal(shape) * rows).astype(np.float32)


def _dequantized(q, sizes, original):
    values, regions = fq.dequantize(
        q.format, q.data.view(np.uint8), q.block_scales, q.scale, sizes, q.columnwise
    )
    fq.assert_quantizes(q.format, original.astype(np.float64), values, regions)
    return values


@pytest.mark.parametrize(
    "x_fmt, w_fmt",
    [
        ("fp8_e4m3_rowwise", "fp8_e5m2_rowwise"),
        ("fp8_e4m3_1x128", "fp8_e4m3_128x128"),
        ("mxfp4", "mxfp8_e4m3"),
        ("nvfp4_group", "nvfp4_tensor"),
        (None, "mxfp4"),
    ],
)
@pytest.mark.parametrize("w_layout", ["nk", "kn"])
def test_ragged_m(x_fmt, w_fmt, w_layout):
    rng = np.random.default_rng(1)
    sizes = np.array(SIZES, np.int32)
    x = _input(rng, (M, K))
    if x_fmt is None:
        x = x.astype(np.float16)
        x_operand, x_values = x, x.astype(np.float64)
    else:
        x_operand = ggnp.grouped_quantize(x, sizes, rowwise=x_fmt).rowwise
        x_values = _dequantized(x_operand, SIZES, x)
    w = _input(rng, (G, N, K) if w_layout == "nk" else (G, K, N))
    q = ggnp.grouped_quantize(w, **{"rowwise" if w_layout == "nk" else "columnwise": w_fmt})
    w_operand = q.rowwise if w_layout == "nk" else q.columnwise
    w_values = _dequantized(w_operand, None, w)
    alpha = np.array([0.5, 2.0, -1.0, 1.0], np.float32)
    out = ggnp.grouped_mm(x_operand, w_operand, sizes, w_layout=w_layout, alpha=alpha,
                          out_dtype=np.float32)
    want = fq.ragged_m(x_values, w_values, SIZES, w_layout, alpha)
    magnitude = fq.ragged_m(np.abs(x_values), np.abs(w_values), SIZES, w_layout, np.abs(alpha))
    fq.assert_fp32_accumulation(out, want, magnitude, K)
    assert np.all(out[sum(SIZES):] == 0)  # allocated zero-filled, never written


@pytest.mark.parametrize("fmt", ["fp8_e5m2_group", "fp8_e4m3_1x128", "mxfp8_e5m2", "nvfp4_group"])
def test_ragged_k(fmt):
    rng = np.random.default_rng(2)
    sizes = np.array(SIZES, np.int64)
    a, b = _input(rng, (M, 48)), _input(rng, (M, 32))
    qa = ggnp.grouped_quantize(a, sizes, columnwise=fmt).columnwise
    qb = ggnp.grouped_quantize(b, sizes, columnwise=fmt).columnwise
    out = ggnp.ragged_k_mm(qa, qb, sizes)
    assert out.dtype == np.float32
    a_values, b_values = _dequantized(qa, SIZES, a), _dequantized(qb, SIZES, b)
    want = fq.ragged_k(a_values, b_values, SIZES)
    magnitude = fq.ragged_k(np.abs(a_values), np.abs(b_values), SIZES)
    fq.assert_fp32_accumulation(out, want, magnitude, M)


def test_quantize_outputs_match_the_model_and_the_torch_front_end():
    torch = pytest.importorskip("torch")
    import groupgemm.torch as ggt

    rng = np.random.default_rng(3)
    x = _input(rng, (M, K))
    for fmt in ("fp8_e4m3_rowwise", "mxfp4", "nvfp4_group"):
        ours = ggnp.grouped_quantize(x, np.array(SIZES, np.int32), rowwise=fmt, columnwise=fmt,
                                     amax=True)
        theirs = ggt.grouped_quantize(torch.from_numpy(x), torch.tensor(SIZES), rowwise=fmt,
                                      columnwise=fmt, amax=True)
        for side in ("rowwise", "columnwise"):
            mine, other = getattr(ours, side), getattr(theirs, side)
            assert (mine.format, mine.columnwise) == (other.format, other.columnwise)
            np.testing.assert_array_equal(
                _dequantized(mine, SIZES, x), _dequantized(_as_numpy(other), SIZES, x)
            )
        np.testing.assert_array_equal(ours.amax, theirs.amax.numpy())


def _as_numpy(q):
    """A torch QuantizedTensor's arrays as numpy (fp8 data as its bits)."""
    import torch

    def array(t):
        return None if t is None else (t.view(torch.uint8) if t.is_floating_point() and
                                       t.element_size() == 1 else t).numpy()

    return dataclasses.replace(q, data=array(q.data), block_scales=array(q.block_scales),
                               scale=array(q.scale))


def test_bad_input_names_the_argument():
    rng = np.random.default_rng(4)
    sizes = np.array(SIZES, np.int32)
    x = _input(rng, (M, K))
    qx = ggnp.grouped_quantize(x, sizes, rowwise="mxfp8_e4m3").rowwise
    qw = ggnp.grouped_quantize(_input(rng, (G, N, K)), rowwise="nvfp4_group").rowwise
    with pytest.raises(NotSupported, match=r"x \(mxfp8 e4m3\) x w \(nvfp4"):
        ggnp.grouped_mm(qx, qw, sizes)
    with pytest.raises(ValueError, match=r"w.block_scales: expected \[4, 48, 10\]"):
        ggnp.grouped_mm(x.astype(np.float16),
                        dataclasses.replace(qw, block_scales=qw.block_scales[:, :, :9]), sizes)
    with pytest.raises(ValueError, match="group_sizes: group 1 has size -1"):
        ggnp.grouped_quantize(x, np.array([1, -1, 0, 0], np.int32), rowwise="mxfp4")
    with pytest.raises(ValueError, match="rowwise: unknown quantize format 'fp4'"):
        ggnp.grouped_quantize(x, sizes, rowwise="fp4")

"""groupgemm.bench_quantized's methods on the CPU (the library's reference):
each case's quantized products are checked against its bf16 one before
they are timed, so running the measurements on a small case shows that
every format pair reads its operands as the product needs them (dgrad:
dy's rowwise copy times the weights' columnwise copy, w_layout "kn").
The timing itself (CUDA events) and the peers that only a GPU runs are
stood in for here; a CUDA GPU runs the real thing in scripts/gpu_check.sh.
"""

import types

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from groupgemm import bench, bench_quantized, presets  # noqa: E402

pytestmark = pytest.mark.usefixtures("lib")

PRESET = presets.MoePreset("small", 256, 64, 4, 2)  # K 256 (two 1x128 blocks), N 128
ARGS = types.SimpleNamespace(formats=[], warmup=1, reps=1, warm_ms=0.0)
RATES = {"dense_flops": 1e12, "dense_fp8_flops": 2e12, "copy_bytes_per_s": 1e12}


@pytest.fixture(autouse=True)
def _untimed(monkeypatch):
    # Each method runs once (its result discarded) and takes 1 ms; no
    # cuBLASLt peers (torch._scaled_mm has no CPU kernel for them).
    def run_each(methods, *_):
        for run in methods.values():
            run()
        return dict.fromkeys(methods, 1.0)

    monkeypatch.setattr(bench_quantized, "time_in_turn", run_each)
    monkeypatch.setattr(bench_quantized, "dense_fp8_peers", lambda *_: {})


def _case(routing):
    return bench.make_case(PRESET, 96, routing, seed=3, device="cpu")


def test_dgrad_formats_are_the_recipes_dgrad_pairs():
    assert ("fp8_e5m2_1x128", "fp8_e4m3_128x128") in bench_quantized.DGRAD_FORMATS
    assert ("nvfp4_tensor", "nvfp4_tensor") in bench_quantized.DGRAD_FORMATS
    assert len(set(bench_quantized.DGRAD_FORMATS)) == len(bench_quantized.DGRAD_FORMATS)


@pytest.mark.parametrize("routing", ["uniform", "skewed"])
@pytest.mark.parametrize("op", ["fprop", "dgrad"])
def test_ragged_m_methods_match_bf16(op, routing):
    records = bench_quantized.measure_ragged_m(_case(routing), ARGS, RATES, op)
    pairs = bench_quantized.DGRAD_FORMATS if op == "dgrad" else bench_quantized.FORMATS
    methods = {r["method"] for r in records}
    assert {bench_quantized.label(*pair) for pair in pairs} <= methods
    assert {"bf16", "torch._grouped_mm"} <= methods
    for record in records:
        assert record["op"] == op and record["ms"] == 1.0 and record["efficiency"] > 0


def test_wgrad_methods_match_bf16():
    records = bench_quantized.measure_wgrad(_case("skewed"), ARGS, RATES)
    methods = {r["method"] for r in records}
    assert {bench_quantized.label(*pair) for pair in bench_quantized.WGRAD_FORMATS} <= methods


def test_a_wrong_product_is_not_timed(monkeypatch):
    # The check before timing fails a product off by a factor of 2 (here:
    # weights quantized from twice their values).
    quantized = bench_quantized.quantized

    def doubled_weights(tensor, fmt, sizes, columnwise=False):
        return quantized(tensor * 2 if sizes is None else tensor, fmt, sizes, columnwise)

    monkeypatch.setattr(bench_quantized, "quantized", doubled_weights)
    args = types.SimpleNamespace(formats=["mxfp8_e4m3 x mxfp8_e4m3"], warmup=1, reps=1,
                                 warm_ms=0.0)
    with pytest.raises(RuntimeError, match="dgrad mxfp8_e4m3 x mxfp8_e4m3 differs from bf16"):
        bench_quantized.measure_ragged_m(_case("uniform"), args, RATES, "dgrad")


def test_relative_error_in_chunks_is_the_whole_norm():
    want = torch.randn(1000, 7, dtype=torch.bfloat16)
    got = want + torch.randn(1000, 7, dtype=torch.bfloat16) * 0.01
    whole = float((got.float() - want.float()).norm() / want.float().norm())
    assert bench.relative_error(got, want, rows=64) == pytest.approx(whole, rel=1e-6)
    assert bench.relative_error(want, want) == 0.0
    assert bench.relative_error(2 * want, want) == pytest.approx(1.0, rel=1e-6)


def test_the_roofline_counts_fp8_rates_where_fp8_tensor_cores_multiply():
    fp8 = bench_quantized.on_fp8_cores
    assert fp8("fp8_e4m3_1x128 x fp8_e4m3_128x128")
    assert fp8("torch._scaled_grouped_mm")
    # mxfp8 along K runs on fp8 wgmma; along the tokens (wgrad) it is decoded.
    assert fp8("mxfp8_e4m3 x mxfp8_e4m3")
    assert not fp8("mxfp8_e4m3 x mxfp8_e4m3", ragged_m=False)
    assert not fp8("mxfp8_e4m3 x mxfp4")
    assert not fp8("nvfp4_tensor x nvfp4_group")
    assert not fp8("bf16")

"""The benchmark end to end on one small case (needs torch and a CUDA GPU)."""

import json
import time

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from groupgemm import bench  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("lib"),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]


def test_bench_runs_and_reports(tmp_path, capsys):
    out = tmp_path / "bench.json"
    args = ["--presets", "qwen3-30b-a3b", "--tokens", "64", "--warmup", "1", "--reps", "2"]
    args += ["--json", str(out)]
    try:
        import matplotlib  # noqa: F401

        args += ["--png", str(tmp_path / "bench.png")]
    except ImportError:
        pass
    assert bench.main(args) == 0
    summary = json.loads(out.read_text())
    assert summary["rates"]["warm_ms"] == 300.0
    results = summary["results"]
    assert len(results) == 2 * 2 * 2  # routings x passes x launches
    for record in results:
        assert record["ms"]["groupgemm"] > 0
        assert 0 < record["efficiency"]["groupgemm"]
    assert "groupgemm ms" in capsys.readouterr().out


def test_bench_takes_shapes(tmp_path):
    out = tmp_path / "bench.json"
    args = ["--shapes", "2x64x256x128,3x1x96x64", "--routing", "uniform", "--passes", "fwd"]
    args += ["--launches", "eager", "--warmup", "1", "--reps", "2", "--warm-ms", "0"]
    args += ["--json", str(out)]
    assert bench.main(args) == 0
    results = json.loads(out.read_text())["results"]
    assert [(r["preset"], r["rows"], r["n"], r["k"], r["groups"]) for r in results] == [
        ("g2x64-n256-k128", 128, 256, 128, 2),
        ("g3x1-n96-k64", 3, 96, 64, 3),
    ]


@pytest.mark.parametrize("spec", ["4x8192x4096", "4x8192x4095x7168", "0x1x2x3", "ax1x2x3"])
def test_bench_rejects_bad_shapes(spec):
    with pytest.raises(ValueError, match="shape"):
        bench.shape_problem(spec)


def test_keep_running_runs_for_the_time_in_growing_batches():
    calls = []
    start = time.perf_counter()
    made = bench.keep_running(lambda: calls.append(torch.empty(1, device="cuda")), 50.0)
    assert (time.perf_counter() - start) * 1e3 >= 50.0
    assert len(calls) >= 1 + 2 + 4  # at least three batches, doubling
    assert made == len(calls)
    calls.clear()
    assert bench.keep_running(lambda: calls.append(0), 0.0) == 0
    assert calls == []


def test_time_in_turn_rotates_the_order_of_the_methods():
    calls = []

    def method(name):
        return lambda: calls.append(name) or torch.empty(1, device="cuda")

    ms = bench.time_in_turn({"a": method("a"), "b": method("b")}, warmup=1, reps=3)
    assert sorted(ms) == ["a", "b"] and min(ms.values()) > 0
    assert calls == ["a", "b"] + ["a", "b", "b", "a", "a", "b"]


@pytest.mark.parametrize(
    "value, message",
    [("-1", "--warm-ms -1 is not in 0 .. 60000"), ("60001", "--warm-ms 60001 is not in 0 .. 60000"),
     ("x", "invalid warm_ms_value value: 'x'")],
)
def test_bench_rejects_bad_warm_ms(value, message, capsys):
    with pytest.raises(SystemExit):
        bench.parse_args(["--warm-ms=" + value])
    assert message in capsys.readouterr().err

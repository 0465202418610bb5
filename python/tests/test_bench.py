"""The benchmark end to end on one small case (needs torch and a CUDA GPU)."""

import json

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
    results = json.loads(out.read_text())["results"]
    assert len(results) == 2 * 2 * 2  # routings x passes x launches
    for record in results:
        assert record["ms"]["groupgemm"] > 0
        assert 0 < record["efficiency"]["groupgemm"]
    assert "groupgemm ms" in capsys.readouterr().out

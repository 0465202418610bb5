"""The quantize benchmark end to end on small cases (needs torch and a CUDA GPU)."""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from groupgemm import bench_quantize  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("lib"),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]


def test_bench_quantize_runs_and_reports(capsys):
    args = ["--presets", "qwen3-30b-a3b", "--tokens", "256", "--warmup", "1", "--reps", "2"]
    args += ["--warm-ms", "10", "--formats", "fp8_e4m3_1x128,nvfp4_group"]
    assert bench_quantize.main(args) == 0
    out = capsys.readouterr().out
    assert "each figure timed after 10 ms of its work" in out
    rows = [line.split() for line in out.splitlines() if line.startswith("qwen3-30b-a3b")]
    assert [row[2] for row in rows] == ["fp8_e4m3_1x128", "nvfp4_group"]
    assert float(rows[0][3]) > 0 and float(rows[0][5]) > 0  # ours and torch's times
    assert rows[1][5] == "-"  # torch has no nvfp4 path


def test_bench_quantize_reads_power_and_clock(capsys):
    pytest.importorskip("pynvml", reason="nvidia-ml-py (pynvml) is not installed")
    args = ["--presets", "qwen3-30b-a3b", "--tokens", "256", "--warmup", "1", "--reps", "2",
            "--warm-ms", "10", "--formats", "mxfp8_e4m3", "--power-seconds", "0.2"]
    assert bench_quantize.main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    copy = next(line for line in lines if line.startswith("copy, power and clock:")).split()
    assert float(copy[-2]) > 0 and float(copy[-1]) > 0  # watts, MHz
    row = next(line for line in lines if line.startswith("qwen3-30b-a3b")).split()
    assert len(row) == 9 and float(row[7]) > 0 and float(row[8]) > 0


def test_bench_quantize_rejects_bad_warm_ms(capsys):
    with pytest.raises(SystemExit):
        bench_quantize.main(["--warm-ms", "60001"])
    assert "--warm-ms 60001 is not in 0 .. 60000" in capsys.readouterr().err

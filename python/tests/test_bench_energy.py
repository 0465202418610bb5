"""tools/bench_energy.py end to end on a small case (needs torch, NVML and a CUDA GPU)."""

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")
pytest.importorskip("pynvml", reason="nvidia-ml-py (pynvml) is not installed")

_SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "bench_energy.py"
_spec = importlib.util.spec_from_file_location("bench_energy", _SCRIPT)
bench_energy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_energy)

pytestmark = [
    pytest.mark.usefixtures("lib"),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]


def test_bench_energy_reports_every_workload_and_floor(capsys):
    args = ["--preset", "qwen3-30b-a3b", "--tokens", "256", "--warm-seconds", "0.1",
            "--seconds", "0.3", "--reps", "1"]
    assert bench_energy.main(args) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    table = lines[lines.index(next(l for l in lines if l.startswith("workload"))) + 1:]
    table = table[: table.index("")]  # the workloads' table ends at the blank line
    rows = {line[:24].strip(): line[24:].split() for line in table}
    for workload in ("dense torch.mm 8192^3", "write stream (fill_)", "device copy",
                     "groupgemm wgrad", "groupgemm fprop"):
        ms, watts = float(rows[workload][0]), float(rows[workload][1])
        assert ms > 0 and watts > 0, workload
    starts = ("roofline", "together", "model", "compute")
    floors = [line for line in out.splitlines() if line.startswith(starts)]
    assert len(floors) == 4
    assert all(float(line.split()[-2]) > 0 for line in floors)  # each floor's ms
    ops = lines[lines.index(next(l for l in lines if l.startswith("op "))) + 1:]
    assert [line.split()[0] for line in ops] == ["wgrad", "fprop"]
    for line in ops:
        ms, watts, at_limit, roofline = map(float, line.split()[1:])
        assert 0 < at_limit and 0 < roofline and watts > 0 and ms > 0, line

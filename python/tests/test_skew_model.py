"""tools/skew_model.py: the models of skewed ragged-M and ragged-K products (CPU only)."""

import importlib.util
from pathlib import Path

import pytest

from groupgemm import presets

_SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "skew_model.py"
_spec = importlib.util.spec_from_file_location("skew_model", _SCRIPT)
skew_model = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(skew_model)

DENSE, COPY = 1e15, 4e12  # FLOP/s, B/s


def test_a_group_takes_the_larger_of_its_bytes_and_its_tiles_mma():
    n, k = 4096, 2048
    weights = 2 * n * k
    # 10 rows: a 64-row tile, bound by the weights' bytes; 300 rows: three
    # 128-row tiles (384 rows of MMA), bound by the MMA.
    small = (weights + 2 * 10 * (n + k)) / COPY
    large_bytes = (weights + 2 * 300 * (n + k)) / COPY
    large = 2 * 384 * n * k / DENSE
    assert large > large_bytes
    phases, overlap, rows_mma, roofline = skew_model.group_floors([10, 0, 300], n, k, DENSE, COPY)
    assert phases == pytest.approx(1e3 * (small + large))
    all_bytes = 1e3 * (small + large_bytes)
    assert overlap == pytest.approx(max(all_bytes, 1e3 * 2 * (64 + 384) * n * k / DENSE))
    assert rows_mma == pytest.approx(max(all_bytes, 1e3 * 2 * (16 + 384) * n * k / DENSE))
    assert roofline == pytest.approx(max(all_bytes, 1e3 * 2 * 310 * n * k / DENSE))


def test_reads_a_bench_output_and_prints_each_row_of_the_routing(tmp_path, capsys):
    bench = tmp_path / "bench.txt"
    bench.write_text(
        "# dense cuBLAS bf16 8192^3: 1000.0 TFLOP/s; device copy: 4000 GB/s (read + write)\n"
        "preset tokens routing op G rows n k ms TFLOP/s GB/s dense loop xd xl eff\n"
        "qwen3-30b-a3b 2048 skewed fprop 128 16384 1536 2048 0.3 1 1 1 1 1 1 0.6\n"
        "qwen3-30b-a3b 2048 uniform fprop 128 16384 1536 2048 0.2 1 1 1 1 1 1 0.9\n"
    )
    assert skew_model.main([str(bench)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert len(rows) == 1 and rows[0][:3] == ["qwen3-30b-a3b", "2048", "0.300"]
    sizes = presets.route("skewed", 16384, 128, 0)
    floors = skew_model.group_floors(sizes, 1536, 2048, DENSE, COPY)
    assert [float(x) for x in rows[0][3:7]] == pytest.approx(floors, abs=1e-3)
    assert float(rows[0][-1]) == pytest.approx(0.3 / floors[0], abs=1e-3)


def test_refuses_a_file_without_machine_rates(tmp_path):
    bench = tmp_path / "bench.txt"
    bench.write_text("no header here\n")
    with pytest.raises(SystemExit, match="no machine rates"):
        skew_model.main([str(bench)])


def _bench_with_wgrad_rows(path):
    """A bench output whose uniform wgrad rows fit a tile of s steps at
    max(2.0, 0.8 s + 1.5) us on 132 SMs."""
    lines = ["# dense cuBLAS bf16 8192^3: 1000.0 TFLOP/s; device copy: 4000 GB/s (read + write)"]
    for name, tokens, us in (("qwen3-30b-a3b", 128, 2.0), ("qwen3-30b-a3b", 2048, 0.8 * 2 + 1.5),
                             ("qwen3-30b-a3b", 16384, 0.8 * 16 + 1.5)):
        preset = presets.find(name)
        ms = us * preset.experts * skew_model.output_tiles(preset) / 132 / 1e3
        lines.append("%s %d uniform wgrad 1 1 1 1 %.6f 1 1 1 1 1 1 1" % (name, tokens, ms))
    lines.append("qwen3-30b-a3b 2048 skewed wgrad 1 1 1 1 0.4 1 1 1 1 1 1 1")
    path.write_text("\n".join(lines) + "\n")


def test_fits_the_tile_cost_to_the_uniform_wgrad_rows(tmp_path):
    bench = tmp_path / "bench.txt"
    _bench_with_wgrad_rows(bench)
    _, _, times = skew_model.read_bench(bench)
    a, c, floor = skew_model.fit_tile_cost(times, 132)
    assert (a, c, floor) == pytest.approx((0.8, 1.5, 2.0), abs=1e-4)


def test_sums_the_tiles_costs_empty_groups_at_the_floor():
    cost = (0.8, 1.5, 2.0)
    # 0 rows: the floor; 10 rows: one step, max(2.0, 2.3); 130 rows: three steps.
    model, fixed = skew_model.tile_costs([0, 10, 130], 4, cost, 2)
    assert model == pytest.approx(1e-3 * 4 * (2.0 + 2.3 + (0.8 * 3 + 1.5)) / 2)
    assert fixed == pytest.approx(1e-3 * 4 * 3 * 1.5 / 2)


def test_prints_the_skewed_wgrad_rows_beside_the_model(tmp_path, capsys):
    bench = tmp_path / "bench.txt"
    _bench_with_wgrad_rows(bench)
    assert skew_model.main([str(bench), "--op", "wgrad"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "a tile of s steps: max(2.00, 0.800 s + 1.50) us"
    rows = [line.split() for line in out[2:]]
    assert len(rows) == 1 and rows[0][:3] == ["qwen3-30b-a3b", "2048", "0.400"]

"""python -m groupgemm.jax.bench without a GPU: its table and JSON, its
arguments, and its methods and checks run end to end with JAX on the CPU,
where both groupgemm methods run the library's reference path.

The GPU side (the C API on the legacy default stream, the CUDA runtime's
synchronization, the figures themselves) is exercised by running the bench
on a GPU machine."""

import json
import os
import statistics

import pytest

jax = pytest.importorskip("jax", reason="jax is not installed")
import jax.numpy as jnp  # noqa: E402

from groupgemm import LibraryError, _bench_report, presets  # noqa: E402
from groupgemm.jax import _ffi, bench  # noqa: E402

TINY = presets.MoePreset("tiny", hidden=64, ffn=32, experts=4, top_k=2)
RATES = {"dense_flops": 1e12, "copy_bytes_per_s": 1e11}


def _record(ms):
    return {"preset": "p", "tokens": 8, "routing": "uniform", "pass": "fwd", "launch": "jit",
            "ms": ms, "efficiency": {m: None if t is None else 0.5 for m, t in ms.items()}}


def test_table_has_the_ffi_over_c_api_column(capsys):
    ms = {bench.FFI: 1.1, bench.C_API: 1.0, bench.PEER: 2.2}
    missing = {bench.FFI: 1.1, bench.C_API: None, bench.PEER: None}
    _bench_report.print_table([_record(ms), _record(missing)], bench.METHODS, bench.RATIOS)
    header, first, second = capsys.readouterr().out.splitlines()
    assert "jax.lax.ragged_dot / ours" in header and "FFI / C API" in header
    assert "groupgemm C API / ours" not in header
    assert "2.00" in first.split() and "1.10" in first.split()
    assert second.split().count("n/a") == 6  # two times, both ratios, two efficiencies


def test_table_default_ratios_are_over_groupgemm(capsys):
    ms = {"groupgemm": 1.0, "loop": 3.0}
    _bench_report.print_table([_record(ms)], ("groupgemm", "loop"))
    header, row = capsys.readouterr().out.splitlines()
    assert "loop / ours" in header and "3.00" in row.split()


def test_arguments():
    args = bench.parse_args([])
    assert bench._split(args.passes) == list(bench.PASSES)
    assert bench._split(args.presets) == [p.name for p in presets.PRESETS]
    args = bench.parse_args(["--presets", "a,b", "--tokens", "64", "--passes", "fwd"])
    assert bench._split(args.presets) == ["a", "b"] and args.tokens == "64"


@pytest.fixture
def handlers(lib):
    try:
        return _ffi.library()
    except LibraryError as e:
        if os.environ.get("GROUPGEMM_LIBRARY"):
            raise
        pytest.skip("libgroupgemm_jax.so is not available: %s" % e)


@pytest.fixture
def on_cpu(handlers, monkeypatch):
    """The bench's main() on the CPU, with the tiny preset and fixed rates."""
    monkeypatch.setattr(bench, "_gpu", lambda: jax.devices("cpu")[0])
    monkeypatch.setattr(bench, "machine_rates", lambda warmup, reps: RATES)
    monkeypatch.setattr(presets, "PRESETS", presets.PRESETS + [TINY])
    with jax.default_device(jax.devices("cpu")[0]):
        yield


def _main(tmp_path, *extra):
    out = tmp_path / "bench.json"
    args = ["--presets", "tiny", "--tokens", "16", "--warmup", "1", "--reps", "2",
            "--json", str(out)] + list(extra)
    assert bench.main(args) == 0
    return json.loads(out.read_text())


def test_main_times_three_methods(on_cpu, tmp_path, capsys):
    summary = _main(tmp_path)
    assert summary["command"].startswith("python -m groupgemm.jax.bench --presets tiny")
    results = summary["results"]
    assert [(r["routing"], r["pass"]) for r in results] == [
        (routing, pass_name) for routing in presets.ROUTINGS for pass_name in bench.PASSES]
    for r in results:
        assert all(r["ms"][m] > 0 for m in bench.METHODS)
        assert r["ffi_over_c_api"] == pytest.approx(r["ms"][bench.FFI] / r["ms"][bench.C_API])
    assert "FFI / C API" in capsys.readouterr().out


def test_methods_picks_what_is_timed(on_cpu, tmp_path, monkeypatch):
    prepared, seen = bench.prepared, set()

    def logged_prepared(case, method, pass_name):
        seen.add(method)
        return prepared(case, method, pass_name)

    monkeypatch.setattr(bench, "prepared", logged_prepared)
    results = _main(tmp_path, "--routing", "uniform", "--methods", bench.PEER)["results"]
    for r in results:
        assert r["ms"][bench.PEER] > 0
        assert r["ms"][bench.FFI] is None and r["ms"][bench.C_API] is None
    seen.clear()
    methods = "%s,%s" % (bench.FFI, bench.C_API)
    results = _main(tmp_path, "--routing", "uniform", "--methods", methods)["results"]
    for r in results:
        assert r["ms"][bench.FFI] > 0 and r["ms"][bench.C_API] > 0 and r["ms"][bench.PEER] is None
    assert bench.PEER not in seen  # not even for the check


def test_an_unknown_method_is_named(on_cpu, capsys):
    assert bench.main(["--methods", "groupgemm,cublas"]) == 2
    assert "--methods: unknown cublas" in capsys.readouterr().err


def test_a_method_that_fails_reads_na(on_cpu, tmp_path, monkeypatch, capsys):
    def no_c_api(*args):
        raise OSError("no CUDA here")

    monkeypatch.setattr(bench, "_c_api", no_c_api)
    results = _main(tmp_path, "--routing", "skewed")["results"]
    assert len(results) == 2
    for r in results:
        assert r["ms"][bench.C_API] is None and r["ffi_over_c_api"] is None
        assert r["ms"][bench.FFI] > 0 and r["ms"][bench.PEER] > 0
    assert "groupgemm C API fwd: no CUDA here" in capsys.readouterr().err


def test_check_falls_back_to_the_largest_group(on_cpu, monkeypatch, capsys):
    jitted = bench._jitted

    def peer_out_of_memory(case, method, pass_name, held):
        if method == bench.PEER:
            raise MemoryError("RESOURCE_EXHAUSTED: out of memory")
        return jitted(case, method, pass_name, held)

    monkeypatch.setattr(bench, "_jitted", peer_out_of_memory)
    case = bench.Case(TINY, 16, "skewed", 0)
    bench.check_case(case)
    assert "checking the largest group against jnp.dot" in capsys.readouterr().err


def test_checks_catch_a_c_api_on_other_data(on_cpu, monkeypatch):
    """The C API run on swapped sizes must fail both the check before timing
    and the checksums after each pass."""
    c_api = bench._c_api

    def swapped_sizes(case, pass_name, held, cleanups):
        sizes = list(case.host_sizes)
        sizes[0], sizes[1] = sizes[1], sizes[0]
        other = bench.Case.__new__(bench.Case)
        other.__dict__.update(case.__dict__, sizes=jnp.asarray(sizes, jnp.int32))
        return c_api(other, pass_name, held, cleanups)

    monkeypatch.setattr(bench, "_c_api", swapped_sizes)
    case = bench.Case(TINY, 16, "skewed", 0)
    assert case.host_sizes[0] != case.host_sizes[1]
    with pytest.raises(bench.CheckFailed, match="forward differs"):
        bench.check_case(case)
    for pass_name in bench.PASSES:
        args = bench.parse_args(["--passes", pass_name, "--warmup", "0", "--reps", "1"])
        with pytest.raises(bench.CheckFailed, match="outputs differ"):
            bench.case_records(case, args, RATES)


def test_leaving_a_method_deletes_its_arrays(on_cpu):
    case = bench.Case(TINY, 16, "uniform", 0)
    with bench.prepared(case, bench.C_API, "fwd+bwd") as (run, wait):
        y, (dx, dw) = wait(run())
    assert y.is_deleted() and dx.is_deleted() and dw.is_deleted()
    assert not case.w.is_deleted()
    case.free()
    assert case.w.is_deleted()


def test_the_groupgemm_methods_alternate_with_one_inner(on_cpu, monkeypatch):
    """FFI, C API, C API, FFI, ... one rep per block, the same calls per rep
    for both; jax.lax.ragged_dot after them, with its own."""
    blocks, reps = [], []
    prepared, run_rep = bench.prepared, bench.run_rep

    def logged_prepared(case, method, pass_name):
        blocks.append(method)
        return prepared(case, method, pass_name)

    def logged_rep(run, wait, inner):
        reps.append((blocks[-1], inner))
        return run_rep(run, wait, inner)

    inners = iter([3, 5])  # the pair's, then the peer's
    monkeypatch.setattr(bench, "prepared", logged_prepared)
    monkeypatch.setattr(bench, "run_rep", logged_rep)
    monkeypatch.setattr(bench, "calls_per_rep", lambda run, wait: next(inners))
    case = bench.Case(TINY, 16, "uniform", 0)
    args = bench.parse_args(["--warmup", "0", "--reps", "4", "--passes", "fwd"])
    (record,) = bench.case_records(case, args, RATES)
    ffi, c_api, peer = bench.FFI, bench.C_API, bench.PEER
    assert blocks == [ffi, c_api, c_api, ffi, ffi, c_api, c_api, ffi, peer]
    assert reps == [(m, 3) for m in blocks[:-1]] + [(peer, 5)] * 4
    assert [len(record["samples_ms"][m]) for m in (ffi, c_api)] == [4, 4]
    assert record["ms"][ffi] == statistics.median(record["samples_ms"][ffi])


def test_a_rep_holds_one_call_of_outputs(on_cpu):
    """Timing releases a call's outputs before the next call, so the FFI's
    fwd+bwd holds what the C API holds: one y, dx and dw."""
    case = bench.Case(TINY, 16, "uniform", 0)
    with bench.prepared(case, bench.FFI, "fwd+bwd") as (run, wait):
        one_call = sum(a.nbytes for a in jax.tree_util.tree_leaves(wait(run())))
        before = sum(a.nbytes for a in jax.live_arrays("cpu"))
        peak = []

        def probed():
            outputs = run()
            peak.append(sum(a.nbytes for a in jax.live_arrays("cpu")) - before)
            return outputs

        bench.run_rep(probed, wait, 4)
    assert peak == [one_call] * 4

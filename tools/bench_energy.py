"""tools/bench_energy.py: what a GPU at its power limit can do, beside our ops.

Compute-bound work on an H100 or H200 runs at the board's power limit, where
the clock, and so the matrix rate, is set by the energy each operation
costs. A weight gradient must do its FLOPs and also write G weight-sized
outputs; if the writes' energy comes out of the same budget, the two add up
in time instead of overlapping, and no kernel reaches the roofline of
docs/DESIGN.md, "Performance method", which takes the larger of the two
times. This benchmark reads the GPU it
runs on and puts the op beside the floor that its power limit sets:

  alone       each workload run for --seconds after --warm-seconds of it:
              ms a call, mean board power (NVML's energy counter over the
              interval), mean SM clock (sampled), joules a call; the
              workloads are the GPU idle, a dense 8192^3 bf16 torch.mm, a
              write-only stream (fill_ of a 4 GiB buffer) and a device copy,
              and groupgemm's wgrad and fprop of one preset;
  together    the wgrad's FLOPs as one dense product on one stream and its
              output bytes as fills on another, launched at once: the time
              cuBLAS and a write stream need for that work;
  model       P_idle + energy per FLOP x rate + energy per written byte x
              rate, the two energies from the dense and stream rows: at the
              dense product's power, F / dense rate + (written bytes /
              stream rate) x (P_stream - P_idle) / (P_dense - P_idle). It
              takes the stream's energy a byte, not its rate: TMA stores
              write faster than fill_ does.

  at limit   each groupgemm op's energy above idle divided by the power
              limit above idle: the time of a schedule of the same work whose
              every operation costs what it cost here. Where an op draws
              less than the limit, the gap between its time and this one is
              what a better schedule (overlapping memory-bound with
              compute-bound work, say) could buy before power caps it; an
              op at the limit can gain only by spending less energy. It is
              an estimate, not a bound: a lower clock spends less a
              operation.

The wgrad's time over each floor is printed last. The write stream writes a
constant: torch has no write-only kernel of random values that runs near
the DRAM's write rate (uniform_ and a broadcast copy of a random tile ran
at 0.36-0.39 of fill_'s rate on an H200), and a constant's bits cost the
DRAM less energy than a gradient's, so the model's floor is a lower bound;
P_idle is read with nothing running, so it is an estimate. The "together"
row measures those two kernels, whose write stream is slower than TMA
stores.
"""

import argparse
import sys
import time
from pathlib import Path
from typing import Callable

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from groupgemm import bench, presets  # noqa: E402
from groupgemm import torch as ggt  # noqa: E402
from groupgemm._power_meter import Meter  # noqa: E402


def together(mm: Callable[[], None], fill: Callable[[], None], fill_calls: int,
             reps: int) -> float:
    """Median ms of one mm on one stream and fill_calls of fill on another,
    both started at once."""
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    times = []
    for _ in range(reps + 1):  # the first run is a warm-up
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for stream, fn, calls in zip(streams, (mm, fill), (1, fill_calls)):
            stream.wait_event(start)
            with torch.cuda.stream(stream):
                for _ in range(calls):
                    fn()
        for stream in streams:
            torch.cuda.current_stream().wait_stream(stream)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times = sorted(times[1:])
    return times[len(times) // 2]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="tools/bench_energy.py",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="deepseek-v3",
                        help="one of " + ", ".join(p.name for p in presets.PRESETS))
    parser.add_argument("--tokens", type=int, default=presets.PREFILL_TOKENS)
    parser.add_argument("--routing", default="uniform", choices=presets.ROUTINGS)
    parser.add_argument("--warm-seconds", type=float, default=1.0)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--reps", type=int, default=5, help="runs of the 'together' row")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    meter = Meter()
    bf16 = dict(dtype=torch.bfloat16, device="cuda")
    side = 8192
    a, b, c = (torch.randn(side, side, **bf16) for _ in range(3))
    mm_tflop = 2 * side**3 / 1e12
    stream_bytes = 1 << 32
    target = torch.empty(stream_bytes // 2, **bf16)
    source = torch.randn(stream_bytes // 4, **bf16)
    copy_target = torch.empty_like(source)
    case = bench.make_case(presets.find(args.preset), args.tokens, args.routing, seed=0)
    m, n, k = case.x.shape[0], case.w.shape[1], case.x.shape[1]
    groups = case.preset.experts
    rows = case.rows
    wgrad_out = torch.empty(groups, n, k, **bf16)
    wgrad_tflop = 2 * rows * n * k / 1e12
    wgrad_write_gb = groups * n * k * 2 / 1e9
    wgrad_read_gb = rows * (n + k) * 2 / 1e9
    fprop_tflop = wgrad_tflop
    fprop_gb = (m * k + sum(1 for s in case.host_sizes if s) * n * k + m * n) * 2 / 1e9

    def mm():
        torch.mm(a, b, out=c)

    readings = [
        meter.read("idle", lambda: time.sleep(0.05), 0.5, args.seconds),
        meter.read("dense torch.mm 8192^3", mm, args.warm_seconds, args.seconds),
        meter.read("write stream (fill_)", lambda: target.fill_(1.0), args.warm_seconds,
                   args.seconds),
        meter.read("device copy", lambda: copy_target.copy_(source), args.warm_seconds,
                   args.seconds),
        meter.read("groupgemm wgrad", lambda: ggt.ragged_k_mm(case.dy, case.x, case.sizes,
                                                              out=wgrad_out),
                   args.warm_seconds, args.seconds),
        meter.read("groupgemm fprop", lambda: ggt.grouped_mm(case.x, case.w, case.sizes),
                   args.warm_seconds, args.seconds),
    ]
    idle, dense, stream, copy, wgrad, fprop = readings
    idle.calls = 0
    dense.tflop = mm_tflop
    stream.gbytes = stream_bytes / 1e9
    copy.gbytes = 2 * source.numel() * 2 / 1e9
    wgrad.tflop, wgrad.gbytes = wgrad_tflop, wgrad_write_gb + wgrad_read_gb
    fprop.tflop, fprop.gbytes = fprop_tflop, fprop_gb

    print(f"{meter.name}, power limit {meter.limit_watts:.0f} W; {args.preset} {args.tokens} "
          f"tokens {args.routing}: rows {rows}, n {n}, k {k}, G {groups}")
    print(f"{'workload':<24} {'ms/call':>9} {'W':>6} {'SM MHz':>7} {'J/call':>8} "
          f"{'TFLOP/s':>8} {'GB/s':>7}")
    for r in readings:
        rate = f"{r.tflop / r.ms * 1e3:8.1f}" if r.tflop else f"{'-':>8}"
        bandwidth = f"{r.gbytes / r.ms * 1e3:7.0f}" if r.gbytes else f"{'-':>7}"
        per_call = f"{r.ms:9.3f}" if r.calls else f"{'-':>9}"
        joules = f"{r.joules / r.calls:8.3f}" if r.calls else f"{'-':>8}"
        print(f"{r.name:<24} {per_call} {r.watts:6.0f} {r.sm_mhz:7.0f} {joules} {rate} {bandwidth}")

    dense_rate = mm_tflop / dense.ms  # TFLOP per ms
    stream_rate = stream.gbytes / stream.ms  # GB per ms
    compute_ms = wgrad_tflop / dense_rate
    write_ms = wgrad_write_gb / stream_rate
    share = (stream.watts - idle.watts) / (dense.watts - idle.watts)
    # The wgrad's work by library kernels: its FLOPs as one dense product
    # [rows', 8192] x [8192, 8192] (rows' a multiple of 128), its output
    # bytes as fills of a part of the stream buffer.
    mm_rows = max(128, round(wgrad_tflop * 1e12 / (2 * side * side) / 128) * 128)
    mm_a, mm_out = torch.randn(mm_rows, side, **bf16), torch.empty(mm_rows, side, **bf16)
    fill_calls = -(-int(wgrad_write_gb * 1e9) // stream_bytes)
    fill_part = target[: int(wgrad_write_gb * 1e9) // 2 // fill_calls]
    together_ms = together(lambda: torch.mm(mm_a, b, out=mm_out), lambda: fill_part.fill_(1.0),
                           fill_calls, args.reps)
    print(f"\nthe wgrad's {wgrad_tflop:.2f} TFLOP at the dense rate: {compute_ms:.3f} ms; its "
          f"{wgrad_write_gb:.2f} GB of output at the stream rate: {write_ms:.3f} ms")
    print(f"{'floor':<48} {'ms':>8} {'wgrad / floor':>14}")
    floors = [
        ("roofline (docs/DESIGN.md: the larger)",
         max(compute_ms, wgrad.gbytes / (copy.gbytes / copy.ms))),
        (f"together: torch.mm of {mm_rows} rows + {fill_calls} fill_", together_ms),
        (f"model: compute + writes x {share:.2f}", compute_ms + write_ms * share),
        ("compute + writes, in series", compute_ms + write_ms),
    ]
    for name, ms in floors:
        print(f"{name:<48} {ms:8.3f} {wgrad.ms / ms:14.3f}")
    print(f"{'groupgemm wgrad':<48} {wgrad.ms:8.3f}")

    copy_rate = copy.gbytes / copy.ms
    print(f"\n{'op':<16} {'ms':>8} {'W':>6} {'at limit':>9} {'roofline':>9}")
    for op in (wgrad, fprop):
        at_limit = op.ms * (op.watts - idle.watts) / (meter.limit_watts - idle.watts)
        roofline = max(op.tflop / dense_rate, op.gbytes / copy_rate)
        print(f"{op.name[len('groupgemm '):]:<16} {op.ms:8.3f} {op.watts:6.0f} {at_limit:9.3f} "
              f"{roofline:9.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""python -m groupgemm.bench: the torch ops beside torch's own ways to do the same.

For each MoE preset (groupgemm.presets), token count and routing, the
up-projection y[g rows] = x[g rows] @ w[g]^T (bf16, w [G, N, K]) is timed by
four methods, in the same run on the same GPU:

  groupgemm          groupgemm.torch.grouped_mm (one launch, sizes on the GPU)
  torch._grouped_mm  offsets = cumsum(sizes), w read as the column-major
                     [G, K, N] view it prefers
  loop               one cuBLAS torch.mm per non-empty group, the sizes
                     copied to the host beforehand (not timed: a loop's best case)
  dense              one torch.mm of the same FLOPs, [M, K] x [K, N]: the ceiling

each for the forward pass and forward+backward (input and weight gradients
through torch.autograd.grad; the loop keeps one weight leaf per expert, as
per-expert modules do), eagerly and replayed from a CUDA graph. A graph
replays the loop with the sizes it was captured with, so its loop figure is
a bound no real router could use. Time is the median over --reps runs of CUDA
events around each call, after --warmup calls and then --warm-ms of the same
calls (default 300, in batches that double until one takes 20 ms), so that
every figure, the machine rates' included, is taken at the clock the GPU
sustains under that work rather than a burst from idle, as `groupgemm bench
--warm-ms` times. groupgemm and torch._grouped_mm are warmed and timed
together, one call of each in turn (the order rotating), so that the clock's
drift over a measurement falls on both alike; the loop and the dense product
are timed alone. Before timing, each case's groupgemm result is checked
against the loop's.

Roofline efficiency (docs/DESIGN.md, "Performance method") = floor / time,
floor = max(FLOPs / the dense bf16 rate of an 8192^3 torch.mm, bytes / the
bandwidth of a large device-to-device copy), both measured in this run;
bytes count each input and output once, weights of non-empty groups only.
Output: a table of milliseconds, ratios to groupgemm and efficiencies;
--json writes every figure; --png draws the efficiencies as bar charts.
Without torch, --help still works; a run says what to install.
"""

from __future__ import annotations  # annotations name torch, which --help does without

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional

from . import _bench_report, _optional, presets

PROG = "python -m groupgemm.bench"
try:
    import torch

    from . import torch as ggt
except ModuleNotFoundError as error:
    if _optional.missing_framework(error) != "torch":
        raise
    torch = ggt = _optional.Absent(PROG, "torch")  # main() says what to install

METHODS = ("groupgemm", "torch._grouped_mm", "loop", "dense")
IN_TURN = ("groupgemm", "torch._grouped_mm")  # timed call by call in turn (measure)
PASSES = ("fwd", "fwd+bwd")
LAUNCHES = ("eager", "graph")


@dataclass
class Case:
    preset: presets.MoePreset
    tokens: int
    routing: str
    host_sizes: List[int]
    x: torch.Tensor  # [M, K]
    w: torch.Tensor  # [G, N, K]
    sizes: torch.Tensor  # [G] int32, on the case's device (the GPU when timed)
    ends: torch.Tensor  # cumsum(sizes), int32: torch._grouped_mm's offsets
    dy: torch.Tensor  # [M, N], the gradient fed to backward

    @property
    def rows(self) -> int:
        return sum(self.host_sizes)

    def groups(self):
        """(group, first row, end row) of each non-empty group."""
        start = 0
        for g, size in enumerate(self.host_sizes):
            if size:
                yield g, start, start + size
            start += size


def make_case(preset, tokens, routing, seed, device="cuda") -> Case:
    torch.manual_seed(seed)
    m, n, k = preset.rows(tokens), preset.n, preset.k
    host_sizes = presets.route(routing, m, preset.experts, seed)
    sizes = torch.tensor(host_sizes, dtype=torch.int32, device=device)
    bf16 = dict(dtype=torch.bfloat16, device=device)
    return Case(
        preset=preset,
        tokens=tokens,
        routing=routing,
        host_sizes=host_sizes,
        x=torch.randn(m, k, **bf16),
        w=torch.randn(preset.experts, n, k, **bf16) / k**0.5,
        sizes=sizes,
        ends=torch.cumsum(sizes, 0, dtype=torch.int32),
        dy=torch.randn(m, n, **bf16),
    )


# ---- the methods: each returns a callable that runs one pass -----------------


def _forward(case: Case, method: str) -> Callable[[], torch.Tensor]:
    x, w = case.x, case.w
    if method == "groupgemm":
        return lambda: ggt.grouped_mm(x, w, case.sizes)
    if method == "torch._grouped_mm":
        return lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=case.ends)
    if method == "dense":
        return lambda: torch.mm(x, w[0].t())

    def loop():
        y = torch.empty(x.shape[0], w.shape[1], dtype=x.dtype, device=x.device)
        for g, start, end in case.groups():
            torch.mm(x[start:end], w[g].t(), out=y[start:end])
        return y

    return loop


def _forward_backward(case: Case, method: str) -> Callable[[], tuple]:
    x = case.x.detach().requires_grad_()
    if method == "loop":
        experts = [case.w[g].detach().requires_grad_() for g in range(case.preset.experts)]
        groups = list(case.groups())

        def loop():
            y = torch.cat([torch.mm(x[s:e], experts[g].t()) for g, s, e in groups])
            leaves = [x] + [experts[g] for g, _, _ in groups]
            return torch.autograd.grad(y, leaves, case.dy[: y.shape[0]])

        return loop
    w = (case.w[0] if method == "dense" else case.w).detach().requires_grad_()
    product = {
        "groupgemm": lambda: ggt.grouped_mm(x, w, case.sizes),
        "torch._grouped_mm": lambda: torch._grouped_mm(x, w.transpose(-2, -1), offs=case.ends),
        "dense": lambda: torch.mm(x, w.t()),
    }[method]
    return lambda: torch.autograd.grad(product(), (x, w), case.dy)


# ---- timing -------------------------------------------------------------------


def _graphed(fn: Callable) -> Callable:
    """fn captured in a CUDA graph (after warm-up on a side stream, as capture needs)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def keep_running(fn: Callable, ms: float) -> int:
    """Runs fn for `ms` ms, in batches that double until one takes 20 ms, so
    that waiting for a batch leaves the GPU idle for a small share of it.
    Returns the calls made, all complete on return."""
    start = time.perf_counter()
    calls, batch = 0, 1
    while (time.perf_counter() - start) * 1e3 < ms:
        batch_start = time.perf_counter()
        for _ in range(batch):
            fn()
        torch.cuda.synchronize()
        calls += batch
        if (time.perf_counter() - batch_start) * 1e3 < 20.0:
            batch *= 2
    return calls


def time_in_turn(fns: Dict[str, Callable], warmup: int, reps: int,
                 warm_ms: float = 0.0) -> Dict[str, float]:
    """Median ms of each of `fns` over `reps` rounds. A round times one call
    of each in turn, the order rotating from round to round, so that drift
    of the clock or the temperature falls on every method alike. Before the
    rounds: `warmup` untimed rounds, then `warm_ms` of them (keep_running)."""
    names = list(fns)

    def every_method():
        for name in names:
            fns[name]()

    for _ in range(warmup):
        every_method()
    keep_running(every_method, warm_ms)
    torch.cuda.synchronize()
    times = {name: [] for name in names}
    for r in range(reps):
        for i in range(len(names)):
            name = names[(r + i) % len(names)]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fns[name]()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
    return {name: statistics.median(samples) for name, samples in times.items()}


def time_ms(fn: Callable, warmup: int, reps: int, warm_ms: float = 0.0) -> float:
    """time_in_turn of fn alone."""
    return time_in_turn({"fn": fn}, warmup, reps, warm_ms)["fn"]


def machine_rates(warmup: int, reps: int, warm_ms: float = 0.0) -> Dict[str, float]:
    """Dense bf16 FLOP/s (8192^3 torch.mm) and copy bytes/s (read + write)."""
    square = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    flops = 2 * 8192**3 / (time_ms(lambda: torch.mm(square, square), warmup, reps, warm_ms) * 1e-3)
    source = torch.empty(1 << 31, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    seconds = time_ms(lambda: target.copy_(source), warmup, reps, warm_ms) * 1e-3
    return {"dense_flops": flops, "copy_bytes_per_s": 2 * source.numel() / seconds}


def relative_error(got, want, rows: int = 4096) -> float:
    """||got - want|| / ||want|| in fp32, `rows` leading rows at a time: no
    fp32 copy of a whole output (DeepSeek-V3's at 16384 tokens, 3.8 GB, had
    run a bench out of memory beside its operands)."""
    error = norm = 0.0
    for start in range(0, want.shape[0], rows):
        g, w = got[start:start + rows].float(), want[start:start + rows].float()
        error += float((g - w).square().sum())
        norm += float(w.square().sum())
    return (error / max(norm, 1e-60)) ** 0.5


def check_case(case: Case) -> None:
    """groupgemm's forward against the cuBLAS loop: a benchmark of wrong results is worthless."""
    with torch.no_grad():
        ours, loop = _forward(case, "groupgemm")(), _forward(case, "loop")()
    difference = relative_error(ours[: case.rows], loop[: case.rows])
    if difference > 1e-2:
        raise RuntimeError(
            "groupgemm differs from the cuBLAS loop by %.3g (relative norm)" % difference
        )


def _time_methods(case: Case, pass_name: str, launch: str, methods: List[str],
                  args) -> Optional[Dict[str, float]]:
    """time_in_turn of `methods` on one pass and launch; None (and the reason
    on stderr) where one fails, as a method out of memory does."""
    try:
        with torch.set_grad_enabled(pass_name != "fwd"):
            runners = {}
            for method in methods:
                fn = _forward(case, method) if pass_name == "fwd" else _forward_backward(case, method)
                runners[method] = _graphed(fn) if launch == "graph" else fn
            return time_in_turn(runners, args.warmup, args.reps, args.warm_ms)
    except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
        print(
            "  %s %s %s: %s" % ("+".join(methods), pass_name, launch, str(e).splitlines()[0]),
            file=sys.stderr,
        )
        return None
    finally:
        runners = None  # the graphs and their memory pools, before empty_cache
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def measure(case: Case, pass_name: str, launch: str, args) -> Dict[str, Optional[float]]:
    """ms of every method. groupgemm and torch._grouped_mm, the pair the
    figures compare most closely, are timed in turn (time_in_turn); where
    the pair fails together, as out of memory, each is timed alone. The
    loop and the dense product are timed alone."""
    paired = [m for m in IN_TURN if m != "torch._grouped_mm" or hasattr(torch, "_grouped_mm")]
    ms = dict.fromkeys(METHODS)
    together = _time_methods(case, pass_name, launch, paired, args) if len(paired) > 1 else None
    ms.update(together or {})
    for method in METHODS:
        if ms[method] is None and (method in paired or method not in IN_TURN):
            ms.update(_time_methods(case, pass_name, launch, [method], args) or {})
    return ms


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--presets",
        default=",".join(p.name for p in presets.PRESETS),
        help="comma-separated preset names (default: all)",
    )
    parser.add_argument(
        "--tokens",
        default="%d,%d" % (presets.DECODE_TOKENS, presets.PREFILL_TOKENS),
        help="comma-separated token counts (default: decode 2048, prefill 16384)",
    )
    parser.add_argument(
        "--shapes",
        help="instead of --presets and --tokens: comma-separated GxROWSxNxK problems, G experts "
        "of ROWS rows each under uniform routing, N outputs (even), K inputs; e.g. 4x8192x4096x7168",
    )
    parser.add_argument(
        "--routing", default=",".join(presets.ROUTINGS), help="uniform, skewed or both"
    )
    parser.add_argument("--passes", default=",".join(PASSES), help="fwd, fwd+bwd or both")
    parser.add_argument("--launches", default=",".join(LAUNCHES), help="eager, graph or both")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument(
        "--warm-ms",
        type=warm_ms_value,
        default=300.0,
        help="ms each figure's work runs before it is timed, at the clock the GPU sustains "
        "(0 to 60000; default 300; 0: after --warmup calls only)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write every figure to this JSON file")
    parser.add_argument("--png", help="draw the efficiencies to this PNG file")
    return parser.parse_args(argv)


def case_records(case: Case, args, rates: Dict[str, float]) -> List[dict]:
    """Every method of every requested pass and launch, on one case."""
    records = []
    for pass_name in _split(args.passes):
        used = sum(1 for _ in case.groups())
        floor = _bench_report.floor_ms(case.rows, used, case.preset.n, case.preset.k, pass_name,
                                       rates)
        for launch in _split(args.launches):
            ms = measure(case, pass_name, launch, args)
            efficiency = {m: None if t is None else floor / t for m, t in ms.items()}
            records.append(
                {
                    "preset": case.preset.name,
                    "tokens": case.tokens,
                    "routing": case.routing,
                    "pass": pass_name,
                    "launch": launch,
                    "rows": case.rows,
                    "n": case.preset.n,
                    "k": case.preset.k,
                    "groups": case.preset.experts,
                    "empty_groups": case.host_sizes.count(0),
                    "floor_ms": floor,
                    "ms": ms,
                    "efficiency": efficiency,
                }
            )
    return records


def warm_ms_value(text: str) -> float:
    """--warm-ms's value: ms in 0 .. 60000 (an argparse type)."""
    value = float(text)
    if not 0.0 <= value <= 60000.0:
        raise argparse.ArgumentTypeError("--warm-ms %s is not in 0 .. 60000" % text)
    return value


def _split(text: str) -> List[str]:
    return [item for item in text.split(",") if item]


def shape_problem(spec: str):
    """(preset, tokens) of a GxROWSxNxK problem: G experts of ROWS rows, top-1."""
    try:
        g, rows, n, k = (int(v) for v in spec.lower().split("x"))
    except ValueError:
        raise ValueError("shape %r is not GxROWSxNxK" % spec) from None
    if min(g, rows, n, k) < 1 or n % 2:
        raise ValueError("shape %r: G, ROWS, N, K must be positive and N even" % spec)
    name = "g%dx%d-n%d-k%d" % (g, rows, n, k)
    return presets.MoePreset(name, hidden=k, ffn=n // 2, experts=g, top_k=1), g * rows


def problems(args):
    """The (preset, tokens) pairs to measure."""
    if args.shapes:
        return [shape_problem(spec) for spec in _split(args.shapes)]
    return [
        (presets.find(name), int(tokens))
        for name in _split(args.presets)
        for tokens in _split(args.tokens)
    ]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if _optional.report_missing(PROG, "torch"):
        return 1
    if not torch.cuda.is_available():
        print("groupgemm.bench needs a CUDA GPU", file=sys.stderr)
        return 1
    rates = machine_rates(args.warmup, args.reps, args.warm_ms)
    rates["warm_ms"] = args.warm_ms
    device = torch.cuda.get_device_name()
    print(
        "%s: dense bf16 %.0f TFLOP/s, copy %.0f GB/s; each figure timed after %g ms of its work"
        % (device, rates["dense_flops"] / 1e12, rates["copy_bytes_per_s"] / 1e9, args.warm_ms)
    )
    records = []
    for preset, tokens in problems(args):
        for routing in _split(args.routing):
            case = make_case(preset, tokens, routing, args.seed)
            check_case(case)
            records += case_records(case, args, rates)
            del case
            torch.cuda.empty_cache()
    print()
    _bench_report.print_table(records, METHODS)
    if args.json:
        _bench_report.write_json(args.json, device, {"torch": torch.__version__},
                                 " ".join([PROG] + argv),
                                 rates, records)
    if args.png:
        _bench_report.draw_png(records, METHODS, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())

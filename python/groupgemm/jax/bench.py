"""python -m groupgemm.jax.bench: groupgemm.jax.ragged_dot beside jax.lax.ragged_dot.

For each MoE preset (groupgemm.presets), token count and routing, the
up-projection y[g rows] = x[g rows] @ w[g]^T (bf16, w [G, N, K]) is timed by
two methods, jitted, in the same run on the same GPU:

  groupgemm           groupgemm.jax.ragged_dot(x, w, sizes, rhs_layout="nk"):
                      the FFI custom call (one small launch clearing the
                      workspace and any rows past the last group, then the
                      library's product); its forward is what the C++
                      `groupgemm bench` times for the same problem, plus
                      that small launch
  jax.lax.ragged_dot  XLA's default lowering, w given as the [G, K, N] it
                      expects (transposed outside the timed function)

each for the forward pass and forward+backward (jax.value_and_grad in x and
w of sum(y * dy): the value keeps the forward product from being
dropped). Time: each rep runs the jitted function `inner` times back to
back (JAX dispatches asynchronously, so the GPU stays busy and host
dispatch is hidden once a call takes longer than dispatching it) and waits
with block_until_ready; the figure is the median over --reps reps of the
time per call, after --warmup calls. A method that fails (out of memory, as
the default lowering may for the backward of large presets) shows n/a.
Before timing, groupgemm's forward is checked against jax.lax.ragged_dot.

Roofline efficiency (DESIGN §6) = floor / time, floor = max(FLOPs / the
dense bf16 rate of an 8192^3 jnp.dot, bytes / the bandwidth of a large
elementwise copy), both measured in this run; bytes count each input and
output once, weights of non-empty groups only. Output: the same table as
python -m groupgemm.bench; --json writes every figure.
"""

import argparse
import statistics
import sys
import time
from typing import Callable, Dict, List, Optional

import jax
import jax.numpy as jnp
import numpy as np

from .. import _bench_report, presets
from . import ragged_dot

METHODS = ("groupgemm", "jax.lax.ragged_dot")
PASSES = ("fwd", "fwd+bwd")
_TARGET_REP_SECONDS = 0.01  # inner calls per rep: about this long, at most 20


class Case:
    def __init__(self, preset, tokens, routing, seed):
        self.preset, self.tokens, self.routing = preset, tokens, routing
        m, n, k = preset.rows(tokens), preset.n, preset.k
        self.host_sizes = presets.route(routing, m, preset.experts, seed)
        keys = jax.random.split(jax.random.PRNGKey(seed), 3)
        self.x = jax.random.normal(keys[0], (m, k), jnp.bfloat16)
        self.w = (jax.random.normal(keys[1], (preset.experts, n, k), jnp.float32)
                  / np.sqrt(k)).astype(jnp.bfloat16)
        self.w_kn = jnp.swapaxes(self.w, 1, 2).copy()  # [G, K, N] for jax.lax.ragged_dot
        self.dy = jax.random.normal(keys[2], (m, n), jnp.bfloat16)
        self.sizes = jnp.asarray(self.host_sizes, jnp.int32)

    @property
    def rows(self) -> int:
        return sum(self.host_sizes)


def _product(method: str):
    if method == "groupgemm":
        return lambda x, w, s: ragged_dot(x, w, s, rhs_layout="nk")
    return lambda x, w, s: jax.lax.ragged_dot(x, w, s)


def _weight(case: Case, method: str):
    return case.w if method == "groupgemm" else case.w_kn


def runner(case: Case, method: str, pass_name: str) -> Callable[[], object]:
    product, w = _product(method), _weight(case, method)
    if pass_name == "fwd":
        fn = jax.jit(product)
        return lambda: fn(case.x, w, case.sizes)

    def loss(x, w_, s, dy):
        return (product(x, w_, s).astype(jnp.float32) * dy.astype(jnp.float32)).sum()

    # value_and_grad: the loss is linear in the product, so with grad alone
    # XLA would drop the forward product and time the backward only.
    fn = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
    return lambda: fn(case.x, w, case.sizes, case.dy)


def time_ms(fn: Callable[[], object], warmup: int, reps: int) -> float:
    for _ in range(warmup):
        jax.block_until_ready(fn())
    start = time.perf_counter()
    jax.block_until_ready(fn())
    once = time.perf_counter() - start
    inner = int(max(1, min(20, _TARGET_REP_SECONDS / max(once, 1e-6))))
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(inner):
            out = fn()
        jax.block_until_ready(out)
        times.append((time.perf_counter() - start) / inner)
    return 1e3 * statistics.median(times)


def machine_rates(warmup: int, reps: int) -> Dict[str, float]:
    """Dense bf16 FLOP/s (8192^3 jnp.dot) and copy bytes/s (read + write)."""
    square = jnp.ones((8192, 8192), jnp.bfloat16)
    dot = jax.jit(lambda a: jnp.dot(a, a, preferred_element_type=jnp.bfloat16))
    flops = 2 * 8192**3 / (time_ms(lambda: dot(square), warmup, reps) * 1e-3)
    # A 1 GiB fp32 elementwise pass (XLA vectorizes it; byte-wide types it
    # does not, and would understate the bandwidth ~3x).
    source = jnp.zeros((1 << 28,), jnp.float32)
    copy = jax.jit(lambda a: a * 2.0)
    bandwidth = 2 * 4 * source.size / (time_ms(lambda: copy(source), warmup, reps) * 1e-3)
    return {"dense_flops": flops, "copy_bytes_per_s": bandwidth}


def check_case(case: Case) -> None:
    """groupgemm's forward against jax.lax.ragged_dot's (when that one runs),
    as a relative norm computed on the GPU."""
    ours = runner(case, "groupgemm", "fwd")()[: case.rows].astype(jnp.float32)
    try:
        theirs = runner(case, "jax.lax.ragged_dot", "fwd")()[: case.rows].astype(jnp.float32)
        difference = float(jnp.linalg.norm(ours - theirs) /
                           jnp.maximum(jnp.linalg.norm(theirs), 1e-30))
    except Exception as e:  # noqa: BLE001 (the peer failing is reported, not fatal)
        print("  check skipped: jax.lax.ragged_dot failed: %s" % str(e).splitlines()[0],
              file=sys.stderr)
        return
    if difference > 1e-2:
        raise RuntimeError(
            "groupgemm differs from jax.lax.ragged_dot by %.3g (relative norm)" % difference)


def measure(case: Case, pass_name: str, method: str, args) -> Optional[float]:
    try:
        return time_ms(runner(case, method, pass_name), args.warmup, args.reps)
    except Exception as e:  # noqa: BLE001 (XlaRuntimeError: out of memory and the like)
        print("  %s %s: %s" % (method, pass_name, str(e).splitlines()[0]), file=sys.stderr)
        return None


def case_records(case: Case, args, rates: Dict[str, float]) -> List[dict]:
    records = []
    for pass_name in _split(args.passes):
        used = sum(1 for s in case.host_sizes if s)
        floor = _bench_report.floor_ms(case.rows, used, case.preset.n, case.preset.k, pass_name,
                                       rates)
        ms = {m: measure(case, pass_name, m, args) for m in METHODS}
        records.append({
            "preset": case.preset.name,
            "tokens": case.tokens,
            "routing": case.routing,
            "pass": pass_name,
            "launch": "jit",
            "rows": case.rows,
            "n": case.preset.n,
            "k": case.preset.k,
            "groups": case.preset.experts,
            "empty_groups": case.host_sizes.count(0),
            "floor_ms": floor,
            "ms": ms,
            "efficiency": {m: None if t is None else floor / t for m, t in ms.items()},
        })
    return records


def _split(text: str) -> List[str]:
    return [item for item in text.split(",") if item]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m groupgemm.jax.bench",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default=",".join(p.name for p in presets.PRESETS),
                        help="comma-separated preset names (default: all)")
    parser.add_argument("--tokens",
                        default="%d,%d" % (presets.DECODE_TOKENS, presets.PREFILL_TOKENS),
                        help="comma-separated token counts (default: decode 2048, prefill 16384)")
    parser.add_argument("--routing", default=",".join(presets.ROUTINGS),
                        help="uniform, skewed or both")
    parser.add_argument("--passes", default=",".join(PASSES), help="fwd, fwd+bwd or both")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write every figure to this JSON file")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        print("groupgemm.jax.bench needs a GPU that jax sees", file=sys.stderr)
        return 1
    rates = machine_rates(args.warmup, args.reps)
    print("%s: dense bf16 %.0f TFLOP/s, copy %.0f GB/s (jax %s)" % (
        gpu.device_kind, rates["dense_flops"] / 1e12, rates["copy_bytes_per_s"] / 1e9,
        jax.__version__))
    records = []
    for name in _split(args.presets):
        for tokens in (int(t) for t in _split(args.tokens)):
            for routing in _split(args.routing):
                # A case the GPU cannot hold (the default lowering's
                # intermediates) is reported and skipped, not fatal.
                try:
                    case = Case(presets.find(name), tokens, routing, args.seed)
                    check_case(case)
                    new = case_records(case, args, rates)
                    del case
                except Exception as e:  # noqa: BLE001
                    print("  %s %d %s skipped: %s" % (name, tokens, routing,
                                                      str(e).splitlines()[0]), file=sys.stderr)
                    new = []
                for r in new:  # as measured, so a later failure loses nothing
                    print("%s %d %s %s: %s" % (r["preset"], r["tokens"], r["routing"], r["pass"],
                                               r["ms"]), flush=True)
                records += new
                jax.clear_caches()
    print()
    _bench_report.print_table(records, METHODS)
    if args.json:
        _bench_report.write_json(args.json, gpu.device_kind, {"jax": jax.__version__},
                                 " ".join(["python -m groupgemm.jax.bench"] + argv),
                                 rates, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())

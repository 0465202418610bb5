"""python -m groupgemm.jax.bench: groupgemm.jax.ragged_dot beside the C API
call it wraps and beside jax.lax.ragged_dot.

For each MoE preset (groupgemm.presets), token count and routing, the
up-projection y[g rows] = x[g rows] @ w[g]^T (bf16 x [M, K], w [G, N, K],
int32 sizes on the device) is timed by three methods, in the same run on the
same GPU and the same input arrays:

  groupgemm           groupgemm.jax.ragged_dot(x, w, sizes, rhs_layout="nk"),
                      jitted: the FFI custom call, on XLA's stream. Each
                      product is one gg_grouped_gemm launch; the ragged-M
                      ones (the product, dgrad) also write zeros to any rows
                      past the last group (GG_GEMM_ZERO_UNUSED_ROWS), as
                      ragged_dot defines them.
  groupgemm C API     gg_grouped_gemm called directly through the ctypes
                      binding (groupgemm.core builds the descriptor, with the
                      same flags) on the device addresses of the same JAX
                      arrays, writing into outputs JAX allocated, with one
                      workspace allocated and zeroed once; on the legacy
                      default stream, after the arrays are ready. The same
                      descriptors and kernels as the FFI's, without XLA's
                      dispatch.
  jax.lax.ragged_dot  XLA's default lowering, jitted, w given as the [G, K, N]
                      it expects (transposed before timing).

each for the forward pass ("fwd") and forward+backward ("fwd+bwd": y and the
vjp of the product at a fixed cotangent dy, (y, (dx, dw)) from jax.vjp, as the
torch bench's autograd.grad(y, (x, w), dy)). The C API's fwd+bwd is the three
launches groupgemm's VJP makes: the product, dgrad dx[g rows] = dy[g rows] @
w[g] (w read as [G, K, N] in place) and wgrad dw[g] = dy[g rows]^T @ x[g rows]
(ragged-K). "FFI / C API" = groupgemm time / groupgemm C API time: what XLA's
dispatch adds to the bare launches (1.00: nothing). --methods times a
subset: the default lowering alone in its own process, say, where the
arrays of the other methods and presets would leave its memory-hungry
lowering too little.

Time: a rep runs a method `inner` times back to back, then waits
(block_until_ready for the jitted methods, whose dispatch is asynchronous;
cudaDeviceSynchronize for the C API, whose launches are); its time / inner
is one sample, and a method's figure is the median of --reps samples. A rep
lasts about 25 ms (at most 200 calls), so what it pays once (the first
dispatch reaching an idle GPU, the wait's wake-up, which differ between the
methods) is a small share of a sample. Before its reps a method runs
--warmup calls (the first compiles) and then, when --warmup > 0, keeps
running reps for 50 ms, so that the GPU's clocks have left the idle state
of a compilation. The two groupgemm methods are timed in alternating
blocks, one rep each, with the same `inner` (FFI, C API, C API, FFI, FFI,
...): drift of the clocks or temperature over a pass falls on both alike,
not on whichever ran first. jax.lax.ragged_dot is timed after them, the
same way, with its own `inner`.

Memory: a case holds x, w, dy and the sizes; each method's own arrays (the
transposed w, the C API's outputs and workspace) and its outputs exist only
while one block of that method runs, so the two groupgemm methods never
hold their outputs at the same time. Within a rep, a jitted call's outputs
are released before the next call is dispatched: the FFI holds one set of
outputs, like the C API, which writes the same arrays every call (holding
the previous call's outputs through the next call put a second 20 GiB dw
beside w on Llama-4 Maverick). A method that fails (out of memory, as the
default lowering may for the backward of large presets) shows n/a and the
others still run.

Checks, before timing: groupgemm's forward against jax.lax.ragged_dot's
(relative norm), or where that one fails, against jnp.dot on the largest
group; and the C API's forward against the FFI's, bit for bit (the same
kernel on the same data). After each pass is timed, the outputs of the two
groupgemm methods are compared again, both passes, through a checksum of
their bits.

Roofline efficiency (docs/DESIGN.md, "Performance method") = floor / time,
floor = max(FLOPs / the dense bf16 rate of an 8192^3 jnp.dot, bytes / the
bandwidth of a large elementwise copy), both measured in this run; bytes
count each input and output once, weights of non-empty groups only.
Output: the same table as python -m groupgemm.bench, plus the FFI / C API
column; --json writes every figure ("ffi_over_c_api" per record, and each
method's samples). With JAX on the CPU (the tests), both groupgemm methods
run the library's reference path. Without jax, --help still works; a run
says what to install.
"""

import argparse
import contextlib
import ctypes
import ctypes.util
import gc
import os
import statistics
import sys
import time
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np

from .. import _bench_report, _capi, _optional, core, presets

PROG = "python -m groupgemm.jax.bench"
try:
    import jax
    import jax.numpy as jnp

    from . import _ops, ragged_dot
except ModuleNotFoundError as error:
    if _optional.missing_framework(error) != "jax":
        raise
    jax = jnp = _ops = ragged_dot = _optional.Absent(PROG, "jax")  # main() says what to install

FFI, C_API, PEER = METHODS = ("groupgemm", "groupgemm C API", "jax.lax.ragged_dot")
# Table columns (heading, numerator, denominator): a ratio above 1 means the
# denominator is faster.
RATIOS = (("%s / ours" % PEER, PEER, FFI), ("FFI / C API", FFI, C_API))
PASSES = ("fwd", "fwd+bwd")
_TARGET_REP_SECONDS = 0.025  # a rep's calls: about this long...
_MAX_CALLS_PER_REP = 200  # ...and at most this many
_WARMUP_SECONDS = 0.05  # reps run untimed this long after the warm-up calls
_WORKSPACE_ALIGNMENT = 256  # what GPU paths demand of a workspace, as the FFI handlers align it
_TOLERANCE = 1e-2  # relative norm against a reference


class Case:
    """One problem's shared inputs: x [M, K], w [G, N, K], dy [M, N] (bf16)
    and the sizes [G] (int32), on JAX's default device."""

    def __init__(self, preset, tokens, routing, seed):
        self.preset, self.tokens, self.routing = preset, tokens, routing
        m, n, k = preset.rows(tokens), preset.n, preset.k
        self.host_sizes = presets.route(routing, m, preset.experts, seed)
        keys = jax.random.split(jax.random.PRNGKey(seed), 3)
        self.x = jax.random.normal(keys[0], (m, k), jnp.bfloat16)
        self.w = _weights(keys[1], preset.experts, n, k)
        self.dy = jax.random.normal(keys[2], (m, n), jnp.bfloat16)
        self.sizes = jnp.asarray(self.host_sizes, jnp.int32)
        self.device = next(iter(self.x.devices()))
        # (method, pass) -> the jitted function: compiled once, whatever
        # the number of blocks that method is timed in.
        self.jitted: Dict[Tuple[str, str], Callable] = {}

    @property
    def rows(self) -> int:
        return sum(self.host_sizes)

    def free(self) -> None:
        for array in (self.x, self.w, self.dy, self.sizes):
            array.delete()
        self.jitted.clear()


def _weights(key, groups: int, n: int, k: int):
    """[G, N, K] bf16 ~ N(0, 1/K), drawn one expert at a time: an fp32 draw
    of the whole stack would need three times its bytes at once."""

    def draw(key):
        return (jax.random.normal(key, (n, k), jnp.float32) / np.sqrt(k)).astype(jnp.bfloat16)

    return jax.jit(lambda keys: jax.lax.map(draw, keys))(jax.random.split(key, groups))


# ---- the methods: (run, wait) pairs ---------------------------------------------
#
# run() starts one call and returns its outputs (y, or (y, (dx, dw))) without
# waiting; wait(outputs) waits for them and returns them.


def _jitted(case: Case, method: str, pass_name: str, held: List) -> Callable[[], object]:
    if method == FFI:
        w = case.w

        def product(x, w_, s):
            return ragged_dot(x, w_, s, rhs_layout="nk")
    else:
        w = jnp.swapaxes(case.w, 1, 2)  # [G, K, N], as jax.lax.ragged_dot expects
        held.append(w)
        product = jax.lax.ragged_dot
    fn = case.jitted.get((method, pass_name))
    if pass_name == "fwd":
        fn = fn or jax.jit(product)
        case.jitted[method, pass_name] = fn
        return lambda: fn(case.x, w, case.sizes)

    def forward_backward(x, w_, s, dy):
        y, vjp = jax.vjp(lambda x_, w__: product(x_, w__, s), x, w_)
        return y, vjp(dy)

    fn = fn or jax.jit(forward_backward)
    case.jitted[method, pass_name] = fn
    return lambda: fn(case.x, w, case.sizes, case.dy)


def _cuda_runtime() -> ctypes.CDLL:
    """The CUDA runtime in this process: the one libgroupgemm.so links (ldd:
    libcudart.so.<major>), found among the loaded objects once the library is
    loaded, else wherever ctypes finds one. Any runtime in the process
    addresses the same primary context, so its synchronizations cover the
    library's launches."""
    _capi.library()
    loaded = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith("libcudart.so"):
                loaded.append(fields[5].strip())
    path = loaded[0] if loaded else ctypes.util.find_library("cudart")
    if path is None:
        raise RuntimeError("no CUDA runtime (libcudart.so) is loaded or installed")
    runtime = ctypes.CDLL(path)
    for name, argtypes in (("cudaSetDevice", [ctypes.c_int]), ("cudaDeviceSynchronize", [])):
        getattr(runtime, name).argtypes = argtypes
        getattr(runtime, name).restype = ctypes.c_int
    runtime.cudaGetErrorString.argtypes = [ctypes.c_int]
    runtime.cudaGetErrorString.restype = ctypes.c_char_p
    return runtime


def _cuda_call(runtime: ctypes.CDLL, name: str, *args) -> None:
    error = getattr(runtime, name)(*args)
    if error:
        raise RuntimeError("%s: %s" % (name, runtime.cudaGetErrorString(error).decode()))


def _c_api(case: Case, pass_name: str, held: List, cleanups: List) -> Tuple[Callable, Callable]:
    """gg_grouped_gemm through the ctypes binding, on the case's arrays."""
    on_gpu = case.device.platform != "cpu"
    if on_gpu:
        runtime = _cuda_runtime()
        _cuda_call(runtime, "cudaSetDevice", case.device.local_hardware_id)

        def synchronize():  # the whole device: whichever runtime instance launched
            _cuda_call(runtime, "cudaDeviceSynchronize")

        cleanups.append(synchronize)  # before the outputs go back to JAX
    else:
        def synchronize():  # the reference path returns when it is done
            pass
    (m, k), (groups, n, _) = case.x.shape, case.w.shape
    outputs = [jnp.zeros((m, n), jnp.bfloat16)]
    if pass_name == "fwd+bwd":
        outputs += [jnp.zeros((m, k), jnp.bfloat16), jnp.zeros((groups, n, k), jnp.bfloat16)]
    held += outputs
    arrays = dict(x=case.x, w=case.w, dy=case.dy, sizes=case.sizes, y=outputs[0])
    if pass_name == "fwd+bwd":
        arrays.update(dx=outputs[1], dw=outputs[2])
    jax.block_until_ready(list(arrays.values()))
    view = {name: _ops._operand(name, a, a.unsafe_buffer_pointer()) for name, a in arrays.items()}
    path = core.path_for("cuda" if on_gpu else "cpu")
    descs = [core.ragged_m(view["x"], view["w"], view["y"], view["sizes"], w_layout="nk",
                           path=path, zero_unused_rows=True)]
    if pass_name == "fwd+bwd":
        descs += [
            core.ragged_m(view["dy"], view["w"], view["dx"], view["sizes"], w_layout="kn",
                          path=path, zero_unused_rows=True),
            core.ragged_k(view["dy"], view["x"], view["dw"], view["sizes"], path=path),
        ]
    nbytes = max(core.workspace_size(desc) for desc in descs)
    workspace = jax.block_until_ready(jnp.zeros((nbytes + _WORKSPACE_ALIGNMENT,), jnp.uint8))
    held.append(workspace)
    start = workspace.unsafe_buffer_pointer()
    aligned = -(-start // _WORKSPACE_ALIGNMENT) * _WORKSPACE_ALIGNMENT
    workspace_bytes = workspace.size - (aligned - start)
    result = outputs[0] if pass_name == "fwd" else (outputs[0], tuple(outputs[1:]))

    def run():
        for desc in descs:
            core.launch(desc, aligned, workspace_bytes, 0)
        return result

    def wait(outputs):
        synchronize()
        return outputs

    return run, wait


@contextlib.contextmanager
def prepared(case: Case, method: str, pass_name: str) -> Iterator[Tuple[Callable, Callable]]:
    """(run, wait) of one method and pass. The method's own arrays live only
    inside the block; leaving it deletes them, whatever happened."""
    held, cleanups = [], []
    try:
        if method == C_API:
            yield _c_api(case, pass_name, held, cleanups)
        else:
            yield _jitted(case, method, pass_name, held), jax.block_until_ready
    finally:
        try:
            for cleanup in cleanups:
                cleanup()
        finally:
            for array in held:
                array.delete()
            del held[:]
            gc.collect()


# ---- timing ------------------------------------------------------------------------


def run_rep(run: Callable[[], object], wait: Callable[[object], object], inner: int) -> float:
    """Seconds per call of `inner` calls back to back, the last one waited
    for. Each call's outputs are released before the next call is made, so
    a jitted method holds one set of outputs at a time, as the C API does."""
    start = time.perf_counter()
    out = None
    for _ in range(inner):
        out = None
        out = run()
    wait(out)
    return (time.perf_counter() - start) / inner


def calls_per_rep(run: Callable[[], object], wait: Callable[[object], object]) -> int:
    """Calls that make a rep about _TARGET_REP_SECONDS long, from one call."""
    once = run_rep(run, wait, 1)
    return int(max(1, min(_MAX_CALLS_PER_REP, _TARGET_REP_SECONDS / max(once, 1e-6))))


def warm_up(run: Callable[[], object], wait: Callable[[object], object], warmup: int,
            inner: Optional[int] = None) -> int:
    """Runs `warmup` calls, each waited for (the first compiles); sets
    `inner` from one more call when it is not given; then, when warmup > 0,
    runs reps of `inner` calls for _WARMUP_SECONDS. Returns `inner`."""
    for _ in range(warmup):
        wait(run())
    if inner is None:
        inner = calls_per_rep(run, wait)
    start = time.perf_counter()
    while warmup > 0 and time.perf_counter() - start < _WARMUP_SECONDS:
        run_rep(run, wait, inner)
    return inner


def time_ms(run: Callable[[], object], warmup: int, reps: int,
            wait: Optional[Callable[[object], object]] = None) -> float:
    """Median ms per call over `reps` reps of one method, after warm_up;
    `wait` defaults to jax.block_until_ready."""
    wait = jax.block_until_ready if wait is None else wait
    inner = warm_up(run, wait, warmup)
    return 1e3 * statistics.median(run_rep(run, wait, inner) for _ in range(reps))


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


# ---- checks -------------------------------------------------------------------------


def _bits(array):
    """The array's bits as unsigned integers of its width."""
    unsigned = {1: jnp.uint8, 2: jnp.uint16, 4: jnp.uint32}[array.dtype.itemsize]
    return jax.lax.bitcast_convert_type(array, unsigned)


def _checksum(arrays) -> int:
    """A uint32 of the bits of `arrays`, each element weighted by its position
    (a transposed or shifted result changes it), reduced without a copy."""
    return int(jax.jit(_weighted_bits)(arrays))


def _weighted_bits(arrays):
    total = jnp.uint32(0)
    for array in arrays:
        bits = _bits(array).reshape(array.shape[0], -1).astype(jnp.uint32)
        rows = jax.lax.broadcasted_iota(jnp.uint32, bits.shape, 0)
        cols = jax.lax.broadcasted_iota(jnp.uint32, bits.shape, 1)
        weights = rows * jnp.uint32(2654435761) + cols * jnp.uint32(40503) + jnp.uint32(1)
        total = total * jnp.uint32(31) + jnp.sum(bits * weights, dtype=jnp.uint32)
    return total


class CheckFailed(Exception):
    """A groupgemm result is off its reference, or the two groupgemm methods disagree."""


def _relative_difference(ours, reference) -> float:
    ours, reference = ours.astype(jnp.float32), reference.astype(jnp.float32)
    return float(jnp.linalg.norm(ours - reference) /
                 jnp.maximum(jnp.linalg.norm(reference), 1e-30))


def _first_line(error: Exception) -> str:
    return (str(error).splitlines() or [type(error).__name__])[0]


def check_case(case: Case, against_peer: bool = True) -> None:
    """Raises CheckFailed when groupgemm's forward is off its reference, or
    when the C API's forward differs from the FFI's in any bit. The
    reference is jax.lax.ragged_dot's forward when `against_peer` and it
    runs, else jnp.dot on the largest group."""
    rows = case.rows
    with prepared(case, FFI, "fwd") as (run, wait):
        ours = wait(run())[:rows]
    try:
        with prepared(case, C_API, "fwd") as (run, wait):  # its output dies with the block
            same = bool(jnp.array_equal(_bits(ours), _bits(wait(run())[:rows])))
        if not same:
            raise CheckFailed("the C API's forward differs from the FFI's (the same kernel)")
    except CheckFailed:
        raise
    except Exception as e:  # noqa: BLE001 (a C API that cannot run is reported, not fatal)
        print("  C API check skipped: %s" % _first_line(e), file=sys.stderr)
    reference = None
    if against_peer:
        try:
            with prepared(case, PEER, "fwd") as (run, wait):
                reference = wait(run())[:rows]
            what = PEER
        except Exception as e:  # noqa: BLE001 (out of memory: the largest group instead)
            print("  %s failed (%s): checking the largest group against jnp.dot"
                  % (PEER, _first_line(e)), file=sys.stderr)
    if reference is None:
        group = int(np.argmax(case.host_sizes))
        start = sum(case.host_sizes[:group])
        end = start + case.host_sizes[group]
        ours = ours[start:end]
        reference = jnp.dot(case.x[start:end], case.w[group].T,
                            preferred_element_type=jnp.float32)
        what = "jnp.dot on group %d" % group
    difference = _relative_difference(ours, reference)
    if difference > _TOLERANCE:
        raise CheckFailed("groupgemm differs from %s by %.3g (relative norm)"
                           % (what, difference))


# ---- records ------------------------------------------------------------------------


def measure(case: Case, pass_name: str, method: str, args,
            checksum: bool = False) -> Tuple[Optional[float], Optional[int]]:
    """(ms, checksum of one more call's outputs when asked), or (None, None)
    when the method cannot run the case."""
    try:
        with prepared(case, method, pass_name) as (run, wait):
            ms = time_ms(run, args.warmup, args.reps, wait)
            bits = _checksum(jax.tree_util.tree_leaves(wait(run()))) if checksum else None
        return ms, bits
    except Exception as e:  # noqa: BLE001 (XlaRuntimeError: out of memory and the like)
        print("  %s %s: %s" % (method, pass_name, _first_line(e)), file=sys.stderr)
        return None, None


def block_order(reps: int, methods: List[str]) -> List[str]:
    """The blocks of the groupgemm methods among `methods`, one rep each:
    FFI, C API, C API, FFI, FFI, ... (each pair of rounds is balanced:
    neither method always runs first or second)."""
    order = []
    for round_index in range(reps):
        order += [FFI, C_API] if round_index % 2 == 0 else [C_API, FFI]
    return [method for method in order if method in methods]


def measure_groupgemm(case: Case, pass_name: str, args) -> Tuple[Dict, Dict]:
    """({method: the samples in ms, or None}, {method: checksum or None})
    for the FFI and the C API (None for one not in --methods), timed in
    alternating blocks (block_order), each block a fresh `prepared` of its
    method, warmed up, then one rep of the same `inner` calls for both
    methods (set by the first block)."""
    methods = _split(args.methods)
    samples = {m: [] if m in methods else None for m in (FFI, C_API)}
    checksums = {FFI: None, C_API: None}
    inner = None
    for method in block_order(args.reps, methods):
        if samples[method] is None:  # failed in an earlier block
            continue
        try:
            with prepared(case, method, pass_name) as (run, wait):
                inner = warm_up(run, wait, args.warmup, inner)
                samples[method].append(1e3 * run_rep(run, wait, inner))
                if len(samples[method]) == args.reps:
                    outputs = jax.tree_util.tree_leaves(wait(run()))
                    checksums[method] = _checksum(outputs)
        except Exception as e:  # noqa: BLE001 (XlaRuntimeError: out of memory and the like)
            print("  %s %s: %s" % (method, pass_name, _first_line(e)), file=sys.stderr)
            samples[method] = None
    return samples, checksums


def case_records(case: Case, args, rates: Dict[str, float]) -> List[dict]:
    records = []
    for pass_name in _split(args.passes):
        used = sum(1 for s in case.host_sizes if s)
        floor = _bench_report.floor_ms(case.rows, used, case.preset.n, case.preset.k, pass_name,
                                       rates)
        samples, checksums = measure_groupgemm(case, pass_name, args)
        if None not in (checksums[FFI], checksums[C_API]) and checksums[FFI] != checksums[C_API]:
            raise CheckFailed("%s: the C API's outputs differ from the FFI's" % pass_name)
        ms = {m: None if samples[m] is None else statistics.median(samples[m])
              for m in (FFI, C_API)}
        ms[PEER] = measure(case, pass_name, PEER, args)[0] if PEER in _split(args.methods) else None
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
            "samples_ms": samples,
            "efficiency": {m: None if t is None else floor / t for m, t in ms.items()},
            "ffi_over_c_api": _bench_report.ratio(ms, FFI, C_API),
        })
    return records


def _split(text: str) -> List[str]:
    return [item for item in text.split(",") if item]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog=PROG,
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default=",".join(p.name for p in presets.PRESETS),
                        help="comma-separated preset names (default: all)")
    parser.add_argument("--tokens",
                        default="%d,%d" % (presets.DECODE_TOKENS, presets.PREFILL_TOKENS),
                        help="comma-separated token counts (default: decode 2048, prefill 16384)")
    parser.add_argument("--routing", default=",".join(presets.ROUTINGS),
                        help="uniform, skewed or both")
    parser.add_argument("--passes", default=",".join(PASSES), help="fwd, fwd+bwd or both")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated methods to time (default: all): " +
                        ", ".join(METHODS))
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write every figure to this JSON file")
    return parser.parse_args(argv)


def _gpu():
    """The GPU the bench runs on, or None when jax sees none."""
    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        return None


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    if _optional.report_missing(PROG, "jax"):
        return 1
    unknown = [m for m in _split(args.methods) if m not in METHODS]
    if unknown:
        print("--methods: unknown %s; known: %s" % (", ".join(unknown), ", ".join(METHODS)),
              file=sys.stderr)
        return 2
    gpu = _gpu()
    if gpu is None:
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
                # A case that fails as a whole (its inputs do not fit, a
                # check fails) is reported and skipped, not fatal.
                case = None
                try:
                    case = Case(presets.find(name), tokens, routing, args.seed)
                    check_case(case, PEER in _split(args.methods))
                    new = case_records(case, args, rates)
                except Exception as e:  # noqa: BLE001
                    print("  %s %d %s skipped: %s" % (name, tokens, routing, _first_line(e)),
                          file=sys.stderr)
                    new = []
                finally:
                    if case is not None:
                        case.free()
                for r in new:  # as measured, so a later failure loses nothing
                    print("%s %d %s %s: %s" % (r["preset"], r["tokens"], r["routing"], r["pass"],
                                               r["ms"]), flush=True)
                records += new
                jax.clear_caches()
                gc.collect()
    print()
    _bench_report.print_table(records, METHODS, RATIOS)
    if args.json:
        _bench_report.write_json(args.json, gpu.device_kind, {"jax": jax.__version__},
                                 " ".join([PROG] + argv),
                                 rates, records)
    return 0


if __name__ == "__main__":
    sys.exit(main())

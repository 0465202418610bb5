"""python -m groupgemm.bench_quantized: quantized grouped GEMMs beside bf16 and torch's fp8.

For each MoE preset (groupgemm.presets), token count and routing, the
up-projection y[g rows] = x[g rows] @ w[g]^T (w [G, N, K], bf16 out; --ops
fprop) and its weight gradient dw[g] = dy[g rows]^T @ x[g rows] ([G, N, K],
bf16 out; --ops wgrad) are timed, in the same run on the same GPU, with the
operands already quantized (the GEMM alone; groupgemm.bench_quantize times
the quantizer). The forward:

  bf16               groupgemm.torch.grouped_mm on bf16 operands
  <x fmt> x <w fmt>  groupgemm.torch.grouped_mm on groupgemm.torch.grouped_quantize's
                     outputs (x rowwise copy, w per expert), FORMATS below;
                     "bf16 x <fmt>" is weight-only
  torch._grouped_mm  bf16, offsets = cumsum(sizes)
  torch._scaled_grouped_mm  fp8 e4m3 rowwise (a scale per token row and per
                     output channel: the operands of our fp8 rowwise
                     product), where this torch has it on this GPU
  cuBLASLt fp8 dense <recipe>  one dense fp8 product of equal work (the
                     routed rows against expert 0's weights) on cuBLASLt
                     through torch._scaled_mm, tensor-scaled and 1x128 x
                     128x128 block-scaled (groupgemm._dense_fp8)

The input gradient (--ops dgrad), dx[g rows] = dy[g rows] @ w[g] ([rows,
K], bf16 out): bf16 (grouped_mm, w_layout "kn"), torch._grouped_mm, the
recipes' dgrad pairs (DGRAD_FORMATS: dy's rowwise copy times the weights'
columnwise copy [G, K, N], which fp8 wgmma reads K-major), torch's fp8
rowwise product of those copies and cuBLASLt's dense fp8 of equal work.

--shapes deepgemm times DeepGEMM's grouped FP8 benchmark shapes instead
(DEEPGEMM_SHAPES: G groups of equal rows), forward and weight gradient.

The weight gradient: bf16 (groupgemm.torch.ragged_k_mm), torch._grouped_mm
on bf16 (dy^T as a transposed view, offsets = cumsum(sizes)), the
quantized ones (WGRAD_FORMATS: fp8 dy e5m2 x e4m3 with tensor scales,
fp8 1x128 x 1x128 blocks, mxfp8, nvfp4; the columnwise copies that
grouped_quantize writes), and cuBLASLt's dense fp8 dy^T @ x of all routed
rows, tensor-scaled and 1x128 x 1x128 block-scaled; every method's output
bf16.

Every method of a case is timed in turn, call by call (groupgemm.bench's
time_in_turn: the median of CUDA-event times over --reps rounds). Before
timing, each quantized result is checked against the bf16 one (a relative
norm within the formats' error), so no wrong product is timed.

Roofline efficiency = floor / time, floor = max(FLOPs / the dense rate of
the tensor cores the method multiplies on, bytes / the bandwidth of a large
device-to-device copy), all measured in this run: fp8 x fp8 products (the
sm90 path's fp8 wgmma, torch._scaled_grouped_mm) at the rate of an 8192^3
torch._scaled_mm, the others (the decode kernels multiply on bf16 tensor
cores) at that of an 8192^3 bf16 torch.mm. Bytes count each operand once as stored
(quantized elements and their scales; weights of non-empty groups only) and
the bf16 output. Without a CUDA GPU a run says so and exits 0.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Dict, List, Optional

from . import _optional, presets, recipes
from .errors import NotSupported

PROG = "python -m groupgemm.bench_quantized"
try:
    import torch

    from . import torch as ggt
    from ._dense_fp8 import FPROP_RECIPES, WGRAD_RECIPES, dense_fp8_peers
    from .bench import machine_rates, make_case, relative_error, time_in_turn, time_ms
except ModuleNotFoundError as error:
    if _optional.missing_framework(error) != "torch":
        raise
    torch = ggt = _optional.Absent(PROG, "torch")

# (x format, w format); None: bf16 activations (weight-only).
FORMATS = [
    ("fp8_e4m3_tensor", "fp8_e4m3_group"),
    ("fp8_e4m3_rowwise", "fp8_e4m3_rowwise"),
    ("fp8_e4m3_1x128", "fp8_e4m3_128x128"),
    ("mxfp8_e4m3", "mxfp8_e4m3"),
    ("nvfp4_tensor", "nvfp4_group"),
    ("mxfp4", "mxfp4"),
    (None, "mxfp8_e4m3"),
    (None, "mxfp4"),
]
# (dy format, w format) of the input gradient: each recipe's rowwise copy of
# dy and columnwise copy of the weights.
DGRAD_FORMATS = list(dict.fromkeys((r.dgrad_dy, r.dgrad_w) for r in recipes.RECIPES.values()))
# (dy format, x format) of the weight gradient, columnwise copies.
WGRAD_FORMATS = [("fp8_e5m2_tensor", "fp8_e4m3_tensor"), ("fp8_e4m3_1x128", "fp8_e4m3_1x128"),
                 ("mxfp8_e4m3", "mxfp8_e4m3"), ("nvfp4_tensor", "nvfp4_tensor")]
TOKENS = (128, presets.DECODE_TOKENS, presets.PREFILL_TOKENS)
# DeepGEMM's grouped FP8 benchmark shapes: (groups, rows each, N, K) of its
# m-grouped forward, and of its k-grouped weight gradient ([G, N, K] from
# groups of `rows` tokens).
DEEPGEMM_SHAPES = {
    "fprop": [(4, 8192, 4096, 7168), (8, 4096, 7168, 2048), (128, 1024, 1536, 2048),
              (128, 512, 5760, 2880)],
    "wgrad": [(4, 8192, 7168, 4096)],
}
# Relative-norm distance from the bf16 product that a correct product stays
# within (the formats' rounding; a wrong scale or block is off by ~1 or more).
TOLERANCE = {"fp8": 0.1, "mxfp8": 0.1, "nvfp4": 0.5, "mxfp4": 0.5}


def label(x_fmt: Optional[str], w_fmt: str) -> str:
    return "%s x %s" % (x_fmt or "bf16", w_fmt)


def stored_bytes(operand) -> int:
    if isinstance(operand, torch.Tensor):
        return operand.numel() * operand.element_size()
    total = 0
    for array in (operand.data, operand.block_scales, operand.scale):
        if array is not None:
            total += array.numel() * array.element_size()
    return total


def quantized(tensor, fmt, sizes, columnwise=False):
    """The rowwise copy of `tensor` in `fmt` (None: tensor itself), or its
    columnwise one, or the reason none can be made."""
    if fmt is None:
        return tensor
    try:
        if columnwise:
            return ggt.grouped_quantize(tensor, sizes, columnwise=fmt).columnwise
        return ggt.grouped_quantize(tensor, sizes, rowwise=fmt).rowwise
    except NotSupported as error:
        return str(error)


def tolerance(fmt_pair) -> float:
    worst = 0.0
    for fmt in fmt_pair:
        for prefix, value in TOLERANCE.items():
            if fmt is not None and fmt.startswith(prefix):
                worst = max(worst, value)
    return worst


ROWWISE = "fp8_e4m3_rowwise"


def scaled_grouped_mm(case, x, w):
    """torch._scaled_grouped_mm's fp8 rowwise product of x and w, our
    quantizer's rowwise fp8 copies (a scale per token row and per output
    channel: the operands of our own fp8 rowwise product, not a second
    copy of a preset's weights), or None where this torch lacks it or
    refuses it here (with the reason printed once)."""
    if not hasattr(torch, "_scaled_grouped_mm"):
        return None
    x_scale = x.block_scales.reshape(-1)
    w_scale = w.block_scales.reshape(w.data.shape[0], w.data.shape[1])
    run = lambda: torch._scaled_grouped_mm(  # noqa: E731
        x.data, w.data.transpose(-2, -1), x_scale, w_scale, offs=case.ends,
        out_dtype=torch.bfloat16)
    try:
        run()
    except (RuntimeError, TypeError) as error:
        print("torch._scaled_grouped_mm: %s" % str(error).splitlines()[0], file=sys.stderr)
        return None
    return run


def fp8_rate(warmup: int, reps: int, warm_ms: float) -> Optional[float]:
    """Dense fp8 FLOP/s: an 8192^3 e4m3 torch._scaled_mm with tensor scales
    (None where this torch or GPU has none)."""
    if not hasattr(torch, "_scaled_mm"):
        return None
    a = torch.randn(8192, 8192, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(8192, 8192, device="cuda").to(torch.float8_e4m3fn).t()
    one = torch.ones((), device="cuda")
    run = lambda: torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)  # noqa: E731
    try:
        run()
    except (RuntimeError, TypeError) as error:
        print("torch._scaled_mm: %s" % str(error).splitlines()[0], file=sys.stderr)
        return None
    return 2 * 8192**3 / (time_ms(run, warmup, reps, warm_ms) * 1e-3)


def on_fp8_cores(method: str, ragged_m: bool = True) -> bool:
    """Whether a method multiplies fp8 x fp8 on fp8 tensor cores: fp8 pairs,
    and mxfp8 x mxfp8 e4m3 products along K (ragged-M; the weight gradient
    of MX blocks along the tokens is decoded into bf16)."""
    mx = method.startswith("mxfp8_") and method.endswith(" x mxfp8_e4m3") and ragged_m
    return (method == "torch._scaled_grouped_mm" or method.startswith("fp8_")
            or method.startswith("cuBLASLt fp8") or mx)


def measure_ragged_m(case, args, rates, op: str) -> List[dict]:
    """The methods of one ragged-M case: the forward (op "fprop", y = x @
    w^T: x's rowwise copy times the weights' rowwise one) or the input
    gradient ("dgrad", dx = dy @ w: dy's rowwise copy times the weights'
    columnwise one, w_layout "kn"), one record each."""
    dgrad = op == "dgrad"
    lhs = case.dy if dgrad else case.x
    layout = "kn" if dgrad else "nk"
    out_cols = case.preset.k if dgrad else case.preset.n
    flops = 2.0 * case.rows * case.preset.n * case.preset.k
    live = sum(1 for size in case.host_sizes if size) / case.preset.experts
    torch_w = case.w if dgrad else case.w.transpose(-2, -1)
    methods: Dict[str, object] = {
        "bf16": lambda: ggt.grouped_mm(lhs, case.w, case.sizes, w_layout=layout),
        "torch._grouped_mm": lambda: torch._grouped_mm(lhs, torch_w, offs=case.ends),
    }
    bytes_of = dict.fromkeys(methods, stored_bytes(lhs) + live * stored_bytes(case.w))
    reference = methods["bf16"]()[: case.rows]
    notes = []
    operands = {}  # the quantized copies made, by format: the fp8 rowwise ones serve torch too
    for lhs_fmt, w_fmt in DGRAD_FORMATS if dgrad else FORMATS:
        name = label(lhs_fmt, w_fmt)
        if args.formats and name not in args.formats:
            continue
        # (format, is the token operand): the token operand's rowwise copy,
        # the weights' rowwise (fprop) or columnwise (dgrad) one.
        for key, tensor, sizes, columnwise in (((lhs_fmt, True), lhs, case.sizes, False),
                                               ((w_fmt, False), case.w, None, dgrad)):
            if key not in operands:
                operands[key] = quantized(tensor, key[0], sizes, columnwise)
        a, w = operands[(lhs_fmt, True)], operands[(w_fmt, False)]
        if isinstance(a, str) or isinstance(w, str):
            notes.append("%s: %s" % (name, a if isinstance(a, str) else w))
            continue
        run = (lambda a, w: lambda: ggt.grouped_mm(a, w, case.sizes, w_layout=layout))(a, w)
        error = relative_error(run()[: case.rows], reference)
        if error > tolerance((lhs_fmt, w_fmt)):
            raise RuntimeError("%s %s differs from bf16 by %.3g (relative norm)"
                               % (op, name, error))
        methods[name] = run
        bytes_of[name] = stored_bytes(a) + live * stored_bytes(w)
    # torch's fp8 rowwise product reads e4m3 copies of both operands, scaled
    # per row of each stored copy (the weights' columnwise one for dgrad).
    a8 = operands.get((ROWWISE, True)) or quantized(lhs, ROWWISE, case.sizes)
    w8 = operands.get((ROWWISE, False)) or quantized(case.w, ROWWISE, None, columnwise=dgrad)
    scaled = None
    if isinstance(a8, str) or isinstance(w8, str):
        notes.append("torch._scaled_grouped_mm: %s" % (a8 if isinstance(a8, str) else w8))
    else:
        scaled = scaled_grouped_mm(case, a8, w8)
    if scaled is not None:
        methods["torch._scaled_grouped_mm"] = scaled
        bytes_of["torch._scaled_grouped_mm"] = lhs.numel() + live * case.w.numel()
    dense_w = case.w[0].t().contiguous() if dgrad else case.w[0]
    for name, (run, nbytes) in dense_fp8_peers(lhs[: case.rows], dense_w, FPROP_RECIPES,
                                               TOLERANCE["fp8"]).items():
        methods[name], bytes_of[name] = run, nbytes
    times = time_in_turn(methods, args.warmup, args.reps, args.warm_ms)
    out_bytes = case.rows * out_cols * 2
    records = []
    for name, ms in times.items():
        rate = rates["dense_fp8_flops"] if on_fp8_cores(name) else rates["dense_flops"]
        floor = max(flops / rate,
                    (bytes_of[name] + out_bytes) / rates["copy_bytes_per_s"])
        records.append(dict(preset=case.preset.name, tokens=case.tokens, routing=case.routing,
                            op=op, method=name, ms=ms, tflops=flops / (ms * 1e-3) / 1e12,
                            vs_bf16=times["bf16"] / ms, efficiency=floor / (ms * 1e-3)))
    for note in notes:
        print("  not run: " + note, file=sys.stderr)
    return records


# Weight gradients of more elements than this ([G, N, K]: 30 GB in fp32 for
# DeepSeek-V3) are not timed: each method's output and the check against
# the bf16 one would not fit beside each other.
WGRAD_MAX_ELEMENTS = 1 << 31


def measure_wgrad(case, args, rates) -> List[dict]:
    """The weight gradient's methods of one case, as measure_ragged_m's records."""
    n, k = case.preset.n, case.preset.k
    if case.preset.experts * n * k > WGRAD_MAX_ELEMENTS:
        print("  not run: wgrad of %s: [G, N, K] too large to time beside its check"
              % case.preset.name, file=sys.stderr)
        return []
    flops = 2.0 * case.rows * n * k
    methods: Dict[str, object] = {
        "bf16": lambda: ggt.ragged_k_mm(case.dy, case.x, case.sizes),
        "torch._grouped_mm": lambda: torch._grouped_mm(case.dy.t(), case.x, offs=case.ends),
    }
    operand_bytes = stored_bytes(case.dy) + stored_bytes(case.x)
    bytes_of = {"bf16": operand_bytes + 2 * case.preset.experts * n * k,
                "torch._grouped_mm": operand_bytes + 2 * case.preset.experts * n * k}
    reference = methods["bf16"]()
    for dy_fmt, x_fmt in WGRAD_FORMATS:
        name = label(dy_fmt, x_fmt)
        if args.formats and name not in args.formats:
            continue
        dy = ggt.grouped_quantize(case.dy, case.sizes, columnwise=dy_fmt).columnwise
        x = ggt.grouped_quantize(case.x, case.sizes, columnwise=x_fmt).columnwise
        run = (lambda dy, x: lambda: ggt.ragged_k_mm(dy, x, case.sizes,
                                                     out_dtype=torch.bfloat16))(dy, x)
        error = relative_error(run(), reference)
        if error > tolerance((dy_fmt, x_fmt)):
            raise RuntimeError("wgrad %s differs from bf16 by %.3g (relative norm)" % (name, error))
        methods[name] = run
        bytes_of[name] = stored_bytes(dy) + stored_bytes(x) + 2 * case.preset.experts * n * k
    dense = dense_fp8_peers(case.dy[: case.rows].t().contiguous(),
                            case.x[: case.rows].t().contiguous(), WGRAD_RECIPES, TOLERANCE["fp8"])
    for name, (run, nbytes) in dense.items():
        methods[name], bytes_of[name] = run, nbytes + 2 * n * k
    times = time_in_turn(methods, args.warmup, args.reps, args.warm_ms)
    records = []
    for name, ms in times.items():
        rate = rates["dense_fp8_flops"] if on_fp8_cores(name, False) else rates["dense_flops"]
        floor = max(flops / rate, bytes_of[name] / rates["copy_bytes_per_s"])
        records.append(dict(preset=case.preset.name, tokens=case.tokens, routing=case.routing,
                            op="wgrad", method=name, ms=ms, tflops=flops / (ms * 1e-3) / 1e12,
                            vs_bf16=times["bf16"] / ms, efficiency=floor / (ms * 1e-3)))
    return records


def deepgemm_case(groups: int, rows: int, n: int, k: int):
    """One DeepGEMM shape as a bench Case: G groups of `rows` rows."""
    preset = presets.MoePreset("G%d m%d n%d k%d" % (groups, rows, n, k), k, n // 2, groups, 1)
    return make_case(preset, groups * rows, "uniform", seed=groups)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default=",".join(p.name for p in presets.PRESETS))
    parser.add_argument("--tokens", default=",".join(str(t) for t in TOKENS))
    parser.add_argument("--routing", default="uniform,skewed")
    parser.add_argument("--ops", default="fprop,dgrad,wgrad")
    parser.add_argument("--shapes", choices=("presets", "deepgemm"), default="presets")
    parser.add_argument("--formats", type=lambda text: [f.strip() for f in text.split(",")],
                        default=[], help="the FORMATS pairs to time, as labelled (default: all)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warm-ms", type=float, default=0.0)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if isinstance(torch, _optional.Absent) or not torch.cuda.is_available():
        print("%s: no CUDA GPU (or no torch): nothing to time" % PROG)
        return 0
    rates = machine_rates(args.warmup, args.reps, args.warm_ms)
    rates["dense_fp8_flops"] = (fp8_rate(args.warmup, args.reps, args.warm_ms)
                                or rates["dense_flops"])
    print("# %s; dense bf16 %.0f TFLOP/s, fp8 %.0f TFLOP/s, copy %.0f GB/s" % (
        torch.cuda.get_device_name(), rates["dense_flops"] / 1e12,
        rates["dense_fp8_flops"] / 1e12, rates["copy_bytes_per_s"] / 1e9))
    print("%-16s %6s %-8s %-5s %-36s %9s %8s %7s %6s" % (
        "preset", "tokens", "routing", "op", "method", "ms", "TFLOP/s", "xbf16", "eff"))
    measure = {"fprop": functools.partial(measure_ragged_m, op="fprop"),
               "dgrad": functools.partial(measure_ragged_m, op="dgrad"),
               "wgrad": measure_wgrad}

    def report(case, ops):
        for op in ops:
            for r in measure[op](case, args, rates):
                print("%-16s %6d %-8s %-5s %-36s %9.4f %8.1f %7.2f %5.0f%%" % (
                    r["preset"], r["tokens"], r["routing"], r["op"], r["method"],
                    r["ms"], r["tflops"], r["vs_bf16"], 100 * r["efficiency"]))
        torch.cuda.empty_cache()

    if args.shapes == "deepgemm":
        for op in args.ops.split(","):
            for shape in DEEPGEMM_SHAPES.get(op, ()):  # its shapes: fprop and wgrad
                report(deepgemm_case(*shape), [op])
        return 0
    for name in args.presets.split(","):
        preset = presets.find(name)
        for tokens in (int(t) for t in args.tokens.split(",")):
            for routing in args.routing.split(","):
                report(make_case(preset, tokens, routing, seed=tokens), args.ops.split(","))
    return 0


if __name__ == "__main__":
    sys.exit(main())

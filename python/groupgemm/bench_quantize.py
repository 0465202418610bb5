"""python -m groupgemm.bench_quantize: the grouped quantizer beside torch's own path.

For each preset (default DeepSeek-V3 and Qwen3-30B-A3B) and token count
(default 16k, 64k, 128k rows of bf16 activations [tokens, hidden], split
uniformly over the experts), each format is quantized rowwise and
columnwise in one call by groupgemm.torch.grouped_quantize, and by torch ops
doing the same work: per-group amax (segment reduction over the sorted
token groups), scale, cast, for both the input and its transpose. Times are
medians of CUDA events, after --warm-ms of the same work (as
groupgemm.bench times), each method alone rather than in turn: torch's
path allocates and frees gigabytes of fp32 temporaries a call, which in
turn would stand between our calls. The bandwidth counts
the bytes that must move (input once, every output once) and is also
given as a fraction of the device-to-device copy bandwidth measured in the
same run. With --power-seconds S, each of our calls (and the copy) also
runs for S seconds under an NVML meter, which adds its mean board
power and SM clock: whether the quantizer is held by the power limit, as
the GEMMs are, or by its instructions at the full clock.

The torch path covers the fp8 formats: current scaling per group
(fp8_e4m3_group) and 1x128 blocks (fp8_e4m3_1x128, rowwise blocks along K;
columnwise blocks along tokens computed on a zero-padded per-group layout
would need host sizes, so the torch path blocks the transposed copy along
tokens without restarting at group starts: a lower bound on its work).
Without torch, --help still works; a run says what to install.
"""

import argparse
import sys

from . import _optional, presets
from .bench import time_ms, warm_ms_value

PROG = "python -m groupgemm.bench_quantize"
try:
    import torch
except ModuleNotFoundError as error:
    if _optional.missing_framework(error) != "torch":
        raise
    torch = _optional.Absent(PROG, "torch")  # main() says what to install

FORMATS = ("fp8_e4m3_group", "fp8_e4m3_1x128", "mxfp8_e4m3", "nvfp4_group")
FP8_MAX = 448.0


def copy_bandwidth(warmup: int, reps: int, warm_ms: float) -> float:
    source = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    seconds = time_ms(lambda: target.copy_(source), warmup, reps, warm_ms) * 1e-3
    return 2 * source.numel() / seconds


def torch_group_fp8(x, segment, groups):
    """amax per group (index_reduce over token rows), scale, cast; rowwise and transposed."""
    row_amax = x.abs().amax(dim=1).float()
    amax = torch.zeros(groups, device=x.device).index_reduce_(0, segment, row_amax, "amax")
    scale = torch.where(amax > 0, amax / FP8_MAX, torch.ones_like(amax))
    scaled = x.float() / scale[segment, None]
    rowwise = scaled.to(torch.float8_e4m3fn)
    columnwise = scaled.t().contiguous().to(torch.float8_e4m3fn)
    return rowwise, columnwise, scale


def torch_1x128(x):
    """1x128 blocks along K for the rowwise copy and along tokens for the transposed one."""

    def blocks(a):
        rows, cols = a.shape
        padded = torch.nn.functional.pad(a.float(), (0, (-cols) % 128))
        b = padded.view(rows, -1, 128)
        amax = b.abs().amax(dim=2, keepdim=True)
        scale = torch.where(amax > 0, amax / FP8_MAX, torch.ones_like(amax))
        return (b / scale).view(rows, -1)[:, :cols].to(torch.float8_e4m3fn), scale.squeeze(2)

    return blocks(x), blocks(x.t())


def output_bytes(fmt: str, tokens: int, hidden: int, groups: int) -> int:
    elements = tokens * hidden
    if fmt.startswith("nvfp4"):
        return 2 * (elements // 2 + elements // 16) + 4 * groups
    if fmt.startswith("mxfp8"):
        return 2 * (elements + elements // 32)
    if fmt.endswith("1x128"):
        return 2 * (elements + 4 * (elements // 128))
    return 2 * elements + 4 * groups


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="deepseek-v3,qwen3-30b-a3b")
    parser.add_argument("--tokens", default="16384,65536,131072")
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warm-ms", type=warm_ms_value, default=300.0,
                        help="ms each figure's work runs before it is timed (default 300)")
    parser.add_argument("--power-seconds", type=float, default=0.0,
                        help="also read power and clock over this long a run of each call "
                        "(needs nvidia-ml-py; default 0: not read)")
    args = parser.parse_args(argv)
    if _optional.report_missing(PROG, "torch"):
        return 1
    if not torch.cuda.is_available():
        print("bench_quantize: no CUDA GPU; nothing to time", file=sys.stderr)
        return 0
    import groupgemm.torch as ggt

    meter = None
    power_columns = ""
    if args.power_seconds > 0:
        from ._power_meter import Meter

        meter = Meter()
        power_columns = " %6s %7s" % ("W", "SM MHz")

    def power(fn) -> str:
        """Mean board power and SM clock over a run of fn, as columns."""
        if meter is None:
            return ""
        reading = meter.read("", fn, 0.5, args.power_seconds)
        return " %6.0f %7.0f" % (reading.watts, reading.sm_mhz)

    copy = copy_bandwidth(args.warmup, args.reps, args.warm_ms)
    print("%s: copy %.0f GB/s (read + write); each figure timed after %g ms of its work"
          % (torch.cuda.get_device_name(), copy / 1e9, args.warm_ms))
    if meter is not None:
        source = torch.empty(1 << 29, dtype=torch.bfloat16, device="cuda")
        target = torch.empty_like(source)
        print("copy, power and clock:%s" % power(lambda: target.copy_(source)))
        del source, target
    print("%-16s %8s %-16s %10s %8s %10s %8s%s" % ("preset", "tokens", "format", "ours ms",
                                                 "of copy", "torch ms", "ratio", power_columns))
    for name in args.presets.split(","):
        preset = presets.find(name)
        groups, hidden = preset.experts, preset.hidden
        for tokens in (int(t) for t in args.tokens.split(",")):
            x = torch.randn(tokens, hidden, device="cuda", dtype=torch.bfloat16)
            sizes = torch.full((groups,), tokens // groups, dtype=torch.int32, device="cuda")
            sizes[: tokens % groups] += 1
            segment = torch.repeat_interleave(torch.arange(groups, device="cuda"), sizes.long())
            torch_paths = {
                "fp8_e4m3_group": lambda: torch_group_fp8(x, segment, groups),
                "fp8_e4m3_1x128": lambda: torch_1x128(x),
            }
            for fmt in args.formats.split(","):
                def quantize():
                    ggt.grouped_quantize(x, sizes, rowwise=fmt, columnwise=fmt)

                ours = time_ms(quantize, args.warmup, args.reps, args.warm_ms)
                theirs = None
                if fmt in torch_paths:
                    theirs = time_ms(torch_paths[fmt], args.warmup, args.reps, args.warm_ms)
                moved = 2 * tokens * hidden + output_bytes(fmt, tokens, hidden, groups)
                print(
                    "%-16s %8d %-16s %10.3f %8.3f %10s %8s%s"
                    % (
                        name,
                        tokens,
                        fmt,
                        ours,
                        moved / (ours * 1e-3) / copy,
                        "-" if theirs is None else "%.3f" % theirs,
                        "-" if theirs is None else "%.2f" % (theirs / ours),
                        power(quantize),
                    )
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

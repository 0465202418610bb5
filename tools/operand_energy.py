"""What operand data costs a GPU at its power limit (needs torch, NVML, a CUDA GPU).

  python3 tools/operand_energy.py [preset:tokens:routing ...]

It imports groupgemm from this checkout's python/, which loads the library
from GROUPGEMM_LIBRARY or else build/release/src/.

Compute-bound work at the power limit runs at the clock its energy allows,
and a tensor core's energy depends on the values it multiplies. Two parts:

  dense     a bf16 torch.mm 8192^3 whose A is random, zero, or random in
            some rows and zero in the rest (B random): the same work with
            less energy, and so (at the limit) less time.
  padding   each case's ragged-M product (groupgemm fprop) with its groups
            laid out apart, each starting where its tiles start (through the
            C API's group offsets, which the PyTorch front end does not
            expose), so that a tile's rows past its group's end are rows of
            nobody: random in one run, zero in the other. The tiles, the
            bytes and the MMA are the same; only the values the padding rows
            feed the tensor cores differ. Today, packed, those rows are the
            next group's tokens. Each spaced run is checked bit for bit
            against the packed product first.

Each workload runs for 2 s after 1 s of warm-up (groupgemm._power_meter.Meter): ms
a call, mean board power, mean SM clock, joules a call.
"""

import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from groupgemm import bench, core, presets  # noqa: E402
from groupgemm import torch as ggt  # noqa: E402
from groupgemm._power_meter import Meter  # noqa: E402
from groupgemm.torch import _views, _workspace  # noqa: E402


def print_reading(label, r):
    print(f"{label:<44} {r.ms:8.3f} ms {r.watts:5.0f} W {r.sm_mhz:5.0f} MHz "
          f"{r.joules / r.calls:7.3f} J/call")


def dense(meter):
    side = 8192
    bf16 = dict(dtype=torch.bfloat16, device="cuda")
    b, c = torch.randn(side, side, **bf16), torch.empty(side, side, **bf16)
    rows = torch.arange(side, device="cuda")

    def kept(rows_kept):  # random in rows_kept, zero elsewhere
        a = torch.randn(side, side, **bf16)
        a[~rows_kept] = 0
        return a

    cases = [
        ("A random", torch.randn(side, side, **bf16)),
        ("A zero", torch.zeros(side, side, **bf16)),
        ("A random in 16 of each 64 rows", kept(rows % 64 < 16)),
        ("A random in 32 of each 64 rows", kept(rows % 64 < 32)),
        ("A random in its first quarter of rows", kept(rows < side // 4)),
    ]
    print(f"\ndense: torch.mm {side}^3 bf16, B random")
    for label, a in cases:
        print_reading(label, meter.read(label, lambda: torch.mm(a, b, out=c), 1.0, 2.0))


def spaced_fprop(case, x, offsets):
    """groupgemm fprop of x whose group g starts at row offsets[g]."""
    out = torch.empty(x.shape[0], case.w.shape[1], dtype=x.dtype, device=x.device)
    desc = core.ragged_m(_views.operand("x", x), _views.operand("w", case.w),
                         _views.operand("out", out), _views.operand("group_sizes", case.sizes))
    desc.group_sizes.offsets = offsets.data_ptr()
    _workspace.run(desc, x.device)
    return out


def padding(meter, spec):
    name, tokens, routing = spec.split(":")
    case = bench.make_case(presets.find(name), int(tokens), routing, seed=0)
    # The sm90 path's ragged-M tiles: 64 rows for a group of at most 64, else
    # whole 128-row tiles.
    tile_rows = [0 if s == 0 else 64 if s <= 64 else math.ceil(s / 128) * 128
                 for s in case.host_sizes]
    starts = [sum(tile_rows[:g]) for g in range(len(tile_rows))]
    rows = sum(tile_rows)
    offsets = torch.tensor(starts, dtype=torch.int32, device="cuda")
    group_rows = torch.cat([torch.arange(start, start + size)
                            for start, size in zip(starts, case.host_sizes)]).cuda()
    x_random = torch.randn(rows, case.x.shape[1], dtype=torch.bfloat16, device="cuda")
    x_random[group_rows] = case.x[: case.rows]
    x_zero = torch.zeros_like(x_random)
    x_zero[group_rows] = case.x[: case.rows]
    packed = ggt.grouped_mm(case.x, case.w, case.sizes)[: case.rows]
    for x in (x_random, x_zero):
        assert torch.equal(spaced_fprop(case, x, offsets)[group_rows], packed), spec
    print(f"\n{spec}: {case.rows} rows packed, {rows} spaced (tile MMA / rows "
          f"{rows / case.rows:.3f})")
    runs = [
        ("packed", lambda: ggt.grouped_mm(case.x, case.w, case.sizes)),
        ("spaced, padding rows random", lambda: spaced_fprop(case, x_random, offsets)),
        ("spaced, padding rows zero", lambda: spaced_fprop(case, x_zero, offsets)),
        ("spaced, padding rows random (again)", lambda: spaced_fprop(case, x_random, offsets)),
    ]
    for label, fn in runs:
        print_reading(label, meter.read(label, fn, 1.0, 2.0))


def main(argv):
    meter = Meter()
    print(f"{meter.name}, power limit {meter.limit_watts:.0f} W")
    dense(meter)
    for spec in argv or ["deepseek-v3:2048:skewed"]:
        padding(meter, spec)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

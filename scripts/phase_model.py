#!/usr/bin/env python3
"""The two-phase model of skewed ragged-M products, beside a bench's times.

Under skewed routing, ragged-M groups take their tiles one group after
another, so a group's time is its own floor: the larger of its weights' and
rows' bytes at the copy rate and its tiles' MMA at the dense rate, where a
group of at most 64 rows runs a 64-row tile and a longer one whole 128-row
tiles (the 128 x 256 instance). The model sums those floors over the
groups ("phases"). Two bounds for what overlapping the groups could buy:
"overlap", the larger of all bytes and all tiles' MMA, with today's tiles;
"rows MMA", the same with every group of at most 64 rows costing MMA for
its rows rounded up to 16 (a tile whose wgmma N dimension is the tokens).
The roofline (DESIGN §6) counts each group's own FLOPs instead of its
tiles'. Sizes are groupgemm.presets.route's, which split rows as the CLI
does (the same sizes, in another order of the experts; no column here
depends on that order).

  scripts/phase_model.py <output of `groupgemm bench`> [--routing skewed] [--op fprop]

Reads the bench's dense and copy rates from its header and its times of the
rows of that routing and op, and prints, for each, the measured ms, the
model's ms and bounds, and measured over modelled.
"""
import argparse
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from groupgemm import presets  # noqa: E402


def read_bench(path):
    """(dense FLOP/s, copy B/s, {(preset, tokens, routing, op): ms})."""
    text = Path(path).read_text()
    rates = re.search(r"dense cuBLAS bf16 8192\^3: ([\d.]+) TFLOP/s; device copy: ([\d.]+) GB/s", text)
    if rates is None:
        sys.exit("phase_model: no machine rates in %s (not a `groupgemm bench` output?)" % path)
    times = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 16 and f[1].isdigit() and f[3] in ("fprop", "dgrad", "wgrad"):
            times[(f[0], int(f[1]), f[2], f[3])] = float(f[8])
    return float(rates.group(1)) * 1e12, float(rates.group(2)) * 1e9, times


def group_floors(sizes, n, k, dense, copy):
    """ms of: phases, overlap, rows MMA, roofline."""
    phases = total_bytes = tile_flops = row_flops = flops = 0.0
    for rows in sizes:
        if rows == 0:
            continue
        tile_rows = 64 if rows <= 64 else math.ceil(rows / 128) * 128
        bytes_ = 2 * (n * k + rows * k + rows * n)  # weights, lhs rows, out rows
        phases += max(bytes_ / copy, 2 * tile_rows * n * k / dense)
        total_bytes += bytes_
        tile_flops += 2 * tile_rows * n * k
        row_flops += 2 * (math.ceil(rows / 16) * 16 if rows <= 64 else tile_rows) * n * k
        flops += 2 * rows * n * k
    seconds = (phases, max(total_bytes / copy, tile_flops / dense),
               max(total_bytes / copy, row_flops / dense), max(total_bytes / copy, flops / dense))
    return [1e3 * s for s in seconds]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench_output")
    parser.add_argument("--routing", default="skewed", choices=presets.ROUTINGS)
    parser.add_argument("--op", default="fprop", choices=("fprop", "dgrad"))
    args = parser.parse_args(argv)
    dense, copy, times = read_bench(args.bench_output)
    print("%-16s %6s %8s %8s %8s %8s %8s %10s" % (
        "preset", "tokens", "ms", "phases", "overlap", "rows MMA", "roofline", "ms/phases"))
    for (name, tokens, routing, op), ms in times.items():
        if routing != args.routing or op != args.op:
            continue
        preset = presets.find(name)
        sizes = presets.route(routing, preset.rows(tokens), preset.experts, 0)
        # dgrad exchanges n and k, which changes none of the model's terms
        floors = group_floors(sizes, preset.n, preset.k, dense, copy)
        print("%-16s %6d %8.3f %8.3f %8.3f %8.3f %8.3f %10.3f" % (
            name, tokens, ms, *floors, ms / floors[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

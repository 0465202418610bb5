#!/usr/bin/env python3
"""Models of skewed MoE products, beside a `groupgemm bench` output's times.

ragged-M (--op fprop or dgrad): the groups' phases. Groups take their tiles
one group after another, so a group's time is its own floor: the larger of
its weights' and rows' bytes at the copy rate and its tiles' MMA at the
dense rate, where a group of at most 64 rows runs a 64-row tile and a
longer one whole 128-row tiles (the 128 x 256 instance). "phases" sums
those floors. Two bounds for what overlapping the groups could buy:
"overlap", the larger of all bytes and all tiles' MMA, with today's tiles;
"rows MMA", the same with every group of at most 64 rows costing MMA for
its rows rounded up to 16 (a tile whose wgmma N dimension is the tokens).
The roofline (docs/DESIGN.md, "Performance method") counts each group's
own FLOPs instead of its tiles'. Both rates are read from the bench's
header. The bounds take the two rates as independent; at a power limit
they are not: where the phases already run at the limit (an H200's skewed
lists do), the
energy of every tile's MMA and every byte is spent whichever order they
run in, and overlapping them buys only what it saves in energy.

ragged-K (--op wgrad): the tiles' cost. Every group writes its whole
[n, k] output, in 128 x 256 tiles; a tile of s 64-token steps costs one SM
max(floor, a s + c) us. a and c are fitted (least squares) to the same
output's uniform wgrad rows of two steps or more, the floor is the median
of its one-step rows (a tile of one step is bound by its store), and an
empty group's tiles cost the floor (they write zeros). "model" sums the
tiles' costs over --sms SMs; "fixed" is the part of it that is c, the
cost a tile pays whatever its steps (its epilogue).

Sizes are groupgemm.presets.route's, which split rows as the CLI does (the
same sizes, in another order of the experts; no column here depends on that
order).

  tools/skew_model.py <output of `groupgemm bench`> [--routing skewed]
                      [--op fprop|dgrad|wgrad] [--sms 132]
"""
import argparse
import math
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from groupgemm import presets  # noqa: E402

STEP = 64  # tokens a k-step


def read_bench(path):
    """(dense FLOP/s, copy B/s, {(preset, tokens, routing, op): ms})."""
    text = Path(path).read_text()
    rates = re.search(r"dense cuBLAS bf16 8192\^3: ([\d.]+) TFLOP/s; device copy: ([\d.]+) GB/s", text)
    if rates is None:
        sys.exit("skew_model: no machine rates in %s (not a `groupgemm bench` output?)" % path)
    times = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) == 16 and f[1].isdigit() and f[3] in ("fprop", "dgrad", "wgrad"):
            times[(f[0], int(f[1]), f[2], f[3])] = float(f[8])
    return float(rates.group(1)) * 1e12, float(rates.group(2)) * 1e9, times


def group_floors(sizes, n, k, dense, copy):
    """Ragged-M, ms of: phases, overlap, rows MMA, roofline."""
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


def output_tiles(preset):
    """128 x 256 tiles of one group's [n, k] weight gradient."""
    return math.ceil(preset.n / 128) * math.ceil(preset.k / 256)


def fit_tile_cost(times, sms):
    """(a, c, floor) in us from the uniform wgrad rows (see the top)."""
    steps, costs, one_step = [], [], []
    for (name, tokens, routing, op), ms in times.items():
        if op != "wgrad" or routing != "uniform":
            continue
        preset = presets.find(name)
        s = math.ceil(preset.rows(tokens) / preset.experts / STEP)
        us = 1e3 * ms * sms / (preset.experts * output_tiles(preset))
        if s >= 2:
            steps.append(s)
            costs.append(us)
        else:
            one_step.append(us)
    if len(set(steps)) < 2 or not one_step:
        sys.exit("skew_model: the fit needs uniform wgrad rows of one step and of two step counts")
    mean_s, mean_c = statistics.fmean(steps), statistics.fmean(costs)
    a = sum((s - mean_s) * (c - mean_c) for s, c in zip(steps, costs)) / sum(
        (s - mean_s) ** 2 for s in steps)
    return a, mean_c - a * mean_s, statistics.median(one_step)


def tile_costs(sizes, tiles, cost, sms):
    """Ragged-K, ms of: the tiles' costs, their fixed part."""
    a, c, floor = cost
    total = fixed = 0.0
    for rows in sizes:
        s = math.ceil(rows / STEP)
        total += tiles * (max(floor, a * s + c) if s > 0 else floor)
        fixed += tiles * c
    return 1e-3 * total / sms, 1e-3 * fixed / sms


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("bench_output")
    parser.add_argument("--routing", default="skewed", choices=presets.ROUTINGS)
    parser.add_argument("--op", default="fprop", choices=("fprop", "dgrad", "wgrad"))
    parser.add_argument("--sms", type=int, default=132, help="SMs of the bench's GPU")
    args = parser.parse_args(argv)
    dense, copy, times = read_bench(args.bench_output)
    rows = [(key, ms) for key, ms in times.items() if key[2] == args.routing and key[3] == args.op]
    if args.op == "wgrad":
        cost = fit_tile_cost(times, args.sms)
        print("a tile of s steps: max(%.2f, %.3f s + %.2f) us" % (cost[2], cost[0], cost[1]))
        print("%-16s %6s %8s %8s %8s %12s" % ("preset", "tokens", "ms", "model", "fixed", "ms/model"))
    else:
        print("%-16s %6s %8s %8s %8s %8s %8s %10s" % (
            "preset", "tokens", "ms", "phases", "overlap", "rows MMA", "roofline", "ms/phases"))
    for (name, tokens, routing, op), ms in rows:
        preset = presets.find(name)
        sizes = presets.route(routing, preset.rows(tokens), preset.experts, 0)
        if args.op == "wgrad":
            model, fixed = tile_costs(sizes, output_tiles(preset), cost, args.sms)
            print("%-16s %6d %8.3f %8.3f %8.3f %12.3f" % (name, tokens, ms, model, fixed, ms / model))
        else:
            # dgrad exchanges n and k, which changes none of the model's terms
            floors = group_floors(sizes, preset.n, preset.k, dense, copy)
            print("%-16s %6d %8.3f %8.3f %8.3f %8.3f %8.3f %10.3f" % (
                name, tokens, ms, *floors, ms / floors[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

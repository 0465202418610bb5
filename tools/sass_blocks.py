#!/usr/bin/env python3
"""One kernel launch's executed instructions by SASS block.

Reads Nsight Compute's source page of a report, exported as CSV with the
SASS (`ncu -i <report> --page source --csv --print-source sass`): one
section per profiled launch, a row per instruction with its executed warp
instructions and warp-state samples. A block here is a run of consecutive
instructions that executed equally often: a basic block, or a stretch of
one. Prints the launch's totals and its warp-state samples by stall reason,
then its blocks by instructions executed, each with its share of the
launch's instructions and samples, how often it ran and its first
instructions.

With --against, a second export of the same build (another input, another
routing) is read too, and the blocks are listed by the instructions they
added there: where a change of input costs. A block is then a run whose
counts are equal in both.

  tools/sass_blocks.py <source.csv> [--kernel REGEX] [--launch N]
                       [--against other.csv] [--top N]
"""
import argparse
import csv
import re
import sys


def launches(path):
    """(kernel name, [(mnemonic text, executed, samples)], {stall reason:
    samples}) per launch section."""
    found = []
    executed = samples = None
    reasons = {}
    for row in csv.reader(open(path, newline="")):
        if not row:
            continue
        if row[0] == "Kernel Name":
            found.append((row[1], [], {}))
        elif row[0] == "Address":
            executed = row.index("Instructions Executed")
            samples = row.index("Warp Stall Sampling (All Samples)")
            reasons = {name[len("stall_"):]: i for i, name in enumerate(row)
                       if name.startswith("stall_") and "Not Issued" not in name}
        elif found and executed is not None:
            found[-1][1].append((row[1].strip(), int(row[executed] or 0), int(row[samples] or 0)))
            stalls = found[-1][2]
            for reason, i in reasons.items():
                stalls[reason] = stalls.get(reason, 0) + int(float(row[i] or 0))
    return found


def pick(path, kernel, index):
    matching = [launch for launch in launches(path) if re.search(kernel, launch[0])]
    if index >= len(matching):
        sys.exit("sass_blocks: %s has %d launches matching %r" % (path, len(matching), kernel))
    return matching[index]


def blocks(counts):
    """[first, end) of each run of consecutive equal counts (an
    instruction's executions, or a pair of them from two exports)."""
    runs, first = [], 0
    for i in range(1, len(counts) + 1):
        if i == len(counts) or counts[i] != counts[first]:
            runs.append((first, i))
            first = i
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv")
    parser.add_argument("--kernel", default=".", help="regex on the kernel's name")
    parser.add_argument("--launch", type=int, default=0, help="which matching launch (from 0)")
    parser.add_argument("--against", help="a second export of the same build")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()

    name, rows, stalls = pick(args.csv, args.kernel, args.launch)
    total = sum(r[1] for r in rows)
    total_samples = sum(r[2] for r in rows) or 1
    print("%s\n  %d instructions, %d warp instructions executed, %d samples" %
          (name, len(rows), total, total_samples))
    stalled = sum(stalls.values()) or 1
    print("  samples by stall reason: " +
          ", ".join("%s %.3f" % (reason, n / stalled)
                    for reason, n in sorted(stalls.items(), key=lambda item: -item[1])
                    if n / stalled >= 0.01))
    other = None
    if args.against:
        other_name, other, _ = pick(args.against, args.kernel, args.launch)
        if len(other) != len(rows):
            sys.exit("sass_blocks: the two exports are not of the same kernel code")
        other_total = sum(r[1] for r in other)
        print("against %s\n  %d warp instructions executed (%.3fx)" %
              (other_name, other_total, other_total / max(total, 1)))
        key = [(r[1], o[1]) for r, o in zip(rows, other)]
    else:
        key = [r[1] for r in rows]

    table = []
    for first, end in blocks(key):
        runs = rows[first][1]
        executed = runs * (end - first)
        added = (other[first][1] - runs) * (end - first) if other else 0
        if (added if other else executed) <= 0:
            continue
        block_samples = sum(r[2] for r in (other or rows)[first:end])
        table.append((added if other else executed, first, end, block_samples))
    table.sort(reverse=True)
    base = (sum(o[1] for o in other) - total) if other else total
    samples_base = sum(o[2] for o in other) if other else total_samples
    print("%-13s %6s %12s %7s %8s  %s" % ("block", "length", "added" if other else "executed",
                                         "share", "samples", "first instructions"))
    for value, first, end, block_samples in table[:args.top]:
        text = "; ".join(r[0] for r in rows[first:min(end, first + 3)])
        print("%6d-%-6d %6d %12d %7.3f %8.3f  %s" %
              (first, end - 1, end - first, value, value / max(base, 1),
               block_samples / max(samples_base, 1), text[:80]))


if __name__ == "__main__":
    main()

"""The benchmarks' shared arithmetic and outputs: the roofline floor, a text
table and a PNG of roofline efficiencies.

A record (one per preset, tokens, routing, pass and launch) holds "ms" and
"efficiency", each a dict from method name to a number or None (a method
that could not run the case). Ratios are one method's time over another's,
by default each method's over groupgemm's ("<method> / ours": above 1 means
groupgemm is faster).
"""

import datetime
import json
from typing import Dict, List, Optional, Sequence, Tuple


def floor_ms(rows: int, used_groups: int, n: int, k: int, pass_name: str,
             rates: Dict[str, float]) -> float:
    """The roofline floor (docs/DESIGN.md, "Performance method") of the
    up-projection y = x @ w[g]^T of `rows` bf16 rows over `used_groups`
    non-empty experts: max(FLOPs / the dense rate, bytes / the copy rate),
    bytes counting every input and output once; "fwd+bwd" adds dgrad and
    wgrad."""
    x_bytes, y_bytes, w_bytes = 2 * rows * k, 2 * rows * n, 2 * used_groups * n * k
    flops = 2 * rows * n * k
    moved = x_bytes + w_bytes + y_bytes
    if pass_name == "fwd+bwd":
        flops *= 3
        moved += (y_bytes + w_bytes + x_bytes) + (y_bytes + x_bytes + w_bytes)  # dgrad, wgrad
    return 1e3 * max(flops / rates["dense_flops"], moved / rates["copy_bytes_per_s"])


def write_json(path: str, device: str, framework: Dict[str, str], command: str,
               rates: Dict[str, float], records: List[dict]) -> None:
    """Every figure of a run, with what it ran on (framework: {"torch": version})."""
    summary = {"device": device, **framework, "date": datetime.date.today().isoformat(),
               "command": command, "rates": rates, "results": records}
    with open(path, "w") as f:
        json.dump(summary, f, indent=1)


def _cell(value: Optional[float], pattern: str) -> str:
    return "n/a" if value is None else pattern % value


def ratio(ms: dict, numerator: str, denominator: str) -> Optional[float]:
    """ms[numerator] / ms[denominator], None when either is missing."""
    if ms[numerator] is None or ms[denominator] is None:
        return None
    return ms[numerator] / ms[denominator]


def print_table(records: List[dict], methods: Sequence[str],
                ratios: Optional[Sequence[Tuple[str, str, str]]] = None) -> None:
    """Milliseconds, ratios and efficiencies of `methods`, one row per
    record. ratios: (heading, numerator, denominator) columns, by default
    ("<method> / ours", method, "groupgemm") for every other method."""
    if ratios is None:
        ratios = [("%s / ours" % m, m, "groupgemm") for m in methods if m != "groupgemm"]
    headings = ["preset", "tokens", "routing", "pass", "run"]
    headings += ["%s ms" % m for m in methods]
    headings += [heading for heading, _, _ in ratios]
    headings += ["eff %s" % m for m in methods]
    rows = []
    for r in records:
        row = [r["preset"], str(r["tokens"]), r["routing"], r["pass"], r["launch"]]
        row += [_cell(r["ms"][m], "%.3f") for m in methods]
        row += [_cell(ratio(r["ms"], top, bottom), "%.2f") for _, top, bottom in ratios]
        row += [_cell(r["efficiency"][m], "%.2f") for m in methods]
        rows.append(row)
    widths = [max([len(h)] + [len(row[i]) for row in rows]) for i, h in enumerate(headings)]
    print("  ".join(h.rjust(w) for h, w in zip(headings, widths)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))


def draw_png(records: List[dict], methods: Sequence[str], path: str) -> None:
    """One bar chart per (pass, launch): each case's efficiency by method.

    The dense product is left out: it moves one weight matrix where the
    grouped products move G, so its efficiency against the grouped roofline
    is not comparable and would only stretch the axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = [m for m in methods if m != "dense"]
    panels = sorted({(r["pass"], r["launch"]) for r in records})
    figure, axes = plt.subplots(len(panels), 1, figsize=(14, 3.6 * len(panels)), squeeze=False)
    width = 0.8 / len(methods)
    for axis, (pass_name, launch) in zip(axes[:, 0], panels):
        cases = [r for r in records if (r["pass"], r["launch"]) == (pass_name, launch)]
        for i, method in enumerate(methods):
            positions = [c + (i - (len(methods) - 1) / 2) * width for c in range(len(cases))]
            heights = [r["efficiency"][method] or 0.0 for r in cases]
            axis.bar(positions, heights, width, label=method)
        axis.set_xticks(range(len(cases)))
        labels = ["%s %d %s" % (r["preset"], r["tokens"], r["routing"]) for r in cases]
        axis.set_xticklabels(labels, fontsize=7, rotation=35, ha="right")
        axis.set_ylabel("roofline efficiency")
        axis.set_title("%s, %s (higher is better; 1 = the roofline)" % (pass_name, launch))
        axis.axhline(1.0, color="gray", linewidth=0.5)
        axis.legend(fontsize=7, ncol=len(methods))
    figure.tight_layout()
    figure.savefig(path, dpi=120)

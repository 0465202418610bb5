"""The Mixture-of-Experts problems the benchmarks measure, as the CLI has them.

Mirrors src/cli/presets.cpp and src/cli/routing.cpp: each model is measured
on its first expert GEMM, the up-projection with gate and up fused into one
weight (N = 2 * ffn, K = hidden, M = tokens * top_k routed rows). Routings
follow the CLI's rules: uniform (rows / G each, the remainder one by one
over the first groups) and skewed (Zipf weights 1 / rank^1.2 over a seeded
order of the experts, the last ~10% of that order empty, apportioned by
largest remainders). The seeded order comes from Python's random module, so
skewed sizes have the CLI's shape but not its exact numbers.
"""

import math
import random
from dataclasses import dataclass
from typing import List


@dataclass(frozen=True)
class MoePreset:
    name: str
    hidden: int
    ffn: int  # per expert
    experts: int
    top_k: int

    @property
    def n(self) -> int:
        return 2 * self.ffn

    @property
    def k(self) -> int:
        return self.hidden

    def rows(self, tokens: int) -> int:
        return tokens * self.top_k


PRESETS = [
    MoePreset("deepseek-v3", 7168, 2048, 256, 8),
    MoePreset("mixtral-8x7b", 4096, 14336, 8, 2),
    MoePreset("qwen3-30b-a3b", 2048, 768, 128, 8),
    MoePreset("qwen3-235b-a22b", 4096, 1536, 128, 8),
    MoePreset("gpt-oss-120b", 2880, 2880, 128, 4),
    MoePreset("llama4-maverick", 5120, 8192, 128, 1),
]

DECODE_TOKENS = 2048
PREFILL_TOKENS = 16384
ROUTINGS = ("uniform", "skewed")

_ZIPF_EXPONENT = 1.2
_EMPTY_FRACTION = 0.1


def find(name: str) -> MoePreset:
    for preset in PRESETS:
        if preset.name == name:
            return preset
    raise ValueError("unknown preset %r (known: %s)" % (name, ", ".join(p.name for p in PRESETS)))


def _apportion(rows: int, weights: List[float]) -> List[int]:
    """Largest-remainder split of `rows` by `weights`: exact sum, ties to the lower index."""
    total = sum(weights)
    shares = [rows * w / total for w in weights]
    sizes = [math.floor(s) for s in shares]
    by_remainder = sorted(range(len(weights)), key=lambda g: -(shares[g] - sizes[g]))
    for i in range(rows - sum(sizes)):
        sizes[by_remainder[i % len(weights)]] += 1
    return sizes


def route(routing: str, rows: int, groups: int, seed: int = 0) -> List[int]:
    """Group sizes summing to `rows`."""
    if routing == "uniform":
        return [rows // groups + (1 if g < rows % groups else 0) for g in range(groups)]
    if routing == "skewed":
        order = list(range(groups))
        random.Random(seed).shuffle(order)
        served = groups - round(_EMPTY_FRACTION * groups)
        weights = [0.0] * groups
        for rank in range(served):
            weights[order[rank]] = 1.0 / (rank + 1.0) ** _ZIPF_EXPONENT
        return _apportion(rows, weights)
    raise ValueError("unknown routing %r (known: %s)" % (routing, ", ".join(ROUTINGS)))

"""python -m groupgemm.bench_recipes: a grouped linear training step per recipe beside bf16.

For each MoE preset (groupgemm.presets) and token count, the up-projection
as groupgemm.torch.GroupedLinear(G, K, N, bias=False) runs one training
step: the forward, then the gradients of x and of the weight, the recipe's
quantize launches included (the weights' copies are made once, as an
optimizer step would leave them). Each is timed eager and captured in a
CUDA graph, one recipe after the other in the same run on the same GPU:
bf16 (no recipe) and every recipe of RECIPES. A recipe that a GPU kernel of this build does not take
on this GPU is named, with the reason, and skipped. ms, and × the bf16
step of the same launch. Uniform routing unless --routing says otherwise
(presets.ROUTINGS). Without a CUDA GPU a run says so and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Dict, Optional

from . import _optional, presets
from .errors import NotSupported

PROG = "python -m groupgemm.bench_recipes"
try:
    import torch

    from . import torch as ggt
    from .bench import _graphed, time_in_turn
except ModuleNotFoundError as error:
    if _optional.missing_framework(error) != "torch":
        raise
    torch = ggt = _optional.Absent(PROG, "torch")

RECIPES = ["fp8_tensor", "fp8_group", "fp8_rowwise", "fp8_blockwise", "mxfp8", "nvfp4"]


def training_step(preset, rows: int, recipe: Optional[str],
                  routing: str = "uniform") -> Callable[[], tuple]:
    """One step of a fresh layer: forward, then dx and dw."""
    torch.manual_seed(0)
    layer = ggt.GroupedLinear(preset.experts, preset.k, preset.n, bias=False,
                              dtype=torch.bfloat16, device="cuda", recipe=recipe)
    x = torch.randn(rows, preset.k, dtype=torch.bfloat16, device="cuda").requires_grad_()
    dy = torch.randn(rows, preset.n, dtype=torch.bfloat16, device="cuda")
    sizes = torch.tensor(presets.route(routing, rows, preset.experts), dtype=torch.int32,
                         device="cuda")
    return lambda: torch.autograd.grad(layer(x, sizes), (x, layer.weight), dy)


def measure(preset, tokens: int, args) -> Dict[str, float]:
    """ms of each recipe's step, eager and graphed ("<recipe> graph"), one
    recipe at a time (a DeepSeek-V3 layer's weights, their copies and
    gradients take tens of GB)."""
    rows = preset.rows(tokens)
    times: Dict[str, float] = {}
    for recipe in [None] + args.recipes:
        name = recipe or "bf16"
        steps: Dict[str, Callable] = {}
        try:
            step = training_step(preset, rows, recipe, args.routing)
            step()
            steps = {name: step, name + " graph": _graphed(step)}
            times.update(time_in_turn(steps, args.warmup, args.reps))
        except NotSupported as error:
            print("  not run: %s: %s" % (name, str(error).splitlines()[0]), file=sys.stderr)
        except torch.cuda.OutOfMemoryError:
            print("  not run: %s: out of memory" % name, file=sys.stderr)
        step = steps = None
        torch.cuda.empty_cache()
    return times


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--presets", default="qwen3-30b-a3b,deepseek-v3")
    parser.add_argument("--tokens", default=str(presets.PREFILL_TOKENS))
    parser.add_argument("--recipes", type=lambda text: text.split(","), default=RECIPES)
    parser.add_argument("--routing", choices=presets.ROUTINGS, default="uniform")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if isinstance(torch, _optional.Absent) or not torch.cuda.is_available():
        print("%s: no CUDA GPU (or no torch): nothing to time" % PROG)
        return 0
    print("# %s, %s routing" % (torch.cuda.get_device_name(), args.routing))
    print("%-16s %6s %-20s %9s %7s" % ("preset", "tokens", "recipe", "ms", "xbf16"))
    for name in args.presets.split(","):
        preset = presets.find(name)
        for tokens in (int(t) for t in args.tokens.split(",")):
            times = measure(preset, tokens, args)
            for method, ms in times.items():
                baseline = times.get("bf16 graph" if method.endswith(" graph") else "bf16")
                print("%-16s %6d %-20s %9.3f %7.2f" % (
                    preset.name, tokens, method, ms, baseline / ms if baseline else float("nan")))
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())

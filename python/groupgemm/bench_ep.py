"""torchrun --nproc-per-node N -m groupgemm.bench_ep: the expert-parallel MoE step on N GPUs.

One training step (forward and backward through router and experts) of a
MoE preset's layer (groupgemm.presets: hidden, ffn, experts, top-k; fc1 is
[ffn, hidden] here, no gate), --tokens per rank, bf16, NCCL, timed as:

  ep          groupgemm.torch.moe.ExpertParallelMoE over all N ranks, eager
  ep graph    the same step replayed from one CUDA graph
  host-sync   the same weights and routing, dropless, tokens exchanged by
              all_to_all_single with split sizes read on the host (.tolist()),
              as an exchange of variable sizes needs: eager only
  one-gpu     ExpertParallelMoE over a one-rank group on each GPU: every
              expert local, the same tokens per GPU, no exchange but local copies

and the ep step's two parts alone: its four all-to-alls of token slots
(out, back, and their gradients) and its expert GEMMs (fc1, activation,
fc2, forward and backward over the rows one step routed). Figures are the
median of --reps CUDA-event timings after --warmup steps, the slowest rank's;
tokens/s counts the tokens of all ranks. The routing is the router's, on
random tokens: near uniform. Before timing, the ep layer without a capacity
is checked against host-sync on the same tokens.
"""

from __future__ import annotations  # annotations name torch, which --help does without

import argparse
import math
import os
import sys

from . import _optional, presets

PROG = "torchrun --nproc-per-node N -m groupgemm.bench_ep"
try:
    import torch
    import torch.distributed as dist

    from .bench import _graphed, time_ms
    from .torch import moe
except ModuleNotFoundError as error:
    if _optional.missing_framework(error) != "torch":
        raise
    torch = dist = moe = _optional.Absent(PROG, "torch")  # main() says what to install

METHODS = ("ep", "host-sync", "one-gpu")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="qwen3-30b-a3b",
                        help="MoE preset (%s)" % ", ".join(p.name for p in presets.PRESETS))
    parser.add_argument("--tokens", type=int, default=4096, help="tokens per rank")
    capacity = parser.add_mutually_exclusive_group()
    capacity.add_argument("--capacity-factor", type=float, default=1.25,
                          help="slots per (source rank, expert) = ceil(factor * tokens * top-k "
                          "/ experts) (default 1.25)")
    capacity.add_argument("--dropless", action="store_true",
                          help="no capacity: slots for every token (memory: experts x tokens rows)")
    parser.add_argument("--methods", default=",".join(METHODS), help="of: " + ", ".join(METHODS))
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    try:
        args.model = presets.find(args.preset)
    except ValueError as e:
        parser.error("--preset: %s" % e)
    if args.model.experts % world:
        parser.error("--preset: %d experts cannot be split evenly over %d ranks"
                     % (args.model.experts, world))
    if args.tokens < 1:
        parser.error("--tokens: expected a positive count, got %d" % args.tokens)
    if not args.capacity_factor > 0:
        parser.error("--capacity-factor: expected a positive factor, got %g" % args.capacity_factor)
    args.methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(args.methods) - set(METHODS))
    if unknown:
        parser.error("--methods: unknown %s (known: %s)" % (", ".join(unknown), ", ".join(METHODS)))
    if args.warmup < 1 or args.reps < 1:
        parser.error("--warmup and --reps: expected positive counts")
    args.capacity = None if args.dropless else math.ceil(
        args.capacity_factor * args.tokens * args.model.top_k / args.model.experts)
    return args


# ---- the host-synced exchange --------------------------------------------------------


# Without torch, --help still works: the class then has no use.
_Function = torch.autograd.Function if _optional.installed("torch") else object


class _VariableAllToAll(_Function):
    """all_to_all_single with host split sizes; the gradient swaps them."""

    @staticmethod
    def forward(ctx, x, out_splits, in_splits, group):
        ctx.splits = (in_splits, out_splits, group)
        out = x.new_empty((sum(out_splits),) + x.shape[1:])
        dist.all_to_all_single(out, x.contiguous(), out_splits, in_splits, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        in_splits, out_splits, group = ctx.splits
        return _VariableAllToAll.apply(grad, in_splits, out_splits, group), None, None, None


def _inverse_permutation(order):
    return torch.empty_like(order).scatter_(0, order, torch.arange(len(order), device=order.device))


def host_synced_step(layer, x):
    """The layer's router and experts, dropless, tokens sorted by expert and
    exchanged in variable sizes that the host reads (.tolist())."""
    world, local, k = layer.world, layer.local_experts, layer.top_k
    weights, experts = torch.softmax(layer.router(x.float()), dim=-1).topk(k, dim=-1)
    flat = experts.reshape(-1)
    order = torch.sort(flat, stable=True).indices
    counts = torch.bincount(flat, minlength=layer.num_experts).view(world, local)
    received = moe._all_to_all(counts, layer.group)  # [source, local expert]
    send_splits, recv_splits = counts.sum(1).tolist(), received.sum(1).tolist()
    rows = _VariableAllToAll.apply(x[order // k], recv_splits, send_splits, layer.group)
    # Received source after source, each source's rows expert after expert:
    # regroup expert after expert, as the GEMMs need.
    chunk = torch.repeat_interleave(received.reshape(-1), output_size=rows.shape[0])
    chunk_start = received.reshape(-1).cumsum(0) - received.reshape(-1)
    sizes = received.sum(0)
    expert_start = sizes.cumsum(0) - sizes
    source_start = received.cumsum(0) - received
    packed = (expert_start[chunk % local] + source_start.reshape(-1)[chunk]
              + torch.arange(rows.shape[0], device=x.device) - chunk_start[chunk])
    y = layer.fc2(layer.activation(layer.fc1(rows[_inverse_permutation(packed)], sizes)), sizes)
    back = _VariableAllToAll.apply(y[packed], send_splits, recv_splits, layer.group)
    per_assignment = back[_inverse_permutation(order)].view(-1, k, layer.hidden)
    return (per_assignment.float() * weights.unsqueeze(-1)).sum(1).to(x.dtype)


# ---- the measurements ----------------------------------------------------------------


def make_layer(args, group):
    model = args.model
    return moe.ExpertParallelMoE(model.hidden, model.ffn, model.experts, model.top_k, group=group,
                                 capacity=args.capacity, dtype=torch.bfloat16, device="cuda")


def check(layer, x):
    """The dropless ep layer against host-sync: the two exchanges must agree."""
    capacity, layer.capacity = layer.capacity, None
    try:
        with torch.no_grad():
            ours, theirs = layer(x).float(), host_synced_step(layer, x).float()
    finally:
        layer.capacity = capacity
    difference = (ours - theirs).norm() / theirs.norm().clamp_min(1e-30)
    if difference > 1e-2:
        raise RuntimeError("ep differs from host-sync by %.3g (relative norm)" % difference)


def slowest(ms: float) -> float:
    value = torch.tensor([ms], device="cuda")
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return value.item()


def step_of(forward, x, dy):
    def step():
        forward(x).backward(dy)

    return step


def time_parts(layer, x, dy, args):
    """(all-to-all ms, GEMM ms) of one ep step, each timed alone."""
    captured = {}
    hook = layer.fc1.register_forward_hook(
        lambda module, inputs, output: captured.update(rows=inputs[0], sizes=inputs[1]))
    with torch.no_grad():
        layer(x)
    hook.remove()
    slots = torch.empty(layer.num_experts * (layer.capacity or x.shape[0]), layer.hidden,
                        dtype=x.dtype, device=x.device)
    landing = torch.empty_like(slots)

    def exchanges():
        for _ in range(4):
            dist.all_to_all_single(landing, slots, group=layer.group)

    rows, sizes = captured["rows"].detach().requires_grad_(), captured["sizes"]
    grad = torch.randn_like(rows)

    def gemms():
        layer.fc2(layer.activation(layer.fc1(rows, sizes)), sizes).backward(grad)

    return (slowest(time_ms(exchanges, args.warmup, args.reps)),
            slowest(time_ms(gemms, args.warmup, args.reps)))


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if _optional.report_missing(PROG, "torch"):
        return 1
    if not torch.cuda.is_available():
        print("groupgemm.bench_ep needs CUDA GPUs (NCCL)", file=sys.stderr)
        return 1
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    own = [dist.new_group([r]) for r in range(world)][rank]  # every rank makes every group
    torch.manual_seed(args.seed + rank)
    x = torch.randn(args.tokens, args.model.hidden, dtype=torch.bfloat16, device="cuda")
    dy = torch.randn_like(x)
    torch.manual_seed(args.seed)  # the same router on every rank
    layer = make_layer(args, None)
    check(layer, x[:512])  # dropless: slots for experts x tokens rows

    results = {}
    if "ep" in args.methods:
        step = step_of(layer, x, dy)
        results["ep"] = slowest(time_ms(step, args.warmup, args.reps))
        results["ep graph"] = slowest(time_ms(_graphed(step), args.warmup, args.reps))
        exchange_ms, gemm_ms = time_parts(layer, x, dy, args)
    if "host-sync" in args.methods:
        step = step_of(lambda t: host_synced_step(layer, t), x, dy)
        results["host-sync"] = slowest(time_ms(step, args.warmup, args.reps))
    if "one-gpu" in args.methods:
        del layer
        torch.cuda.empty_cache()
        alone = make_layer(args, own)
        results["one-gpu"] = slowest(time_ms(step_of(alone, x, dy), args.warmup, args.reps))

    if rank == 0:
        model = args.model
        print("%s on %d x %s: %d tokens per rank, capacity %s per (rank, expert), "
              "forward + backward" % (model.name, world, torch.cuda.get_device_name(),
                                      args.tokens, args.capacity or "none (dropless)"))
        for name, ms in results.items():
            print("  %-10s %9.3f ms  %12.0f tokens/s" % (name, ms, world * args.tokens / ms * 1e3))
        if "ep" in args.methods:
            print("  ep parts alone: all-to-all %.3f ms, expert GEMMs %.3f ms, the rest of the "
                  "eager step %.3f ms" % (exchange_ms, gemm_ms,
                                          results["ep"] - exchange_ms - gemm_ms))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

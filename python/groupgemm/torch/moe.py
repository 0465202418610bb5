"""ExpertParallelMoE: a mixture-of-experts layer whose experts are spread over
the ranks of a torch.distributed process group.

One step, on every rank, with T local tokens, E experts, W ranks, L = E / W
experts per rank (rank r holds experts r*L .. r*L + L - 1) and a capacity
of C slots per (source rank, expert):

  route     softmax router (fp32), top-k experts per token; each expert's
            assignments in token order; the first C of them get its slots,
            the rest are dropped (counted in `dropped`) and add nothing
  dispatch  send[e*C + i] = the token of expert e's i-th kept assignment:
            [W, L, C, hidden], rank d's experts in block d
  exchange  all_to_all_single of the kept counts [W, L] and of the slots,
            equal splits: rank d receives [W (source), L, C, hidden]
  pack      a gather puts the received rows expert after expert
            (each expert's rows source after source), so that expert l's
            rows are one contiguous group; its size is the sum of its
            received counts
  experts   GroupedLinear fc1 -> activation -> GroupedLinear fc2 over the
            L groups, sizes on the device
  return    the inverse gather back to slots, all_to_all_single back, and
            each token's sum of its kept experts' outputs times their
            router probabilities

Every size, offset and index stays on the device: the step makes no host
read (.item(), .tolist(), .cpu()) and no shape depends on the routing, so it
can be captured in a CUDA graph. The gathers' gradients are gathers too
(every row is read by a known set of rows), so the backward is deterministic
and uses no atomics; the all-to-alls' gradients are the reverse all-to-alls.

Received rows are packed by a gather rather than read in place through
per-group offsets: the rows of one expert from different source ranks are
not contiguous in the slots, so in-place groups would be (source, expert)
pairs, whose weight gradients are W partial products of one matrix.
"""

from typing import Callable, Optional

import torch
import torch.distributed as dist
from torch import nn

from .linear import GroupedLinear


class _AllToAll(torch.autograd.Function):
    """all_to_all_single with equal splits; its gradient is the same exchange
    of the gradient (block s of the output came from rank s, and goes back)."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return _all_to_all(x, group)

    @staticmethod
    def backward(ctx, grad):
        return _all_to_all(grad.contiguous(), ctx.group), None


def _all_to_all(x: torch.Tensor, group) -> torch.Tensor:
    out = torch.empty_like(x)
    dist.all_to_all_single(out, x, group=group)
    return out


def _gather(src: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """src[index], with zero rows where index == len(src) (no row)."""
    rows = src.shape[0]
    if rows == 0:
        return src.new_zeros((index.shape[0],) + src.shape[1:])
    out = src.index_select(0, index.clamp(max=rows - 1))
    # masked_fill, not a product: rows outside every group hold whatever was
    # in memory, NaN included.
    return out.masked_fill_((index == rows).unsqueeze(1), 0)


class _GatherRows(torch.autograd.Function):
    """out[i] = src[index[i]] (zeros where index[i] == len(src)), where
    readers [len(src), fan] lists the out rows that read each src row
    (len(out) for none): the gradient of src row j is the sum of the
    gradients of its readers, a gather as well."""

    @staticmethod
    def forward(ctx, src, index, readers):
        ctx.save_for_backward(readers)
        return _gather(src, index)

    @staticmethod
    def backward(ctx, grad):
        (readers,) = ctx.saved_tensors
        rows, fan = readers.shape
        dsrc = _gather(grad.contiguous(), readers.reshape(-1))
        if fan > 1:
            dsrc = dsrc.view(rows, fan, grad.shape[1]).sum(1)
        return dsrc, None, None


def _inverse(index: torch.Tensor, size: int) -> torch.Tensor:
    """inverse[j] = the i with index[i] == j, for j < size (index is one to
    one where below size), else len(index)."""
    positions = torch.arange(index.shape[0], device=index.device)
    inverse = torch.full((size + 1,), index.shape[0], dtype=index.dtype, device=index.device)
    return inverse.scatter_(0, index, positions)[:size]


def _slots(experts: torch.Tensor, num_experts: int, capacity: int):
    """Where this rank's assignments go. experts [T, k] -> (slot of each
    assignment [T, k], num_experts * capacity where dropped; assignment of
    each slot [E * C], T * k where empty; assignments per expert [E])."""
    flat = experts.reshape(-1)
    counts = torch.zeros(num_experts, dtype=torch.int64, device=flat.device)
    counts.scatter_add_(0, flat, torch.ones_like(flat))
    # An assignment's place among its expert's: a stable sort keeps token order.
    order = torch.sort(flat, stable=True).indices
    starts = counts.cumsum(0) - counts
    in_order = torch.arange(flat.shape[0], device=flat.device) - starts[flat[order]]
    place = torch.empty_like(flat).scatter_(0, order, in_order)
    slot = torch.where(place < capacity, flat * capacity + place, num_experts * capacity)
    return slot.view(experts.shape), _inverse(slot, num_experts * capacity), counts


def _packing(received: torch.Tensor, capacity: int):
    """received [W, L] kept counts from each source for each local expert ->
    (group sizes [L]; packed row of each received slot [W * L * C], the row
    count where the slot is empty; slot of each packed row, the same count
    past the groups). Expert l's rows come source after source."""
    sizes = received.sum(0)
    expert_start = sizes.cumsum(0) - sizes
    source_start = received.cumsum(0) - received
    within = torch.arange(capacity, device=received.device)
    rows = received.numel() * capacity
    packed = (expert_start + source_start).unsqueeze(-1) + within
    packed_of_slot = torch.where(within < received.unsqueeze(-1), packed, rows).reshape(-1)
    return sizes, packed_of_slot, _inverse(packed_of_slot, rows)


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("%s: expected a positive int, got %r" % (name, value))
    return value


class ExpertParallelMoE(nn.Module):
    """Top-k mixture of num_experts experts (fc1 -> activation -> fc2, each a
    GroupedLinear), experts split evenly over the ranks of `group`.

    forward(x [..., hidden]) returns x's shape and dtype. Every rank of the
    group builds the layer with the same arguments and calls it together.
    The router (`router`, fp32, replicated) must hold the same weights on
    every rank (seed alike, or broadcast it); fc1 and fc2 hold this rank's
    num_experts / world experts, in `dtype` (bfloat16 or float16, x's
    dtype); `recipe`, when given, goes to both GroupedLinears (quantized
    experts). activation: an elementwise callable between fc1 and fc2.

    capacity: slots per (source rank, expert), so each rank sends every
    rank num_experts / world * capacity rows. An expert's assignments past
    its capacity are dropped, in token order (earlier tokens keep theirs):
    they add nothing to their token's output, the other experts' shares are
    not renormalized, and `dropped` [num_experts] (int64, on the device)
    counts this rank's dropped assignments of each expert in the last
    forward. None: capacity = this rank's token count, the most one rank
    can route to one expert, so nothing is dropped (every rank must then
    pass as many tokens).

    The ranks compare their inputs and settings (one small all-gather) on
    the first call and whenever this rank's input shape changes, so a
    mismatch is a ValueError on every rank rather than a hang; ranks must
    change their input shapes on the same call. Such a check cannot run
    during CUDA graph capture: run the layer once on the shape first.
    """

    def __init__(
        self,
        hidden: int,
        ffn: int,
        num_experts: int,
        top_k: int,
        group: Optional[dist.ProcessGroup] = None,
        capacity: Optional[int] = None,
        activation: Callable[[torch.Tensor], torch.Tensor] = nn.functional.gelu,
        dtype: Optional[torch.dtype] = None,
        recipe=None,
        bias: bool = True,
        device=None,
    ):
        super().__init__()
        if not dist.is_available() or not dist.is_initialized():
            raise ValueError(
                "group: torch.distributed is not initialized; call "
                "torch.distributed.init_process_group first"
            )
        self.hidden = _positive("hidden", hidden)
        self.ffn = _positive("ffn", ffn)
        self.num_experts = _positive("num_experts", num_experts)
        self.top_k = _positive("top_k", top_k)
        if top_k > num_experts:
            raise ValueError("top_k: %d is more than num_experts (%d)" % (top_k, num_experts))
        self.capacity = None if capacity is None else _positive("capacity", capacity)
        if not callable(activation):
            raise TypeError("activation: expected a callable, got %r" % (activation,))
        self.group = group
        self.world = dist.get_world_size(group)
        if num_experts % self.world != 0:
            raise ValueError(
                "num_experts: %d experts cannot be split evenly over %d ranks"
                % (num_experts, self.world)
            )
        self.local_experts = num_experts // self.world
        self.activation = activation
        self.router = nn.Linear(hidden, num_experts, bias=False, dtype=torch.float32, device=device)
        experts = dict(bias=bias, dtype=dtype, device=device)
        if recipe is not None:  # quantized experts, as GroupedLinear runs them
            experts["recipe"] = recipe
        self.fc1 = GroupedLinear(self.local_experts, hidden, ffn, **experts)
        self.fc2 = GroupedLinear(self.local_experts, ffn, hidden, **experts)
        self.register_buffer(
            "dropped", torch.zeros(num_experts, dtype=torch.int64, device=device), persistent=False
        )
        self._agreed = None  # the input signature the ranks last agreed on

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._agree(x)
        shape = x.shape
        x = x.reshape(-1, self.hidden)
        tokens, experts_total = x.shape[0], self.num_experts
        # At least one slot: an empty batch still exchanges (empty) slots.
        capacity = max(tokens, 1) if self.capacity is None else self.capacity

        probs = torch.softmax(self.router(x.float()), dim=-1)
        weights, experts = probs.topk(self.top_k, dim=-1)
        slot, assignment_of_slot, counts = _slots(experts, experts_total, capacity)
        sent = counts.clamp(max=capacity)
        with torch.no_grad():
            self.dropped.copy_(counts - sent)

        token_of_slot = assignment_of_slot // self.top_k  # T where empty
        send = _GatherRows.apply(x, token_of_slot, slot)
        received = _all_to_all(sent.view(self.world, self.local_experts), self.group)
        slots_in = _AllToAll.apply(send, self.group)

        sizes, packed_of_slot, slot_of_packed = _packing(received, capacity)
        rows = _GatherRows.apply(slots_in, slot_of_packed, packed_of_slot.unsqueeze(1))
        rows = self.fc2(self.activation(self.fc1(rows, sizes)), sizes)
        slots_out = _GatherRows.apply(rows, packed_of_slot, slot_of_packed.unsqueeze(1))
        back = _AllToAll.apply(slots_out, self.group)

        per_assignment = _GatherRows.apply(back, slot.reshape(-1), assignment_of_slot.unsqueeze(1))
        per_assignment = per_assignment.view(tokens, self.top_k, self.hidden)
        out = (per_assignment.float() * weights.unsqueeze(-1)).sum(1)
        return out.to(x.dtype).reshape(shape)

    # ---- the ranks' agreement on inputs and settings ---------------------------

    def _settings(self) -> tuple:
        return (self.hidden, self.ffn, self.num_experts, self.top_k, self.capacity,
                str(self.fc1.weight.dtype))

    def _input_problem(self, x: torch.Tensor) -> Optional[str]:
        weight = self.fc1.weight
        if x.dim() < 2 or x.shape[-1] != self.hidden:
            return "x: expected [..., %d], got shape %s" % (self.hidden, list(x.shape))
        if x.dtype != weight.dtype:
            return "x: dtype %s differs from the experts' %s" % (x.dtype, weight.dtype)
        if x.device != weight.device:
            return "x: on %s, the layer on %s" % (x.device, weight.device)
        return None

    def _agree(self, x: torch.Tensor) -> None:
        signature = (tuple(x.shape), x.dtype, x.device)
        if signature == self._agreed:
            return
        if x.is_cuda and torch.cuda.is_current_stream_capturing():
            raise ValueError(
                "x: shape %s was not seen before CUDA graph capture; run the layer once on it "
                "first (the ranks check each other's inputs, which cannot be captured)"
                % list(x.shape)
            )
        problem = self._input_problem(x)
        tokens = None if problem else x.numel() // self.hidden
        everyone = [None] * self.world
        dist.all_gather_object(everyone, (problem, tokens, self._settings()), group=self.group)
        problems = _disagreements(everyone)
        if problems:
            raise ValueError("; ".join(problems))
        self._agreed = signature


_SETTING_NAMES = ("hidden", "ffn", "num_experts", "top_k", "capacity", "dtype")


def _disagreements(everyone) -> list:
    """What the gathered (problem, tokens, settings) of every rank say is
    wrong; every rank computes the same list."""
    problems = ["rank %d: %s" % (rank, problem) for rank, (problem, _, _) in enumerate(everyone)
                if problem]
    _, first_tokens, first_settings = everyone[0]
    same_tokens = first_settings[_SETTING_NAMES.index("capacity")] is None
    for rank, (problem, tokens, settings) in enumerate(everyone[1:], start=1):
        for name, mine, first in zip(_SETTING_NAMES, settings, first_settings):
            if mine != first:
                problems.append("%s: rank %d built the layer with %s, rank 0 with %s"
                                % (name, rank, mine, first))
        if same_tokens and None not in (tokens, first_tokens) and tokens != first_tokens:
            problems.append(
                "x: rank %d passed %d tokens, rank 0 %d; without a capacity every rank must "
                "pass as many tokens (they size the slots)" % (rank, tokens, first_tokens)
            )
    return problems

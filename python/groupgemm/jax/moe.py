"""Expert-parallel mixture of experts for JAX: experts spread over a mesh axis,
for use inside jax.shard_map.

  expert_parallel_moe(x, router, fc1_kernel, fc1_bias, fc2_kernel, fc2_bias,
                      axis_name=..., top_k=...)   one shard's step: (out, dropped)
  ExpertParallelMoE                               the same as a Flax linen module

The step is groupgemm.torch.moe's: top-k softmax routing (fp32), each
expert's first `capacity` assignments of this shard in token order kept,
tokens placed in per-(destination shard, local expert) slots of a fixed
capacity, jax.lax.all_to_all of the kept counts and of the slots, a gather
that packs the received rows expert after expert, groupgemm.jax.ragged_dot
for fc1 and fc2 over the local experts (sizes from the received counts, on
the device), the inverse gather, the all_to_all back and the weighted sum.
Every shape is static and no size leaves the device.

The exchange is the capacity all_to_all, not jax.lax.ragged_all_to_all:
XLA:CPU does not implement ragged-all-to-all (jax 0.10.2), and the capacity
form runs, and is tested, on every backend. The gathers' gradients are
gathers (custom VJPs), so the backward needs no scatter-add.

Shard s holds experts s*L .. s*L + L - 1 (L = num_experts / axis size).
Under SPMD every shard traces one program, so the settings cannot differ
between shards; bad ones are ValueErrors at trace time.
"""

import functools
from typing import Any, Callable, Optional

import flax.linen as nn
import jax
import jax.numpy as jnp

from . import ragged_dot
from .linen import _per_expert

gelu = functools.partial(jax.nn.gelu, approximate=False)


def _positive(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("%s: expected a positive int, got %r" % (name, value))
    return value


def _take(src, index):
    """src[index], zero rows where index == len(src)."""
    return jnp.take(src, index, axis=0, mode="fill", fill_value=0)


@jax.custom_vjp
def _gather_rows(src, index, readers):
    """out[i] = src[index[i]] (zeros where index[i] == len(src)); readers
    [len(src), fan] lists the out rows reading each src row (len(out) for
    none), so src's cotangent is a gather of out's and a sum over fan."""
    return _take(src, index)


def _gather_rows_fwd(src, index, readers):
    return _take(src, index), (index, readers)


def _gather_rows_bwd(residuals, cotangent):
    index, readers = residuals
    rows, fan = readers.shape
    dsrc = _take(cotangent, readers.reshape(-1)).reshape(rows, fan, cotangent.shape[1]).sum(1)
    return dsrc.astype(cotangent.dtype), _no_cotangent(index), _no_cotangent(readers)


def _no_cotangent(integers):
    return jnp.zeros(integers.shape, jax.dtypes.float0)


_gather_rows.defvjp(_gather_rows_fwd, _gather_rows_bwd)


def _inverse(index, size: int):
    """inverse[j] = the i with index[i] == j for j < size, else len(index)."""
    positions = jnp.arange(index.shape[0], dtype=jnp.int32)
    return jnp.full((size,), index.shape[0], jnp.int32).at[index].set(positions, mode="drop")


def _slots(experts, num_experts: int, capacity: int):
    """(slot of each assignment [T, k], num_experts * capacity where dropped;
    assignment of each slot [E * C], T * k where empty; assignments per
    expert [E]); as groupgemm.torch.moe._slots."""
    flat = experts.reshape(-1).astype(jnp.int32)
    counts = jnp.zeros(num_experts, jnp.int32).at[flat].add(1)
    order = jnp.argsort(flat, stable=True)
    starts = jnp.cumsum(counts) - counts
    in_order = jnp.arange(flat.shape[0], dtype=jnp.int32) - starts[flat[order]]
    place = jnp.zeros_like(flat).at[order].set(in_order)
    slot = jnp.where(place < capacity, flat * capacity + place, num_experts * capacity)
    return slot.reshape(experts.shape), _inverse(slot, num_experts * capacity), counts


def _packing(received, capacity: int):
    """received [W, L] kept counts -> (group sizes [L], packed row of each
    received slot, slot of each packed row); as groupgemm.torch.moe._packing."""
    sizes = received.sum(0)
    expert_start = jnp.cumsum(sizes) - sizes
    source_start = jnp.cumsum(received, 0) - received
    within = jnp.arange(capacity, dtype=jnp.int32)
    rows = received.size * capacity
    packed = (expert_start + source_start)[..., None] + within
    packed_of_slot = jnp.where(within < received[..., None], packed, rows).reshape(-1)
    return sizes, packed_of_slot, _inverse(packed_of_slot, rows)


def expert_parallel_moe(
    x,
    router,
    fc1_kernel,
    fc1_bias,
    fc2_kernel,
    fc2_bias,
    *,
    axis_name,
    top_k: int,
    capacity: Optional[int] = None,
    activation: Callable = gelu,
):
    """One shard's step of the expert-parallel MoE, inside shard_map over
    `axis_name`: returns (out [..., hidden] in x's dtype, dropped [E] int32).

    x [..., hidden] this shard's tokens, bfloat16 or float16; router
    [hidden, E] (Dense's layout, replicated; computed in fp32); fc1_kernel
    [L, hidden, ffn] and fc2_kernel [L, ffn, hidden] this shard's L experts
    (GroupedDense's layout), in x's dtype; fc1_bias [L, ffn] and fc2_bias
    [L, hidden] or None. capacity: slots per (source shard, expert); an
    expert's assignments past it are dropped in token order (they add
    nothing; the other shares are not renormalized) and counted in
    `dropped`, this shard's per expert. None: this shard's token count,
    the most that can reach one expert, so nothing is dropped.
    """
    world = jax.lax.axis_size(axis_name)
    hidden, num_experts = router.shape
    local = fc1_kernel.shape[0]
    _positive("top_k", top_k)
    if top_k > num_experts:
        raise ValueError("top_k: %d is more than the router's %d experts" % (top_k, num_experts))
    if num_experts % world != 0:
        raise ValueError("router: %d experts cannot be split evenly over the %d shards of %r"
                         % (num_experts, world, axis_name))
    if local * world != num_experts:
        raise ValueError("fc1_kernel: %d local experts, but the router's %d over %d shards "
                         "need %d" % (local, num_experts, world, num_experts // world))
    if x.ndim < 2 or x.shape[-1] != hidden:
        raise ValueError("x: expected [..., %d], got shape %s" % (hidden, list(x.shape)))
    shape = x.shape
    x = x.reshape(-1, hidden)
    tokens = x.shape[0]
    # At least one slot: an empty batch still exchanges (empty) slots.
    capacity = max(tokens, 1) if capacity is None else _positive("capacity", capacity)

    probs = jax.nn.softmax(x.astype(jnp.float32) @ router.astype(jnp.float32), axis=-1)
    weights, experts = jax.lax.top_k(probs, top_k)
    slot, assignment_of_slot, counts = _slots(experts, num_experts, capacity)
    sent = jnp.minimum(counts, capacity)

    send = _gather_rows(x, assignment_of_slot // top_k, slot)
    received = jax.lax.all_to_all(sent.reshape(world, local), axis_name, 0, 0, tiled=True)
    slots_in = jax.lax.all_to_all(send, axis_name, 0, 0, tiled=True)

    sizes, packed_of_slot, slot_of_packed = _packing(received, capacity)
    rows = _gather_rows(slots_in, slot_of_packed, packed_of_slot[:, None])
    rows = ragged_dot(rows, fc1_kernel, sizes, preferred_element_type=x.dtype, bias=fc1_bias)
    rows = ragged_dot(activation(rows), fc2_kernel, sizes, preferred_element_type=x.dtype,
                      bias=fc2_bias)
    slots_out = _gather_rows(rows, packed_of_slot, slot_of_packed[:, None])
    back = jax.lax.all_to_all(slots_out, axis_name, 0, 0, tiled=True)

    per_assignment = _gather_rows(back, slot.reshape(-1), assignment_of_slot[:, None])
    per_assignment = per_assignment.reshape(tokens, top_k, hidden).astype(jnp.float32)
    out = (per_assignment * weights[..., None]).sum(1)
    return out.astype(x.dtype).reshape(shape), counts - sent


class ExpertParallelMoE(nn.Module):
    """expert_parallel_moe as a linen module, applied inside shard_map over
    `axis_name`: __call__(x [..., hidden]) returns x's shape and dtype, and
    sows this shard's dropped counts [num_experts] into "intermediates"
    (apply(..., mutable="intermediates") to read them).

    Parameters, as seen by one shard: router [hidden, num_experts] (fp32,
    replicated: P() in the shard_map specs), fc1/fc2 kernels [L, hidden,
    ffn] / [L, ffn, hidden] and biases [L, ffn] / [L, hidden] for its L
    experts (P(axis_name)). Initialized inside shard_map, each shard's
    experts take the key folded with its axis index, the router the key
    itself.
    """

    num_experts: int
    ffn: int
    top_k: int
    axis_name: Any
    capacity: Optional[int] = None
    activation: Callable = gelu
    use_bias: bool = True
    param_dtype: Any = jnp.bfloat16

    @nn.compact
    def __call__(self, x):
        hidden = x.shape[-1]
        world = jax.lax.axis_size(self.axis_name)
        if self.num_experts % world != 0:
            raise ValueError("num_experts: %d experts cannot be split evenly over the %d shards "
                             "of %r" % (self.num_experts, world, self.axis_name))
        local = self.num_experts // world
        router = self.param("router", nn.initializers.lecun_normal(),
                            (hidden, self.num_experts), jnp.float32)
        kernel_init = _per_shard(_per_expert(nn.initializers.lecun_normal()), self.axis_name)
        fc1 = self.param("fc1_kernel", kernel_init, (local, hidden, self.ffn), self.param_dtype)
        fc2 = self.param("fc2_kernel", kernel_init, (local, self.ffn, hidden), self.param_dtype)
        fc1_bias = fc2_bias = None
        if self.use_bias:
            fc1_bias = self.param("fc1_bias", nn.initializers.zeros_init(), (local, self.ffn),
                                  self.param_dtype)
            fc2_bias = self.param("fc2_bias", nn.initializers.zeros_init(), (local, hidden),
                                  self.param_dtype)
        out, dropped = expert_parallel_moe(
            x, router, fc1.astype(x.dtype), None if fc1_bias is None else fc1_bias.astype(x.dtype),
            fc2.astype(x.dtype), None if fc2_bias is None else fc2_bias.astype(x.dtype),
            axis_name=self.axis_name, top_k=self.top_k, capacity=self.capacity,
            activation=self.activation,
        )
        self.sow("intermediates", "dropped", dropped)
        return out


def _per_shard(init, axis_name):
    """init with the key folded with this shard's index: distinct experts per shard."""

    def initialize(key, shape, dtype=jnp.float32):
        return init(jax.random.fold_in(key, jax.lax.axis_index(axis_name)), shape, dtype)

    return initialize

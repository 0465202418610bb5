"""A Mixture-of-Experts layer on groupgemm.jax.GroupedDense (Flax linen), trained for a few steps.

  router (nn.Dense) -> top-k experts per token -> token copies sorted by expert
  -> fc1 (GroupedDense) -> SwiGLU -> fc2 (GroupedDense)
  -> back to token order, weighted by the router

Every expert's fc1 (and then fc2) runs in one grouped product over the sorted
copies, under jax.jit and jax.grad; the per-expert counts are computed in the
graph. Parameters are fp32, the grouped products run in bf16. The forward is
checked against a plain jnp loop over the experts. Runs on the CPU (the
library's CPU reference) or on a GPU where jax has one:

  GROUPGEMM_LIBRARY=build/release/src/libgroupgemm.so PYTHONPATH=python \\
    python3 examples/jax_moe.py
"""

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from groupgemm.jax import GroupedDense


class MoE(nn.Module):
    hidden: int
    ffn: int
    experts: int
    top_k: int

    def setup(self):
        self.router = nn.Dense(self.experts, use_bias=False)
        # fc1 makes the gate and the up projection of SwiGLU side by side.
        self.fc1 = GroupedDense(2 * self.ffn, self.experts, dtype=jnp.bfloat16,
                                param_dtype=jnp.float32)
        self.fc2 = GroupedDense(self.hidden, self.experts, dtype=jnp.bfloat16,
                                param_dtype=jnp.float32)

    def route(self, x):
        """Each token's top_k experts [T, k] and their weights [T, k], summing to 1."""
        weights, experts = jax.lax.top_k(jax.nn.softmax(self.router(x)), self.top_k)
        return weights / weights.sum(axis=-1, keepdims=True), experts

    def __call__(self, x):
        weights, experts = self.route(x)
        # Copy j of token t is entry t * k + j; sort the copies by expert
        # (stable: tokens stay in order within an expert).
        order = jnp.argsort(experts.ravel(), stable=True)
        token = order // self.top_k
        counts = jnp.bincount(experts.ravel(), length=self.experts).astype(jnp.int32)
        gate, up = jnp.split(self.fc1(x[token], counts), 2, axis=-1)
        y = self.fc2(nn.silu(gate) * up, counts).astype(x.dtype)
        y = y * weights.ravel()[order, None]
        return jnp.zeros_like(x).at[token].add(y)


def reference(moe, params, x):
    """The same layer as a plain loop over the experts, in fp32 from the same parameters."""
    weights, experts = moe.apply(params, x, method=MoE.route)
    fc1, fc2 = params["params"]["fc1"], params["params"]["fc2"]
    out = jnp.zeros_like(x)
    for e in range(moe.experts):
        weight = jnp.where(experts == e, weights, 0.0).sum(axis=-1)  # 0 where not routed
        gate, up = jnp.split(x @ fc1["kernel"][e] + fc1["bias"][e], 2, axis=-1)
        y = (nn.silu(gate) * up) @ fc2["kernel"][e] + fc2["bias"][e]
        out += y * weight[:, None]
    return out


def main():
    tokens, hidden, ffn, experts, top_k = 256, 64, 128, 8, 2
    moe = MoE(hidden, ffn, experts, top_k)
    x_key, target_key, init_key = jax.random.split(jax.random.key(0), 3)
    x = jax.random.normal(x_key, (tokens, hidden))
    target = jax.random.normal(target_key, (tokens, hidden))
    params = moe.init(init_key, x)

    got, want = jax.jit(moe.apply)(params, x), reference(moe, params, x)
    error = float(jnp.linalg.norm(got - want) / jnp.linalg.norm(want))
    print("jax_moe on %s: forward vs. the per-expert loop, relative error %.2e"
          % (jax.devices()[0].platform, error))
    if not error < 2e-2:  # bf16 operands of the grouped products
        raise SystemExit("jax_moe: the grouped forward differs from the per-expert loop")

    optimizer = optax.adam(1e-2)
    state = optimizer.init(params)

    @jax.jit
    def step(params, state):
        loss, grads = jax.value_and_grad(
            lambda p: jnp.mean((moe.apply(p, x) - target) ** 2))(params)
        updates, state = optimizer.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    for i in range(5):
        params, state, loss = step(params, state)
        print("step %d: loss %.4f" % (i, float(loss)))


if __name__ == "__main__":
    main()

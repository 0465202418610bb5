"""groupgemm.jax.moe on meshes of 2 and 4 CPU devices.

XLA_FLAGS (--xla_force_host_platform_device_count) is read once per process,
before jax starts, so the cases run in one child process (this file run as
a script) that prints a JSON record of "ok" or the traceback per (mesh
size, case); the tests read it. Expectations come from a single-device MoE
written here in float32 jnp (a loop over experts with masks: no slots, no
collectives, no groupgemm), with the same drop rule: an expert keeps the
first `capacity` tokens of each source shard, in token order; gradients of
both by jax.grad.
"""

import functools
import json
import os
import subprocess
import sys
import traceback

import pytest

DEVICES = 4
HIDDEN, FFN, TOP_K = 16, 24, 2


# ---- the child process --------------------------------------------------------------


def reference_moe(x, router, w1, b1, w2, b2, capacity):
    """float32 top-k MoE over one shard's tokens x [T, H]; w1 [E, H, F],
    w2 [E, F, H]. Returns (out, dropped per expert)."""
    import jax
    import jax.numpy as jnp

    probs = jax.nn.softmax(x @ router, axis=-1)
    weights, experts = jax.lax.top_k(probs, TOP_K)
    out = jnp.zeros_like(x)
    dropped = []
    for e in range(router.shape[1]):
        chosen = experts == e
        hit = chosen.any(1)
        kept = hit if capacity is None else hit & (jnp.cumsum(hit) <= capacity)
        dropped.append(hit.sum() - kept.sum())
        share = (weights * chosen).sum(1) * kept
        hidden = jax.nn.gelu(x @ w1[e] + b1[e], approximate=False)
        out = out + share[:, None] * (hidden @ w2[e] + b2[e])
    return out, jnp.stack(dropped)


class Problem:
    def __init__(self, world, tokens, num_experts, skew=False, seed=0):
        import jax
        import jax.numpy as jnp

        keys = jax.random.split(jax.random.key(seed), 8)
        bf16 = jnp.bfloat16
        self.world, self.tokens = world, tokens
        x = jax.random.normal(keys[0], (world * tokens, HIDDEN))
        router = jax.random.normal(keys[1], (HIDDEN, num_experts)) * 0.5
        if skew:  # feature 0 is 1: experts 0 and 1 win, the last two never
            x = x.at[:, 0].set(1)
            router = router.at[0, :2].add(8).at[0, -2:].add(-8)
        self.x, self.router = x.astype(bf16), router
        self.cotangent = jax.random.normal(keys[2], (world * tokens, HIDDEN)).astype(bf16)

        def uniform(key, shape, fan_in):
            return (jax.random.uniform(key, shape, minval=-1, maxval=1) / fan_in**0.5).astype(bf16)

        self.experts = (
            uniform(keys[3], (num_experts, HIDDEN, FFN), HIDDEN),
            uniform(keys[4], (num_experts, FFN), HIDDEN),
            uniform(keys[5], (num_experts, FFN, HIDDEN), FFN),
            uniform(keys[6], (num_experts, HIDDEN), FFN),
        )

    def reference(self, capacity):
        """(out, dropped [W, E], grads of x, router, w1, b1, w2, b2)."""
        import jax
        import jax.numpy as jnp

        def run(x, router, *experts):
            shards = [reference_moe(part, router, *experts, capacity)
                      for part in jnp.split(x, self.world)]
            out = jnp.concatenate([out for out, _ in shards])
            return (out * self.cotangent.astype(jnp.float32)).sum(), (out, [d for _, d in shards])

        leaves = [a.astype(jnp.float32) for a in (self.x, self.router) + self.experts]
        grads, (out, dropped) = jax.jit(jax.grad(run, argnums=tuple(range(6)), has_aux=True))(
            *leaves)
        return out, jnp.stack(dropped), grads


def close(actual, expected, what, tolerance=2e-2):
    import numpy as np

    actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    error = np.abs(actual - expected).max()
    scale = np.abs(expected).max()
    assert error <= tolerance * scale + 1e-3, "%s: max error %g, scale %g" % (what, error, scale)


def sharded_step(mesh, capacity, batch_shape=None):
    """jit(grad) of the layer over `mesh`: (x, router, *experts) ->
    ((out, dropped [W, E]), grads)."""
    import jax
    from jax.sharding import PartitionSpec as P

    from groupgemm.jax.moe import expert_parallel_moe

    def shard(x, cotangent, router, *experts):
        local = x if batch_shape is None else x.reshape(batch_shape)
        out, dropped = expert_parallel_moe(local, router, *experts, axis_name="ep",
                                           top_k=TOP_K, capacity=capacity)
        out = out.reshape(x.shape)
        return (out.astype("float32") * cotangent).sum()[None], (out, dropped)

    spec = (P("ep"), P("ep"), P()) + (P("ep"),) * 4
    mapped = jax.shard_map(shard, mesh=mesh, in_specs=spec,
                           out_specs=(P("ep"), (P("ep"), P("ep"))))

    def loss(x, router, *experts, cotangent):
        partial, aux = mapped(x, cotangent, router, *experts)
        return partial.sum(), aux

    return jax.jit(jax.grad(loss, argnums=tuple(range(6)), has_aux=True))


def put(mesh, array, sharded):
    import jax
    from jax.sharding import PartitionSpec as P

    return jax.device_put(array, jax.NamedSharding(mesh, P("ep") if sharded else P()))


def check_against_reference(mesh, tokens, capacity, skew=False, batch_shape=None):
    import jax.numpy as jnp

    world = mesh.shape["ep"]
    problem = Problem(world, tokens, 2 * world, skew=skew)
    step = sharded_step(mesh, capacity, batch_shape)
    args = [put(mesh, problem.x, True), put(mesh, problem.router, False)]
    args += [put(mesh, a, True) for a in problem.experts]
    grads, (out, dropped) = step(*args, cotangent=put(mesh, problem.cotangent, True))
    expected, expected_dropped, expected_grads = problem.reference(capacity)
    close(out, expected, "out")
    assert (dropped.reshape(world, -1) == expected_dropped).all(), (dropped, expected_dropped)
    for name, grad, want in zip(("x", "router", "w1", "b1", "w2", "b2"), grads, expected_grads):
        close(grad, want, name + ".grad")
    return jnp.asarray(dropped).sum()


def case_uniform_no_drop(mesh):
    assert check_against_reference(mesh, 12, None, batch_shape=(3, 4, HIDDEN)) == 0


def case_skewed_with_drops(mesh):
    # Experts 0 and 1 get every token and keep 3 of each shard's; the last
    # shard's experts get none, so that shard receives no rows at all.
    assert check_against_reference(mesh, 10, 3, skew=True) > 0


def case_skewed_no_drop(mesh):
    check_against_reference(mesh, 9, None, skew=True)


def case_module(mesh):
    """The linen module: distinct experts per shard, its output that of the
    function on its parameters, dropped counts sown."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    from groupgemm.jax.moe import ExpertParallelMoE, expert_parallel_moe

    world = mesh.shape["ep"]
    layer = ExpertParallelMoE(num_experts=2 * world, ffn=FFN, top_k=TOP_K, axis_name="ep",
                              capacity=2)
    x = put(mesh, Problem(world, 8, 2 * world).x, True)
    specs = {"params": {"router": P(), "fc1_kernel": P("ep"), "fc1_bias": P("ep"),
                        "fc2_kernel": P("ep"), "fc2_bias": P("ep")}}
    init = jax.shard_map(lambda x: layer.init(jax.random.key(1), x), mesh=mesh,
                         in_specs=P("ep"), out_specs=specs)
    variables = jax.jit(init)(x)
    kernel = variables["params"]["fc1_kernel"]
    assert kernel.shape == (2 * world, HIDDEN, FFN)
    assert not jnp.allclose(kernel[0], kernel[2]), "shards initialized the same experts"

    def apply(variables, x):
        out, state = layer.apply(variables, x, mutable="intermediates")
        p = variables["params"]
        want, dropped = expert_parallel_moe(
            x, p["router"], p["fc1_kernel"], p["fc1_bias"], p["fc2_kernel"], p["fc2_bias"],
            axis_name="ep", top_k=TOP_K, capacity=2)
        return out, want, state["intermediates"]["dropped"][0], dropped

    out, want, sown, dropped = jax.jit(jax.shard_map(
        apply, mesh=mesh, in_specs=(specs, P("ep")), out_specs=P("ep")))(variables, x)
    assert (out == want).all() and (sown == dropped).all()


def expect_error(message, make):
    try:
        make()
    except ValueError as e:
        assert message in str(e), str(e)
    else:
        raise AssertionError("no ValueError: " + message)


def trace_with(mesh, num_experts=None, capacity=None, hidden=HIDDEN, top_k=TOP_K):
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    from groupgemm.jax.moe import expert_parallel_moe

    world = mesh.shape["ep"]
    experts = 2 * world if num_experts is None else num_experts
    local = max(experts // world, 1)
    args = (jnp.zeros((world * 4, hidden), jnp.bfloat16), jnp.zeros((HIDDEN, experts)),
            jnp.zeros((world * local, HIDDEN, FFN), jnp.bfloat16), None,
            jnp.zeros((world * local, FFN, HIDDEN), jnp.bfloat16), None)
    step = functools.partial(expert_parallel_moe, axis_name="ep", top_k=top_k, capacity=capacity)
    spec = (P("ep"), P(), P("ep"), None, P("ep"), None)
    jax.jit(jax.shard_map(step, mesh=mesh, in_specs=spec, out_specs=P("ep"))).trace(*args)


def case_experts_not_divisible(mesh):
    world = mesh.shape["ep"]
    expect_error("router: %d experts cannot be split evenly over the %d shards"
                 % (2 * world + 1, world), lambda: trace_with(mesh, num_experts=2 * world + 1))


def case_capacity_zero(mesh):
    expect_error("capacity: expected a positive int, got 0", lambda: trace_with(mesh, capacity=0))


def case_hidden_mismatch(mesh):
    expect_error("x: expected [..., 16], got shape [4, 17]", lambda: trace_with(mesh, hidden=17))


def case_top_k_too_large(mesh):
    world = mesh.shape["ep"]
    expect_error("top_k: %d is more than the router's %d experts" % (2 * world + 1, 2 * world),
                 lambda: trace_with(mesh, top_k=2 * world + 1))


CASES = {name[len("case_"):]: case for name, case in sorted(globals().items())
         if name.startswith("case_")}


def main():
    import jax

    results = {}
    for world in (2, 4):
        mesh = jax.make_mesh((world,), ("ep",), devices=jax.devices()[:world],
                             axis_types=(jax.sharding.AxisType.Auto,))
        for name, case in CASES.items():
            try:
                case(mesh)
                results["%d-%s" % (world, name)] = "ok"
            except Exception:
                results["%d-%s" % (world, name)] = traceback.format_exc()
    print("RESULTS " + json.dumps(results))


# ---- the tests ----------------------------------------------------------------------

_RESULTS = {}


def results():
    if not _RESULTS:
        env = dict(os.environ)
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=%d"
                            % DEVICES).strip()
        env["JAX_PLATFORMS"] = "cpu"
        env["PYTHONPATH"] = os.pathsep.join(sys.path)
        child = subprocess.run([sys.executable, os.path.abspath(__file__)], env=env,
                               capture_output=True, text=True, timeout=300)
        lines = [line for line in child.stdout.splitlines() if line.startswith("RESULTS ")]
        assert child.returncode == 0 and lines, child.stdout[-4000:] + child.stderr[-4000:]
        _RESULTS.update(json.loads(lines[-1][len("RESULTS "):]))
    return _RESULTS


@pytest.fixture(scope="module")
def handlers(lib):
    pytest.importorskip("jax", reason="jax is not installed")
    pytest.importorskip("flax", reason="flax is not installed")
    from groupgemm.jax import _ffi

    return _ffi.library()


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("world", [2, 4])
def test_expert_parallel_moe(world, case, handlers):
    record = results()["%d-%s" % (world, case)]
    assert record == "ok", record


if __name__ == "__main__":
    sys.exit(main())

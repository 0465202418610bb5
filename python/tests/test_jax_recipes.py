"""Training in a quantization recipe (groupgemm.recipes) from JAX:
GroupedDense(recipe=...) and make_ragged_dot_cls(recipe), on the CPU (the
library's reference, through the CPU FFI handlers).

Each recipe's forward pass and gradients are compared with a fake-quant
model of the whole recipe: every operand quantized in the recipe's format
by grouped_quantize (tested bit for bit against the reference in
test_jax.py), dequantized and multiplied in float64 by fake_quant.py, so
the layer must quantize what the recipe says, in the copy it says, and
feed each product the right one. A tiny mixture of experts (router, top-2,
GroupedDense -> gelu -> GroupedDense) then trains under jit and grad in
every recipe beside the bfloat16 run.
"""

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="jax is not installed")
nn = pytest.importorskip("flax.linen", reason="flax is not installed")
import jax.numpy as jnp  # noqa: E402

import fake_quant  # noqa: E402
from groupgemm import NotSupported, recipes  # noqa: E402

ggj = pytest.importorskip("groupgemm.jax", reason="groupgemm.jax needs jax")
# The fixtures: the handler library; each test on the CPU unless it places
# its inputs (the GPU test does).
from test_jax import GPU, default_device_of_the_test, handlers, needs_gpu  # noqa: E402,F401
from test_jax_quantized import SIZE_SETS, assert_product, dequantized, values  # noqa: E402

# Entries past the last group are undefined (XLA leaves those bytes as they
# were): fake_quant reads them, and makes them NaN.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")

M, K, N, G = 72, 64, 48, 4
RECIPES = list(recipes.RECIPES)


def test_no_x64():
    assert not jax.config.jax_enable_x64


def model(q, sizes=None):
    return dequantized(q, sizes)[0]


def f64(a):
    return np.asarray(jnp.asarray(a, jnp.float32), np.float64)


def _rows_of(per_group, sizes, rows):
    """per_group[g] on the rows of group g, zeros past the groups."""
    out = np.zeros((rows,) + per_group.shape[1:])
    out[: sum(sizes)] = np.repeat(per_group, sizes, axis=0)
    return out


def recipe_model(recipe, x, kernel, bias, dy, sizes):
    """(y, dx, dkernel, dbias) of the recipe in float64: the operands of
    each product quantized as the recipe says, by grouped_quantize."""
    s = jnp.asarray(sizes, jnp.int32)
    qx = ggj.grouped_quantize(x, s, rowwise=recipe.fprop_x, columnwise=recipe.wgrad_x)
    qw = ggj.grouped_quantize(kernel, rowwise=recipe.dgrad_w, columnwise=recipe.fprop_w)
    qdy = ggj.grouped_quantize(dy, s, rowwise=recipe.dgrad_dy, columnwise=recipe.wgrad_dy)
    x_rows, x_tokens = model(qx.rowwise, sizes), model(qx.columnwise, sizes)
    w_forward, w_backward = model(qw.columnwise), model(qw.rowwise)
    dy_rows, dy_tokens = model(qdy.rowwise, sizes), model(qdy.columnwise, sizes)
    products = {
        "y": (x_rows, w_forward, "kn", K),
        "dx": (dy_rows, w_backward, "nk", N),
    }
    out = {}
    for name, (a, b, layout, depth) in products.items():
        out[name] = (fake_quant.ragged_m(a, b, sizes, layout),
                     fake_quant.ragged_m(np.abs(a), np.abs(b), sizes, layout), depth)
    out["dkernel"] = (fake_quant.ragged_k(x_tokens, dy_tokens, sizes),
                      fake_quant.ragged_k(np.abs(x_tokens), np.abs(dy_tokens), sizes), M)
    if bias is not None:
        want, magnitude, depth = out["y"]
        bias_rows = _rows_of(f64(bias), sizes, M)
        out["y"] = (want + bias_rows, magnitude + np.abs(bias_rows), depth + 1)
    # dbias: the per-group sums of dy, read as bfloat16 (dy here is fp32).
    dy16 = f64(jnp.asarray(dy, jnp.bfloat16))
    starts = np.concatenate([[0], np.cumsum(sizes)])
    sums = [dy16[starts[g]:starts[g + 1]] for g in range(G)]
    out["dbias"] = (np.stack([s.sum(0) for s in sums]), np.stack([np.abs(s).sum(0) for s in sums]),
                    M)
    return out


# ---- each recipe against its fake-quant model ------------------------------------------


def check_grouped_dense_step(recipe, device=None):
    """Forward and gradients of GroupedDense(recipe=) under jit, on `device`
    (default: jax's), for every size set, against the recipe's model."""
    layer = ggj.GroupedDense(features=N, num_groups=G, recipe=recipe, param_dtype=jnp.float32)
    x = values((M, K), seed=1, dtype=jnp.float32)
    initial = layer.init(jax.random.PRNGKey(0), x, jnp.asarray(SIZE_SETS["full"], jnp.int32))
    params = {"params": {"kernel": values((G, K, N), seed=2, dtype=jnp.float32),
                         "bias": values((G, N), seed=3, dtype=jnp.float32)}}  # a bias not 0
    assert jax.tree_util.tree_map(jnp.shape, initial) == jax.tree_util.tree_map(jnp.shape, params)
    dy = values((M, N), seed=4, dtype=jnp.float32)
    r = recipes.get(recipe)
    platform = "cuda" if (device.platform if device else jax.default_backend()) == "gpu" else "cpu"
    fp8_cores = {"y": (r.fprop_x, r.fprop_w), "dx": (r.dgrad_dy, r.dgrad_w),
                 "dkernel": (r.wgrad_x, r.wgrad_dy), "dbias": (None, None)}

    @jax.jit
    def forward_backward(params, x, s, dy):
        y, vjp = jax.vjp(lambda p, a: layer.apply(p, a, s), params, x)
        return y, vjp(dy)

    for sizes in SIZE_SETS.values():
        inputs = (params, x, jnp.asarray(sizes, jnp.int32), dy)
        if device is not None:
            inputs = jax.device_put(inputs, device)
        y, (grads, dx) = forward_backward(*inputs)
        assert y.dtype == dx.dtype == jnp.float32
        p = params["params"]
        want = recipe_model(r, x, p["kernel"], p["bias"], dy, sizes)
        got = {"y": y, "dx": dx, "dkernel": grads["params"]["kernel"],
               "dbias": grads["params"]["bias"]}
        for name, (expected, magnitude, depth) in want.items():
            assert got[name].shape == expected.shape, name
            cores = fake_quant.on_fp8_cores(*fp8_cores[name], platform)
            assert_product(got[name], expected, magnitude, depth, cores)


@pytest.mark.parametrize("recipe", RECIPES)
def test_grouped_dense_forward_and_gradients_follow_the_recipe(recipe):
    check_grouped_dense_step(recipe)


@needs_gpu
@pytest.mark.parametrize("recipe", ["fp8_tensor", "fp8_group", "mxfp8", "nvfp4"])
def test_grouped_dense_on_the_gpu_follows_the_recipe(recipe):
    """The same under jit on a CUDA device: the GPU quantizer and the GPU
    paths (the sm90 fp8 kernels on Hopper) through XLA FFI."""
    check_grouped_dense_step(recipe, GPU)


# ---- make_ragged_dot_cls ------------------------------------------------------------------


class Experts(nn.Module):
    """A model that takes its ragged dot as a class, as jax.lax.ragged_dot's users do."""

    ragged_dot_cls: type
    features: int = N

    @nn.compact
    def __call__(self, x, group_sizes):
        w = self.param("w", nn.initializers.normal(), (G, x.shape[1], self.features),
                       jnp.float32)
        return self.ragged_dot_cls()(x, w.astype(x.dtype), group_sizes, None, jnp.float32)


def test_make_ragged_dot_cls_without_a_recipe_is_jax_lax_ragged_dot():
    assert issubclass(ggj.make_ragged_dot_cls(), nn.Module)
    assert ggj.make_ragged_dot_cls("mxfp8") is ggj.make_ragged_dot_cls(recipes.get("mxfp8"))
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.integers(-2, 3, (M, K)), jnp.bfloat16)
    w = jnp.asarray(rng.integers(-2, 3, (G, K, N)), jnp.float32)
    s = jnp.asarray(SIZE_SETS["0-1-31-33"], jnp.int32)
    cot = jnp.asarray(rng.integers(-1, 2, (M, N)), jnp.float32)

    def loss(ragged_dot_cls, w, x):
        out = Experts(ragged_dot_cls).apply({"params": {"w": w}}, x, s)
        return (out * cot).sum(), out

    class LaxRaggedDot(nn.Module):
        def __call__(self, *args):
            return jax.lax.ragged_dot(*args)

    ours = jax.jit(jax.value_and_grad(
        lambda w, x: loss(ggj.make_ragged_dot_cls(), w, x), argnums=(0, 1), has_aux=True))(w, x)
    theirs = jax.value_and_grad(lambda w, x: loss(LaxRaggedDot, w, x), argnums=(0, 1),
                                has_aux=True)(w, x)
    for a, b in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        np.testing.assert_array_equal(f64(a), f64(b))


@pytest.mark.parametrize("recipe", ["fp8_blockwise", "nvfp4"])
def test_make_ragged_dot_cls_trains_in_the_recipe(recipe):
    x = values((M, K), seed=6, dtype=jnp.float32)
    w = values((G, K, N), seed=7, dtype=jnp.float32)
    dy = values((M, N), seed=8, dtype=jnp.float32)
    experts = Experts(ggj.make_ragged_dot_cls(recipe))
    run = jax.jit(lambda w, x, s: jax.vjp(
        lambda w, x: experts.apply({"params": {"w": w}}, x, s), w, x))
    for sizes in SIZE_SETS.values():
        y, vjp = run(w, x, jnp.asarray(sizes, jnp.int32))
        dw, dx = vjp(dy)
        want = recipe_model(recipes.get(recipe), x, w, None, dy, sizes)
        for got, name in ((y, "y"), (dx, "dx"), (dw, "dkernel")):
            assert_product(got, *want[name])


# ---- remat ------------------------------------------------------------------------------


def test_quantized_tensors_carry_checkpoint_names_a_remat_policy_saves():
    layer = ggj.GroupedDense(features=N, num_groups=G, recipe="mxfp8", param_dtype=jnp.float32)
    x, s = values((M, K), seed=9, dtype=jnp.float32), jnp.asarray(SIZE_SETS["full"], jnp.int32)
    params = layer.init(jax.random.PRNGKey(1), x, s)

    def quantizes(policy):
        """The grouped_quantize calls of a training step, and the jaxpr."""
        loss = jax.checkpoint(lambda p, a: layer.apply(p, a, s).sum(), policy=policy)
        text = str(jax.make_jaxpr(jax.grad(loss, argnums=(0, 1)))(params, x))
        return text.count("groupgemm_quantize"), text

    names = (ggj.X_Q, ggj.W_Q)
    assert names == ("groupgemm_x_q", "groupgemm_w_q")
    saved, text = quantizes(jax.checkpoint_policies.save_only_these_names(*names))
    for name in names + (ggj.DY_Q,):
        assert "name=%s" % name in text
    # x and w are quantized once each, dy once: the policy keeps the
    # quantized copies; without it the backward pass quantizes x and w again.
    assert saved == 3
    assert quantizes(jax.checkpoint_policies.nothing_saveable)[0] == 5


# ---- a tiny mixture of experts trains in every recipe -----------------------------------


class TinyMoE(nn.Module):
    """Router, top-2, and each expert's GroupedDense -> gelu -> GroupedDense."""

    recipe: object = None
    experts: int = 4
    hidden: int = 64
    top_k: int = 2

    @nn.compact
    def __call__(self, x):
        tokens, features = x.shape
        weights, chosen = jax.lax.top_k(jax.nn.softmax(nn.Dense(self.experts)(x)), self.top_k)
        order = jnp.argsort(chosen.reshape(-1), stable=True)
        rows = x[order // self.top_k]  # each (token, choice), grouped by expert
        sizes = jnp.bincount(chosen.reshape(-1), length=self.experts).astype(jnp.int32)
        dense = lambda features: ggj.GroupedDense(  # noqa: E731
            features, self.experts, recipe=self.recipe, dtype=jnp.bfloat16,
            param_dtype=jnp.float32)
        h = nn.gelu(dense(self.hidden)(rows, sizes))
        out = dense(features)(h, sizes).astype(jnp.float32)
        out = jnp.zeros_like(out).at[order].set(out).reshape(tokens, self.top_k, features)
        return (out * weights[..., None]).sum(1)


STEPS = 30


def _adam(grads, state, step, rate=1e-2, b1=0.9, b2=0.999, eps=1e-8):
    """(updates, state) of Adam (Kingma and Ba), without a dependency for it."""
    m, v = state
    m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, grads)
    v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, grads)
    correction = jnp.sqrt(1 - b2**step) / (1 - b1**step)
    updates = jax.tree_util.tree_map(lambda m, v: -rate * correction * m / (jnp.sqrt(v) + eps),
                                     m, v)
    return updates, (m, v)


def _train(recipe):
    """The losses of STEPS Adam steps, fitting a fixed teacher."""
    rng = np.random.default_rng(10)
    x = jnp.asarray(rng.standard_normal((64, 32)), jnp.float32)
    target = jnp.tanh(x @ jnp.asarray(rng.standard_normal((32, 32)) / 4, jnp.float32))
    model = TinyMoE(recipe)
    params = model.init(jax.random.PRNGKey(0), x)

    @jax.jit
    def step(params, state, count):
        loss, grads = jax.value_and_grad(
            lambda p: jnp.mean((model.apply(p, x) - target) ** 2))(params)
        updates, state = _adam(grads, state, count)
        return jax.tree_util.tree_map(jnp.add, params, updates), state, loss

    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state, losses = (zeros, zeros), []
    for count in range(1, STEPS + 1):
        params, state, loss = step(params, state, jnp.float32(count))
        losses.append(float(loss))
    return np.array(losses)


@pytest.fixture(scope="module")
def bf16_losses():
    return _train(None)


# How far a recipe's loss curve may stray from the bfloat16 one, relative to
# the first loss: measured 0.004 to 0.008 for the fp8 and MX recipes, 0.023
# for nvfp4, while the loss falls to 1/50 of the first (bfloat16; 1/35 for
# nvfp4).
DISTANCE = {"nvfp4": 0.06}
DEFAULT_DISTANCE = 0.02


@pytest.mark.parametrize("recipe", RECIPES)
def test_tiny_moe_trains_in_every_recipe(recipe, bf16_losses):
    losses = _train(recipe)
    assert np.isfinite(losses).all()
    assert losses[-1] < 0.1 * losses[0], losses  # it learns
    distance = np.abs(losses - bf16_losses).max() / bf16_losses[0]
    assert distance < DISTANCE.get(recipe, DEFAULT_DISTANCE), (distance, losses, bf16_losses)
    assert bf16_losses[-1] < 0.05 * bf16_losses[0]


# ---- bad input ------------------------------------------------------------------------------


def test_errors():
    x, s = jnp.ones((M, K), jnp.float32), jnp.asarray(SIZE_SETS["full"], jnp.int32)
    with pytest.raises(ValueError, match=r"recipe: unknown recipe 'fp9'"):
        ggj.GroupedDense(features=N, num_groups=G, recipe="fp9").init(jax.random.PRNGKey(0), x, s)
    with pytest.raises(ValueError, match=r"recipe: unknown recipe 'fp9'"):
        ggj.make_ragged_dot_cls("fp9")
    ragged_dot = ggj.make_ragged_dot_cls("mxfp8")()
    w = jnp.ones((G, K, N), jnp.float32)
    with pytest.raises(TypeError, match=r"lhs: dtype int32 is not supported"):
        jax.eval_shape(lambda a: ragged_dot.apply({}, a, w, s), x.astype(jnp.int32))
    with pytest.raises(ValueError, match=r"rhs: expected \[G, K, N\] with G = 4, K = 64, got "
                                         r"shape \[4, 48, 64\]"):
        jax.eval_shape(lambda b: ragged_dot.apply({}, x, b, s), jnp.swapaxes(w, 1, 2))
    with pytest.raises(NotImplementedError, match=r"group_offset"):
        ragged_dot.apply({}, x, w, s, group_offset=jnp.zeros((1,), jnp.int32))


def test_a_gpu_refuses_recipes_when_lowered_for_it():
    """Where a step runs is decided when it is lowered, from where its
    inputs are placed: the CPU's reference runs it; lowered for a GPU, the
    step is refused by name. No GPU is needed to lower for one."""
    layer = ggj.GroupedDense(features=N, num_groups=G, recipe="fp8_blockwise",
                             param_dtype=jnp.float32)
    x, s = jnp.ones((M, K), jnp.float32), jnp.asarray(SIZE_SETS["full"], jnp.int32)

    # The forward runs on the sm90 path; the weight gradient nowhere: its
    # columnwise copies [K, M] and [N, M] have rows of M = 72 fp8 bytes,
    # which TMA cannot address, and the portable path has no promotion of
    # 1x128 blocks.
    def gradients(a):
        params = layer.init(jax.random.PRNGKey(0), a, s)
        return jax.grad(lambda p: layer.apply(p, a, s).sum())(params)

    traced = jax.jit(gradients).trace(x)
    traced.lower(lowering_platforms=("cpu",))
    with pytest.raises(NotSupported, match=r"no GPU path runs this"):
        traced.lower(lowering_platforms=("cuda",))

"""Run by test_jax.py in its own process, with XLA_FLAGS asking for command
buffers (CUDA graphs) around fusions and custom calls: compiles one jitted
forward + backward step, checks that the compiled module holds a command
buffer, then runs it with different group sizes and checks every result
against jax.lax.ragged_dot on the CPU; then likewise one jitted grouped
quantize against the same call on the CPU (the library's reference), bit
for bit. Prints "command buffer replays: ok"."""

import sys

import jax
import jax.numpy as jnp
import numpy as np

import groupgemm.jax as ggj

GPU, CPU = jax.devices("gpu")[0], jax.devices("cpu")[0]
ROWS, K, N, G = 512, 128, 256, 8


def step(lhs, rhs, sizes, cot):
    def loss(a, b):
        return (ggj.ragged_dot(a, b, sizes, preferred_element_type=jnp.float32) * cot).sum()

    out = ggj.ragged_dot(lhs, rhs, sizes, preferred_element_type=jnp.float32)
    return out, jax.grad(loss, argnums=(0, 1))(lhs, rhs)


def expected(lhs, rhs, sizes, cot):
    put = lambda a: jax.device_put(a, CPU)  # noqa: E731
    lhs, rhs, cot = put(lhs.astype(jnp.float32)), put(rhs.astype(jnp.float32)), put(cot)
    sizes = put(sizes)
    out = jax.lax.ragged_dot(lhs, rhs, sizes)
    grads = jax.grad(lambda a, b: (jax.lax.ragged_dot(a, b, sizes) * cot).sum(),
                     argnums=(0, 1))(lhs, rhs)
    return out, grads


# Every entry of these outputs is defined when the sizes sum to ROWS; group
# scales and the tensor scale take the amax launch.
QUANTIZE = dict(rowwise="nvfp4_group", columnwise="fp8_e5m2_tensor", amax=True)


def quantize(x, sizes):
    return ggj.grouped_quantize(x, sizes, **QUANTIZE)


def bits(a):
    a = np.asarray(a)
    return a.view(np.uint8) if a.dtype.itemsize == 1 else a.view(np.int32)


def quantize_replays(routings):
    x = jax.device_put(jnp.asarray(np.random.default_rng(1).standard_normal((ROWS, K)),
                                   jnp.bfloat16), GPU)
    sizes0 = jax.device_put(jnp.full((G,), ROWS // G, jnp.int32), GPU)
    compiled = jax.jit(quantize).lower(x, sizes0).compile()
    if "command_buffer" not in compiled.as_text():
        print("the compiled quantize holds no command buffer")
        return False
    for sizes in routings:
        s = jax.device_put(jnp.asarray(sizes, jnp.int32), GPU)
        for _ in range(3):  # later runs replay the captured graph
            got = compiled(x, s)
        want = quantize(jax.device_put(x, CPU), jax.device_put(s, CPU))
        for (path, ours), theirs in zip(jax.tree_util.tree_leaves_with_path(got),
                                        jax.tree.leaves(want)):
            if not np.array_equal(bits(ours), bits(theirs)):
                print("quantize, sizes %s: %s differs" % (sizes, jax.tree_util.keystr(path)))
                return False
        print("quantize, sizes %s: ok" % sizes)
    return True


def main():
    rng = np.random.default_rng(0)
    ints = lambda shape: jnp.asarray(rng.integers(-2, 3, shape), jnp.bfloat16)  # noqa: E731
    lhs = jax.device_put(ints((ROWS, K)), GPU)
    rhs = jax.device_put(ints((G, K, N)), GPU)
    cot = jax.device_put(jnp.asarray(rng.integers(-1, 2, (ROWS, N)), jnp.float32), GPU)
    sizes0 = jax.device_put(jnp.full((G,), ROWS // G, jnp.int32), GPU)
    compiled = jax.jit(step).lower(lhs, rhs, sizes0, cot).compile()
    text = compiled.as_text()
    if "command_buffer" not in text:
        print("the compiled step holds no command buffer:\n" + text[-3000:])
        return 1
    routings = [
        [ROWS // G] * G,
        [0, 0, ROWS, 0, 0, 0, 0, 0],
        [100, 0, 37, 1, 0, 200, 0, 3],  # sum < ROWS: a tail of rows
        [64, 64, 0, 128, 1, 0, 255, 0],
        [ROWS // G] * G,
    ]
    for sizes in routings:
        s = jax.device_put(jnp.asarray(sizes, jnp.int32), GPU)
        for _ in range(3):  # later runs replay the captured graph
            out, (dlhs, drhs) = compiled(lhs, rhs, s, cot)
        ref_out, (ref_dlhs, ref_drhs) = expected(lhs, rhs, s, cot)
        for name, ours, theirs in (("out", out, ref_out), ("dlhs", dlhs, ref_dlhs),
                                   ("drhs", drhs, ref_drhs)):
            ours = np.asarray(ours.astype(jnp.float32))
            if not np.array_equal(ours, np.asarray(theirs)):
                print("sizes %s: %s differs (max |diff| %g)" % (
                    sizes, name, np.abs(ours - np.asarray(theirs)).max()))
                return 1
        print("sizes %s: ok" % sizes)
    if not quantize_replays([r for r in routings if sum(r) == ROWS]):
        return 1
    print("command buffer replays: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""GroupedLinear(recipe=...) on CUDA tensors: the GPU quantizer, the sm90
fp8 kernels and the portable path's decode kernels in each recipe, every result against the
float64 model of test_torch_recipes (built from the very copies the layer
quantized); one training step captured in a CUDA graph and replayed after
the group sizes changed on the device; torch.compile(fullgraph=True) equal
to eager. These tests verify the kernels before they answer users, so they
run them with GROUPGEMM_UNVERIFIED_KERNELS=1 (src/kernels/verified_kernels.h).
"""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import groupgemm.torch as ggt  # noqa: E402
import test_torch_recipes as cpu  # noqa: E402

pytestmark = [
    pytest.mark.usefixtures("lib"),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]

ON_GPU = ["fp8_tensor", "fp8_group", "fp8_rowwise", "fp8_blockwise", "mxfp8", "nvfp4"]
# Token rows: a multiple of 16, so that the columnwise fp8 copies' rows are
# 16-byte aligned, as the sm90 weight gradients read them.
TOKENS = 80


@pytest.fixture(autouse=True)
def _unverified_kernels_run(monkeypatch):
    monkeypatch.setenv("GROUPGEMM_UNVERIFIED_KERNELS", "1")


@pytest.mark.parametrize(
    "sizes, main_grad",
    [("edges", False), ("edges", True), ("one_group", False), ("all_empty", True)],
)
@pytest.mark.parametrize("recipe", ON_GPU)
def test_forward_and_gradients_follow_the_recipe(recipe, sizes, main_grad):
    cpu.check_recipe_step(recipe, cpu.SIZES[sizes], main_grad, "cuda", TOKENS)


def _step(layer, x, sizes):
    """Forward + backward; returns (y, dx, dw) without a host read."""
    y = layer(x, sizes)
    dx, dw = torch.autograd.grad(y.float().square().sum(), (x, layer.weight))
    return y, dx, dw


@pytest.mark.parametrize("recipe", ON_GPU)
def test_graph_replays_a_step_after_the_sizes_change(recipe):
    layer = ggt.GroupedLinear(cpu.G, cpu.IN, cpu.OUT, dtype=torch.bfloat16, recipe=recipe,
                              device="cuda")
    x = cpu._input((TOKENS, cpu.IN), 6).cuda().requires_grad_()
    sizes = torch.tensor(cpu.SIZES["edges"], dtype=torch.int32, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        _step(layer, x, sizes)  # warm-up: the weight copies, torch's own caches
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = _step(layer, x, sizes)
    for new_sizes in ([0, 0, TOKENS, 0], [5, 40, 0, 27], [0, 0, 0, 0]):
        sizes.copy_(torch.tensor(new_sizes, dtype=torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        rows = sum(new_sizes)
        want = _step(layer, x, sizes)
        for name, got, expected in zip(("y", "dx", "dw"), captured, want):
            if name != "dw":
                got, expected = got[:rows], expected[:rows]
            torch.testing.assert_close(got, expected, rtol=0, atol=0, msg=f"{name} {new_sizes}")


@pytest.mark.parametrize("recipe", ["fp8_tensor", "nvfp4"])
def test_compiled_fullgraph_matches_eager(recipe):
    cpu.check_compiled_matches_eager(recipe, "cuda")

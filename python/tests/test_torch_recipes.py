"""GroupedLinear(recipe=...) on the CPU: each recipe's forward and gradients
against a fake-quant model of the whole recipe written here (every operand
quantized in the recipe's format for its product, dequantized by
fake_quant.py, multiplied in float64); the weights quantized once per
optimizer step; and a small MoE trained in each recipe, next to its bf16
run."""

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import fake_quant as fq  # noqa: E402
import groupgemm.torch as ggt  # noqa: E402
from groupgemm import recipes  # noqa: E402
from groupgemm.torch import _quantized_linear  # noqa: E402

pytestmark = pytest.mark.usefixtures("lib")

M, IN, OUT, G = 72, 160, 48, 4
SIZES = {"edges": [1, 0, 31, 33], "one_group": [0, 0, M, 0], "all_empty": [0, 0, 0, 0]}
BF16 = 2.0**-8  # bf16's unit roundoff


def _input(shape, seed):
    generator = torch.Generator().manual_seed(seed)
    rows = torch.exp2(torch.randint(-4, 5, shape[:-1] + (1,), generator=generator).float())
    return (torch.randn(shape, generator=generator) * rows).bfloat16()


def _values(q, sizes):
    """A copy's values in float64, as fake_quant reads its arrays."""
    values, _ = fq.dequantize(
        q.format,
        q.data.view(torch.uint8).cpu().numpy(),
        None if q.block_scales is None else q.block_scales.cpu().numpy(),
        None if q.scale is None else q.scale.cpu().numpy(),
        sizes,
        q.columnwise,
    )
    return values


def _copies(tensor, sizes, rowwise, columnwise):
    group_sizes = None if sizes is None else torch.tensor(sizes, device=tensor.device)
    q = ggt.grouped_quantize(tensor, group_sizes, rowwise=rowwise, columnwise=columnwise)
    return _values(q.rowwise, sizes), _values(q.columnwise, sizes)


def _numpy(tensor):
    return tensor.detach().double().cpu().numpy()


@pytest.mark.parametrize(
    "sizes, main_grad",
    [("edges", False), ("edges", True), ("one_group", False), ("all_empty", True)],
)
@pytest.mark.parametrize("recipe", list(recipes.RECIPES))
def test_forward_and_gradients_follow_the_recipe(recipe, sizes, main_grad):
    check_recipe_step(recipe, SIZES[sizes], main_grad, "cpu")


def check_recipe_step(recipe, sizes, main_grad, device, tokens=M):
    """One forward + backward of GroupedLinear(recipe=) on `device` over
    `tokens` rows, every result against the model of the recipe."""
    torch.manual_seed(0)
    layer = ggt.GroupedLinear(G, IN, OUT, dtype=torch.bfloat16, main_grad=main_grad,
                              recipe=recipe, device=device)
    start = _input((G, OUT, IN), 1).float().to(device)
    if main_grad:
        layer.weight.main_grad.copy_(start)
    x = _input((tokens, IN), 2).to(device).requires_grad_()
    group_sizes = torch.tensor(sizes, dtype=torch.int32, device=device)
    y = layer(x, group_sizes)
    dy = _input((tokens, OUT), 3).to(device)
    y.backward(dy)

    # The model: each operand in its product's format, in float64.
    r = recipes.get(recipe)
    x_row, x_col = _copies(x.detach(), sizes, r.fprop_x, r.wgrad_x)
    w_row, w_col = _copies(layer.weight.detach(), None, r.fprop_w, r.dgrad_w)
    dy_row, dy_col = _copies(dy, sizes, r.dgrad_dy, r.wgrad_dy)
    bias = _numpy(layer.bias)
    group = fq.group_of_tokens(tokens, sizes)
    bias_rows = np.where(group[:, None] >= 0, bias[group], np.nan)

    want = fq.ragged_m(x_row, w_row, sizes, "nk") + bias_rows
    magnitude = fq.ragged_m(np.abs(x_row), np.abs(w_row), sizes, "nk") + np.abs(bias_rows)
    fq.assert_fp32_accumulation(_numpy(y), want, magnitude, IN + 1, BF16,
                                fq.on_fp8_cores(r.fprop_x, r.fprop_w, device))

    want = fq.ragged_m(dy_row, w_col, sizes, "kn")
    magnitude = fq.ragged_m(np.abs(dy_row), np.abs(w_col), sizes, "kn")
    fq.assert_fp32_accumulation(_numpy(x.grad), want, magnitude, OUT, BF16,
                                fq.on_fp8_cores(r.dgrad_dy, r.dgrad_w, device))
    assert torch.all(x.grad[sum(sizes) :] == 0)

    want = fq.ragged_k(dy_col, x_col, sizes)
    magnitude = fq.ragged_k(np.abs(dy_col), np.abs(x_col), sizes)
    wgrad_fp8_cores = fq.on_fp8_cores(r.wgrad_dy, r.wgrad_x, device)
    if main_grad:
        assert layer.weight.grad is None
        fq.assert_fp32_accumulation(
            _numpy(layer.weight.main_grad), want + _numpy(start), magnitude + _numpy(start.abs()),
            tokens + 1, fp8_cores=wgrad_fp8_cores,
        )
    else:
        assert layer.weight.grad.dtype == torch.bfloat16
        fq.assert_fp32_accumulation(_numpy(layer.weight.grad), want, magnitude, tokens, BF16,
                                    wgrad_fp8_cores)

    dy64 = _numpy(dy)
    starts = fq.offsets(sizes)
    want = np.stack([dy64[starts[g] : starts[g] + s].sum(0) for g, s in enumerate(sizes)])
    magnitude = np.stack([np.abs(dy64[starts[g] : starts[g] + s]).sum(0)
                          for g, s in enumerate(sizes)])
    fq.assert_fp32_accumulation(_numpy(layer.bias.grad), want, magnitude, tokens, BF16)


def test_inference_quantizes_the_forward_operands_only():
    layer = ggt.GroupedLinear(G, IN, OUT, dtype=torch.bfloat16, recipe="mxfp8")
    x = _input((M, IN), 4)
    sizes = SIZES["edges"]
    with torch.no_grad():
        y = layer(x, torch.tensor(sizes))
    r = layer.recipe
    x_row, _ = _copies(x, sizes, r.fprop_x, r.wgrad_x)
    w_row, _ = _copies(layer.weight.detach(), None, r.fprop_w, r.dgrad_w)
    bias = _numpy(layer.bias)[fq.group_of_tokens(M, sizes).clip(0)]
    want = fq.ragged_m(x_row, w_row, sizes, "nk") + bias
    magnitude = fq.ragged_m(np.abs(x_row), np.abs(w_row), sizes, "nk") + np.abs(bias)
    fq.assert_fp32_accumulation(_numpy(y), want, magnitude, IN + 1, BF16)
    assert layer._weight_copies.get(layer.weight, r, False).columnwise is None


@pytest.mark.parametrize("recipe", ["fp8_tensor", "nvfp4"])
def test_compiled_fullgraph_matches_eager(recipe):
    check_compiled_matches_eager(recipe, "cpu")


def check_compiled_matches_eager(recipe, device):
    """The forward as one compiled graph (the weights are quantized inside
    it: the eager cache's key is host state), the backward through autograd,
    with the eager step's bits."""
    layer = ggt.GroupedLinear(G, IN, OUT, dtype=torch.bfloat16, recipe=recipe, device=device)
    sizes = torch.tensor(SIZES["edges"], dtype=torch.int32, device=device)
    x = _input((M, IN), 5).to(device).requires_grad_()

    def step(x):
        return layer(x, sizes)

    rows = sum(SIZES["edges"])  # the rows past the groups are not written
    results = []
    for run in (step, torch.compile(step, fullgraph=True)):
        y = run(x)[:rows]
        dx, dw = torch.autograd.grad(y.float().square().sum(), (x, layer.weight))
        results.append((y, dx[:rows], dw))
    for c, e in zip(*results):
        torch.testing.assert_close(c, e, rtol=0, atol=0)


def test_weights_are_quantized_once_per_optimizer_step(monkeypatch):
    calls = []
    quantize = _quantized_linear.grouped_quantize

    def counting(x, group_sizes=None, **formats):
        calls.append("weights" if group_sizes is None else "tokens")
        return quantize(x, group_sizes, **formats)

    monkeypatch.setattr(_quantized_linear, "grouped_quantize", counting)
    layer = ggt.GroupedLinear(G, IN, OUT, dtype=torch.bfloat16, recipe="fp8_blockwise")
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    sizes = torch.tensor(SIZES["edges"])
    for step in range(2):
        for micro_batch in range(3):
            x = _input((M, IN), 10 * step + micro_batch).requires_grad_()
            layer(x, sizes).float().sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    # Per step: the weights once; x once per forward, dy once per backward.
    assert calls == (["weights"] + ["tokens"] * 6) * 2


# ---- training a small MoE -----------------------------------------------------

D, HIDDEN, EXPERTS, TOP_K, TOKENS, STEPS = 32, 64, 4, 2, 64, 30


class MoE(torch.nn.Module):
    """Router, top-k dispatch, fc1 -> gelu -> fc2 per expert, weighted combine."""

    def __init__(self, recipe):
        super().__init__()
        self.router = torch.nn.Linear(D, EXPERTS, bias=False, dtype=torch.bfloat16)
        self.fc1 = ggt.GroupedLinear(EXPERTS, D, HIDDEN, dtype=torch.bfloat16, recipe=recipe)
        self.fc2 = ggt.GroupedLinear(EXPERTS, HIDDEN, D, dtype=torch.bfloat16, recipe=recipe)

    def forward(self, x):
        probs = torch.softmax(self.router(x).float(), dim=-1)
        weights, experts = probs.topk(TOP_K, dim=-1)
        order = torch.argsort(experts.reshape(-1), stable=True)
        token = order // TOP_K
        sizes = torch.bincount(experts.reshape(-1), minlength=EXPERTS)
        hidden = torch.nn.functional.gelu(self.fc1(x[token], sizes))
        out = self.fc2(hidden, sizes) * weights.reshape(-1)[order, None]
        return torch.zeros_like(x).index_add(0, token, out.to(x.dtype))


def _train(recipe):
    torch.manual_seed(0)
    model = MoE(recipe)
    teacher = torch.randn(D, D) / D**0.5
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(1)
    losses = []
    for _ in range(STEPS):
        x = torch.randn(TOKENS, D, generator=generator)
        target = torch.tanh(x @ teacher)
        loss = (model(x.bfloat16()).float() - target).square().mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return np.array(losses)


@pytest.fixture(scope="module")
def bf16_losses():
    return _train(None)


@pytest.mark.parametrize("recipe", list(recipes.RECIPES))
def test_moe_trains_close_to_bf16(recipe, bf16_losses):
    losses = _train(recipe)
    first, last = losses[:3].mean(), losses[-5:].mean()
    assert last < 0.5 * first, losses
    # Within 5% (fp8, mxfp8) or 15% (nvfp4) of the bf16 run's loss at the end.
    tolerance = 0.15 if recipe == "nvfp4" else 0.05
    assert abs(last - bf16_losses[-5:].mean()) <= tolerance * bf16_losses[-5:].mean(), (
        losses, bf16_losses)

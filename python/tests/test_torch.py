"""groupgemm.torch against torch references, on CPU (the library's reference
path) and, where there is one, on a CUDA GPU.

Expectations come from per-group float64 products computed here with torch
(never from the ops under test), from per-expert nn.Linear modules, or from
torch._grouped_mm. Small-integer inputs keep every sum exact in fp32 and in
bf16 outputs, so most comparisons are exact; random-valued cases compare
within a rounding bound. Rows past the last group are compared only where
the op defines them (input gradients: zero).
"""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import groupgemm.torch as ggt  # noqa: E402
from groupgemm import DeviceFlag, WorkspaceTooSmall  # noqa: E402
from groupgemm.torch import _workspace  # noqa: E402

pytestmark = pytest.mark.usefixtures("lib")

HAS_CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")
DEVICES = ["cpu", pytest.param("cuda", marks=needs_cuda)]

SIZES = [3, 0, 5, 1, 0, 7]  # empty groups, and sum 16 < M = 20 rows
M = 20


def offsets(sizes):
    starts = [0]
    for size in sizes:
        starts.append(starts[-1] + size)
    return starts


def small_integers(shape, dtype=torch.bfloat16, device="cpu", generator=None):
    values = torch.randint(-2, 3, shape, generator=generator)
    return values.to(dtype=dtype, device=device)


def make(device, w_layout="nk", k=32, n=48, index_dtype=torch.int32, seed=0):
    generator = torch.Generator().manual_seed(seed)
    groups = len(SIZES)
    x = small_integers((M, k), device=device, generator=generator)
    w_shape = (groups, n, k) if w_layout == "nk" else (groups, k, n)
    w = small_integers(w_shape, device=device, generator=generator)
    bias = small_integers((groups, n), device=device, generator=generator)
    sizes = torch.tensor(SIZES, dtype=index_dtype, device=device)
    return x, w, bias, sizes


def expected_grouped_mm(x, w, sizes, w_layout, bias=None, alpha=1.0):
    """float64 per-group products; rows past the last group are 0."""
    n = w.shape[1] if w_layout == "nk" else w.shape[2]
    out = torch.zeros(x.shape[0], n, dtype=torch.float64)
    starts = offsets(sizes)
    for g, size in enumerate(sizes):
        rows = slice(starts[g], starts[g] + size)
        wg = w[g].cpu().double()
        out[rows] = alpha * x[rows].cpu().double() @ (wg.T if w_layout == "nk" else wg)
        if bias is not None:
            out[rows] += bias[g].cpu().double()
    return out


def expected_ragged_k(a, b, sizes, alpha=1.0):
    out = torch.zeros(len(sizes), a.shape[1], b.shape[1], dtype=torch.float64)
    starts = offsets(sizes)
    for g, size in enumerate(sizes):
        rows = slice(starts[g], starts[g] + size)
        out[g] = alpha * a[rows].cpu().double().T @ b[rows].cpu().double()
    return out


def valid(tensor):
    return tensor[: sum(SIZES)].cpu().double()


# ---- forward ------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("w_layout", ["nk", "kn"])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("out_dtype", [None, torch.float32])
def test_grouped_mm_exact(device, w_layout, index_dtype, out_dtype):
    # |2 * x @ w + bias| <= 2 * 4 * 16 + 2: integers bf16 holds exactly.
    x, w, bias, sizes = make(device, w_layout, k=16, index_dtype=index_dtype)
    y = ggt.grouped_mm(x, w, sizes, w_layout=w_layout, out_dtype=out_dtype, bias=bias, alpha=2.0)
    assert y.dtype == (out_dtype or torch.bfloat16) and y.device == x.device
    expected = expected_grouped_mm(x, w, SIZES, w_layout, bias, alpha=2.0)
    torch.testing.assert_close(valid(y), valid(expected), rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_grouped_mm_reads_a_transposed_weight_view(device):
    x, w, _, sizes = make(device, "nk")
    view = w.transpose(1, 2).contiguous().transpose(1, 2)  # [G, N, K], stored as [G, K, N]
    assert view.stride(-1) != 1
    y = ggt.grouped_mm(x, view, sizes, w_layout="nk")
    torch.testing.assert_close(
        valid(y), valid(expected_grouped_mm(x, w, SIZES, "nk")), rtol=0, atol=0
    )


@pytest.mark.parametrize("device", DEVICES)
def test_grouped_mm_fp16_random_within_rounding(device):
    generator = torch.Generator().manual_seed(1)
    sizes = [40, 0, 77, 13]
    k, n = 256, 96
    x = torch.randn(130, k, generator=generator).half().to(device)
    w = torch.randn(len(sizes), n, k, generator=generator).half().to(device)
    y = ggt.grouped_mm(x, w, torch.tensor(sizes, device=device), out_dtype=torch.float32)
    expected = expected_grouped_mm(x, w, sizes, "nk")
    magnitude = expected_grouped_mm(x.abs(), w.abs(), sizes, "nk")
    rows = sum(sizes)
    bound = k * 2.0**-23 * magnitude[:rows] + 2.0**-24 * expected[:rows].abs()
    assert torch.all((y[:rows].cpu().double() - expected[:rows]).abs() <= bound)


@needs_cuda
def test_grouped_mm_matches_torch_grouped_mm():
    if not hasattr(torch, "_grouped_mm"):
        pytest.skip("torch._grouped_mm is not in this torch")
    generator = torch.Generator().manual_seed(2)
    sizes = [64, 0, 40, 24]  # torch._grouped_mm wants 16-byte aligned strides: K, N multiples of 8
    k, n = 128, 256
    x = torch.randn(sum(sizes), k, generator=generator).bfloat16().cuda()
    w = torch.randn(len(sizes), n, k, generator=generator).bfloat16().cuda()
    group_sizes = torch.tensor(sizes, dtype=torch.int32, device="cuda")
    try:
        theirs = torch._grouped_mm(
            x, w.transpose(-2, -1), offs=torch.cumsum(group_sizes, 0, dtype=torch.int32)
        )
    except RuntimeError as e:
        pytest.skip("torch._grouped_mm cannot take this case here: %s" % str(e).splitlines()[0])
    ours = ggt.grouped_mm(x, w, group_sizes)
    # Both accumulate in fp32 and round once to bf16: at most one bf16 ulp apart.
    torch.testing.assert_close(ours.float(), theirs.float(), rtol=2.0**-7, atol=1e-3)


@pytest.mark.parametrize("device", DEVICES)
def test_ragged_k_exact_and_empty_groups_zero(device):
    x, _, _, sizes = make(device)
    generator = torch.Generator().manual_seed(3)
    b = small_integers((M, 24), device=device, generator=generator)
    out = ggt.ragged_k_mm(x, b, sizes, out_dtype=torch.float32, alpha=-1.0)
    assert out.shape == (len(SIZES), x.shape[1], 24)
    torch.testing.assert_close(
        out.cpu().double(), expected_ragged_k(x, b, SIZES, alpha=-1.0), rtol=0, atol=0
    )
    assert torch.all(out[1] == 0) and torch.all(out[4] == 0)


@pytest.mark.parametrize("device", DEVICES)
def test_out_and_beta_accumulate(device):
    x, w, _, sizes = make(device)
    start = small_integers((M, w.shape[1]), torch.float32, device)
    y = start.clone()
    assert ggt.grouped_mm(x, w, sizes, alpha=2.0, beta=-1.0, out=y) is y
    expected = expected_grouped_mm(x, w, SIZES, "nk", alpha=2.0)
    rows = sum(SIZES)
    expected[:rows] -= start[:rows].cpu().double()
    expected[rows:] = start[rows:].cpu().double()  # rows past the groups are left alone
    torch.testing.assert_close(y.cpu().double(), expected, rtol=0, atol=0)

    main_grad = small_integers((len(SIZES), x.shape[1], x.shape[1]), torch.float32, device)
    before = main_grad.clone()
    ggt.ragged_k_mm(x, x, sizes, beta=1.0, out=main_grad)
    torch.testing.assert_close(
        main_grad.cpu().double(),
        before.cpu().double() + expected_ragged_k(x, x, SIZES),
        rtol=0,
        atol=0,
    )


# ---- autograd -----------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("w_layout", ["nk", "kn"])
def test_grouped_mm_backward_exact(device, w_layout):
    x, w, bias, sizes = make(device, w_layout, k=16, n=24)
    x.requires_grad_(), w.requires_grad_(), bias.requires_grad_()
    y = ggt.grouped_mm(x, w, sizes, w_layout=w_layout, bias=bias, alpha=2.0)
    dy = small_integers(y.shape, device=device, generator=torch.Generator().manual_seed(4))
    dy[sum(SIZES) :] = 1000  # rows past the groups must not reach any gradient
    y.backward(dy)

    xr, wr, br = (t.detach().cpu().double().requires_grad_() for t in (x, w, bias))
    expected = expected_grouped_mm_autograd(xr, wr, br, w_layout)
    expected.backward(dy.cpu().double()[: sum(SIZES)])
    for ours, reference in ((x.grad, xr.grad), (w.grad, wr.grad), (bias.grad, br.grad)):
        assert ours.dtype == torch.bfloat16
        torch.testing.assert_close(ours.cpu().double(), reference, rtol=0, atol=0)
    assert torch.all(x.grad[sum(SIZES) :] == 0)


def expected_grouped_mm_autograd(x, w, bias, w_layout):
    """Differentiable float64 reference over the valid rows (alpha = 2)."""
    starts, parts = offsets(SIZES), []
    for g, size in enumerate(SIZES):
        wg = w[g].T if w_layout == "nk" else w[g]
        parts.append(2.0 * x[starts[g] : starts[g] + size] @ wg + bias[g])
    return torch.cat(parts)


@pytest.mark.parametrize("device", DEVICES)
def test_no_tokens_at_all(device):
    """An expert-parallel rank that receives no tokens: empty activations
    (a tensor without an address) give an empty output, and zero weight and
    bias gradients."""
    _, w, bias, _ = make(device, k=16, n=24)
    x = torch.empty(0, 16, dtype=torch.bfloat16, device=device, requires_grad=True)
    w.requires_grad_(), bias.requires_grad_()
    sizes = torch.zeros(len(SIZES), dtype=torch.int32, device=device)
    y = ggt.grouped_mm(x, w, sizes, w_layout="nk", bias=bias)
    assert y.shape == (0, 24)
    y.backward(torch.empty_like(y))
    assert x.grad.shape == (0, 16)
    assert torch.all(w.grad == 0) and torch.all(bias.grad == 0)
    out = ggt.ragged_k_mm(x.detach(), torch.empty(0, 8, dtype=torch.bfloat16, device=device), sizes)
    assert out.shape == (len(SIZES), 16, 8) and torch.all(out == 0)


@pytest.mark.parametrize("device", DEVICES)
def test_ragged_k_backward_exact(device):
    generator = torch.Generator().manual_seed(5)
    a = small_integers((M, 16), device=device, generator=generator).requires_grad_()
    b = small_integers((M, 8), device=device, generator=generator).requires_grad_()
    sizes = torch.tensor(SIZES, device=device)
    out = ggt.ragged_k_mm(a, b, sizes, alpha=-1.0)
    dout = small_integers(out.shape, device=device, generator=generator)
    out.backward(dout)
    ar, br = (t.detach().cpu().double().requires_grad_() for t in (a, b))
    starts = offsets(SIZES)
    expected = torch.stack(
        [
            -ar[starts[g] : starts[g] + s].T @ br[starts[g] : starts[g] + s]
            for g, s in enumerate(SIZES)
        ]
    )
    expected.backward(dout.cpu().double())
    torch.testing.assert_close(a.grad.cpu().double(), ar.grad, rtol=0, atol=0)
    torch.testing.assert_close(b.grad.cpu().double(), br.grad, rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck(device):
    """torch's own checks of the registrations: schema, fake kernels, autograd, AOT dispatch."""
    sizes = [3, 0, 5, 12]  # summing to M: every output row is defined
    generator = torch.Generator().manual_seed(6)
    x = small_integers((M, 16), device=device, generator=generator).requires_grad_()
    w = small_integers((4, 24, 16), device=device, generator=generator).requires_grad_()
    bias = small_integers((4, 24), device=device, generator=generator).requires_grad_()
    group_sizes = torch.tensor(sizes, dtype=torch.int32, device=device)
    ops = torch.ops.groupgemm
    alphas = torch.tensor([1.0, 2.0, 0.5, -1.0], device=device)  # per group

    def operands(first, second):  # each operand's five arguments (plain tensors)
        return (first, None, None, None, False, second, None, None, None, False)

    torch.library.opcheck(
        ops.grouped_mm.default, (*operands(x, w), group_sizes, "nk", None, bias, 1.0, None)
    )
    torch.library.opcheck(
        ops.grouped_mm.default, (*operands(x, w), group_sizes, "nk", None, bias, 1.0, alphas)
    )
    torch.library.opcheck(
        ops.ragged_k_mm.default, (*operands(x, x), group_sizes, torch.float32, 1.0, None)
    )
    torch.library.opcheck(
        ops.grouped_mm_zero_rest.default,
        (*operands(x.detach(), w.detach()), group_sizes, "nk", None, 1.0, None),
    )
    out = torch.zeros(M, 24, dtype=torch.float32, device=device)
    torch.library.opcheck(
        ops.grouped_mm_out.default,
        (out, *operands(x.detach(), w.detach()), group_sizes, "nk", None, 1.0, None, 1.0),
    )


# ---- GroupedLinear ------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_grouped_linear_matches_per_expert_linear(device):
    layer = ggt.GroupedLinear(len(SIZES), 16, 24, dtype=torch.bfloat16, device=device)
    bound = 1 / 16**0.5
    assert layer.weight.abs().max() <= bound and layer.bias.abs().max() <= bound
    with torch.no_grad():  # exact values, so every sum below is exact
        layer.weight.copy_(
            small_integers(layer.weight.shape, generator=torch.Generator().manual_seed(7))
        )
        layer.bias.copy_(
            small_integers(layer.bias.shape, generator=torch.Generator().manual_seed(8))
        )
    experts = []
    for g in range(len(SIZES)):
        linear = torch.nn.Linear(16, 24, dtype=torch.float64)
        with torch.no_grad():
            linear.weight.copy_(layer.weight[g].double())
            linear.bias.copy_(layer.bias[g].double())
        experts.append(linear)
    x = small_integers((M, 16), device=device).requires_grad_()
    xr = x.detach().cpu().double().requires_grad_()
    y = layer(x, torch.tensor(SIZES, device=device))
    starts = offsets(SIZES)
    expected = torch.cat([experts[g](xr[starts[g] : starts[g] + s]) for g, s in enumerate(SIZES)])
    torch.testing.assert_close(valid(y), expected, rtol=0, atol=0)

    dy = small_integers(y.shape, device=device, generator=torch.Generator().manual_seed(9))
    y.backward(dy)
    expected.backward(dy[: sum(SIZES)].cpu().double())
    torch.testing.assert_close(x.grad.cpu().double(), xr.grad, rtol=0, atol=0)
    for g, linear in enumerate(experts):
        torch.testing.assert_close(
            layer.weight.grad[g].cpu().double(), linear.weight.grad, rtol=0, atol=0
        )
        torch.testing.assert_close(
            layer.bias.grad[g].cpu().double(), linear.bias.grad, rtol=0, atol=0
        )


@pytest.mark.parametrize("device", DEVICES)
def test_grouped_linear_main_grad_accumulates_in_fp32(device):
    layer = ggt.GroupedLinear(
        len(SIZES), 16, 8, bias=False, dtype=torch.bfloat16, device=device, main_grad=True
    )
    with torch.no_grad():
        layer.weight.copy_(small_integers(layer.weight.shape))
    assert layer.weight.main_grad.dtype == torch.float32 and torch.all(layer.weight.main_grad == 0)
    sizes = torch.tensor(SIZES, device=device)
    total = torch.zeros(layer.weight.shape, dtype=torch.float64)
    for step in range(2):
        generator = torch.Generator().manual_seed(10 + step)
        x = small_integers((M, 16), device=device, generator=generator)
        dy = small_integers((M, 8), device=device, generator=generator)
        layer(x, sizes).backward(dy)
        total += expected_ragged_k(dy, x, SIZES)  # dW[g] = dy[g]^T x[g]
    assert layer.weight.grad is None
    torch.testing.assert_close(layer.weight.main_grad.cpu().double(), total, rtol=0, atol=0)


def test_grouped_linear_rejects_a_wrong_main_grad():
    layer = ggt.GroupedLinear(2, 8, 8, dtype=torch.bfloat16, main_grad=True)
    layer.weight.main_grad = torch.zeros(2, 8, 8, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="weight.main_grad"):
        layer(torch.zeros(4, 8, dtype=torch.bfloat16), torch.tensor([2, 2]))


# ---- torch.compile and CUDA graphs --------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_fullgraph_matches_eager(device):
    x, w, bias, sizes = make(device, k=32, n=32)
    x.requires_grad_(), w.requires_grad_()

    def step(x, w, bias, sizes):
        y = ggt.grouped_mm(x, w, sizes, bias=bias)
        z = ggt.ragged_k_mm(y, x, sizes, out_dtype=torch.float32)
        return y.float().relu()[: sum(SIZES)].sum() + z.sum()

    eager = step(x, w, bias, sizes)
    eager_grads = torch.autograd.grad(eager, (x, w))
    compiled = torch.compile(step, fullgraph=True)(x, w, bias, sizes)
    compiled_grads = torch.autograd.grad(compiled, (x, w))
    torch.testing.assert_close(compiled, eager, rtol=0, atol=0)
    for c, e in zip(compiled_grads, eager_grads):
        torch.testing.assert_close(c, e, rtol=0, atol=0)


@pytest.mark.parametrize("device", DEVICES)
def test_same_shapes_new_data(device):
    """Checks run once per signature; every launch still reads its own data
    and scalars and writes its own output."""
    first, w, _, sizes = make(device, seed=1)
    second = make(device, seed=2)[0]
    for x, alpha in ((first, 1.0), (second, 1.0), (first, -2.0)):
        y = ggt.grouped_mm(x, w, sizes, out_dtype=torch.float32, alpha=alpha)
        expected = expected_grouped_mm(x, w, SIZES, "nk", alpha=alpha)
        torch.testing.assert_close(valid(y), valid(expected), rtol=0, atol=0)
    with pytest.raises(TypeError, match="w: dtype torch.float16 differs"):
        ggt.grouped_mm(first, w.half(), sizes)


@pytest.mark.parametrize("device", DEVICES)
def test_out_forms_bump_the_version_counter(device):
    x, w, _, sizes = make(device)
    out = torch.zeros(M, 48, dtype=torch.float32, device=device)
    grads = torch.zeros(len(SIZES), 32, 32, dtype=torch.float32, device=device)
    before = out._version, grads._version
    ggt.grouped_mm(x, w, sizes, out=out, beta=1.0)
    ggt.ragged_k_mm(x, x, sizes, out=grads, beta=1.0)
    assert (out._version, grads._version) == (before[0] + 1, before[1] + 1)


def test_meta_tensors_get_the_fake_kernels():
    """Meta tensors (shape inference, deferred initialization) take the fake
    kernels, as through the dispatcher, and never reach a launch."""
    x, w, bias, sizes = (t.to("meta") for t in make("cpu"))
    y = ggt.grouped_mm(x, w, sizes, bias=bias, out_dtype=torch.float32)
    assert (y.device.type, tuple(y.shape), y.dtype) == ("meta", (M, 48), torch.float32)
    dw = ggt.ragged_k_mm(x, x, sizes)
    assert (dw.device.type, tuple(dw.shape)) == ("meta", (len(SIZES), 32, 32))


@pytest.mark.parametrize("device", DEVICES)
def test_dispatch_modes_and_the_profiler_see_the_ops(device):
    """Eager calls that need no autograd skip torch's dispatcher, but not
    under a dispatch mode or the profiler: those still see every op."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recording(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    x, w, _, sizes = make(device)
    grads = torch.zeros(len(SIZES), 32, 32, dtype=torch.float32, device=device)
    with Recording() as recording:
        y = ggt.grouped_mm(x, w, sizes)
        ggt.ragged_k_mm(x, x, sizes, out=grads, beta=1.0)
    assert "groupgemm.grouped_mm.default" in recording.ops
    assert "groupgemm.ragged_k_mm_out.default" in recording.ops
    torch.testing.assert_close(valid(y), valid(expected_grouped_mm(x, w, SIZES, "nk")))

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        ggt.grouped_mm(x, w, sizes)
    assert "groupgemm::grouped_mm" in {event.key for event in profile.key_averages()}


@needs_cuda
def test_cuda_graph_replays_with_changed_routing():
    x, w, _, sizes = make("cuda", k=32, n=48)
    ggt.grouped_mm(x, w, sizes)  # sizes the workspace before capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = ggt.grouped_mm(x, w, sizes, out_dtype=torch.float32)
        z = ggt.ragged_k_mm(x, x, sizes, out_dtype=torch.float32)
    for routing in ([3, 0, 5, 1, 0, 7], [0, 10, 0, 0, 10, 0], [20, 0, 0, 0, 0, 0], [0] * 6):
        sizes.copy_(torch.tensor(routing, dtype=sizes.dtype))
        y.fill_(float("nan")), z.fill_(float("nan"))
        graph.replay()
        rows = sum(routing)
        expected_y = expected_grouped_mm(x, w, routing, "nk")
        torch.testing.assert_close(y[:rows].cpu().double(), expected_y[:rows], rtol=0, atol=0)
        torch.testing.assert_close(
            z.cpu().double(), expected_ragged_k(x, x, routing), rtol=0, atol=0
        )
    assert ggt.check() == 0


@needs_cuda
def test_cuda_graph_capture_refuses_to_grow_the_workspace(monkeypatch):
    monkeypatch.setattr(_workspace, "_buffers", {})
    x, w, _, sizes = make("cuda")
    with pytest.raises(WorkspaceTooSmall, match="reserve_workspace"):
        with torch.cuda.graph(torch.cuda.CUDAGraph()):
            ggt.grouped_mm(x, w, sizes)


@needs_cuda
def test_no_host_sync():
    x, w, bias, sizes = make("cuda")
    x.requires_grad_(), w.requires_grad_(), bias.requires_grad_()
    ggt.grouped_mm(x, w, sizes, bias=bias)  # first use allocates the workspace
    torch.cuda.set_sync_debug_mode("error")
    try:
        y = ggt.grouped_mm(x, w, sizes, bias=bias)
        y.backward(torch.ones_like(y))
        ggt.ragged_k_mm(x.detach(), x.detach(), sizes)
    finally:
        torch.cuda.set_sync_debug_mode("default")


@needs_cuda
def test_launches_on_two_streams_are_ordered():
    # Each launch keeps its group table in the one workspace of the device:
    # a launch on another stream must wait for the previous one.
    generator = torch.Generator().manual_seed(12)
    sizes_a, sizes_b = [512, 0, 1024, 512], [0, 2048, 0, 0]
    x = torch.randn(2048, 1024, generator=generator).bfloat16().cuda()
    w = torch.randn(4, 1024, 1024, generator=generator).bfloat16().cuda()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())  # x and w are written on the current stream
    with torch.cuda.stream(side):
        y_a = ggt.grouped_mm(x, w, torch.tensor(sizes_a, device="cuda"), out_dtype=torch.float32)
    y_b = ggt.grouped_mm(x, w, torch.tensor(sizes_b, device="cuda"), out_dtype=torch.float32)
    torch.cuda.synchronize()
    for y, sizes in ((y_a, sizes_a), (y_b, sizes_b)):
        # Loose bounds: a race would give another group's rows, not rounding noise.
        expected = expected_grouped_mm(x, w, sizes, "nk")
        torch.testing.assert_close(y.cpu().double(), expected, rtol=1e-3, atol=1e-2)


@pytest.mark.parametrize("device", DEVICES)
def test_check_reports_clamped_sizes(device):
    x, w, _, _ = make(device)
    ggt.check(device)  # start clean
    ggt.grouped_mm(x, w, torch.tensor([-1, 2, 3, 0, 0, 30], dtype=torch.int32, device=device))
    flags = ggt.check(device)
    assert flags & DeviceFlag.NEGATIVE_SIZE and flags & DeviceFlag.SIZES_EXCEED_ROWS
    assert ggt.check(device) == 0


# ---- bad input ----------------------------------------------------------------


def _bad_cases(device):
    x, w, bias, sizes = make(device)
    cases = [
        (dict(w=w.float()), TypeError, "w: dtype torch.float32 differs from x's"),
        (
            dict(x=x.float(), w=w.float()),
            TypeError,
            "x: dtype torch.float32 is not supported (bfloat16 or float16); cast x and w to "
            "torch.bfloat16 and pass out_dtype=torch.float32",
        ),
        (dict(w=w[:5]), ValueError, "w: has 5 groups"),
        (dict(w=w[:, :, :31]), ValueError, "w: K = 31"),
        (dict(x=x.t().contiguous().t()), ValueError, "x: the last dimension must be contiguous"),
        (dict(x=x[None]), ValueError, "x: expected [M, K]"),
        (dict(sizes=sizes.float()), TypeError, "group_sizes: expected int32 or int64"),
        (dict(sizes=sizes[:5]), ValueError, "w: has 6 groups"),
        (dict(bias=bias[:, :7]), ValueError, "bias: expected [G, N]"),
        (dict(w_layout="nn"), ValueError, "w_layout"),
        (dict(out_dtype=torch.int8), TypeError, "out_dtype: torch.int8 is not an output type"),
        (dict(beta=1.0), ValueError, "beta: accumulating"),
    ]
    if HAS_CUDA:  # one argument on the other device
        other = torch.device("cpu") if device == "cuda" else torch.device("cuda", 0)
        cases += [
            (dict(w=w.to(other)), ValueError, "w: on %s, but x is on %s" % (other, x.device)),
            (dict(sizes=sizes.to(other)), ValueError, "group_sizes: on %s, but the data" % other),
            (dict(bias=bias.to(other)), ValueError, "bias: on %s, but x is on" % other),
        ]
    return (x, w, bias, sizes), cases


@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_names_the_argument(device):
    (x, w, bias, sizes), cases = _bad_cases(device)
    for changes, error, message in cases:
        args = dict(x=x, w=w, bias=bias, sizes=sizes, w_layout="nk", out_dtype=None, beta=0.0)
        args.update(changes)
        with pytest.raises(error) as raised:
            ggt.grouped_mm(
                args["x"],
                args["w"],
                args["sizes"],
                w_layout=args["w_layout"],
                out_dtype=args["out_dtype"],
                bias=args["bias"],
                beta=args["beta"],
            )
        assert message in str(raised.value), (changes.keys(), str(raised.value))

"""groupgemm.torch.moe.ExpertParallelMoE on 2 and 4 CPU processes (gloo).

Each world size is one spawn: every rank runs every case below and records
"ok" or the traceback per case; the tests then read the records. Every rank
builds the whole problem (all ranks' tokens, all experts' weights) from one
seed, so each can compare its share against a single-process float64 MoE
written here: a loop over experts with masks, no slots, no collectives, the
same drop rule (an expert keeps the first `capacity` tokens of each source
rank, in token order). A case whose ranks would otherwise disagree on
collectives fails by gloo's timeout rather than a hang.
"""

import datetime
import json
import os
import time
import traceback

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

pytestmark = pytest.mark.usefixtures("lib")

HIDDEN, FFN, TOP_K = 16, 24, 2
TIMEOUT_S = 120


# ---- the reference ------------------------------------------------------------------


def reference_moe(x, router, w1, b1, w2, b2, capacity):
    """float64 top-k MoE over one rank's tokens x [T, H]; w1 [E, F, H],
    w2 [E, H, F] (nn.Linear layouts). Returns (out, dropped per expert)."""
    probs = torch.softmax(x @ router.T, dim=-1)
    weights, experts = probs.topk(TOP_K, dim=-1)
    out = torch.zeros_like(x)
    dropped = []
    for e in range(router.shape[0]):
        chosen = experts == e  # [T, k]
        hit = chosen.any(1)
        kept = hit if capacity is None else hit & (hit.cumsum(0) <= capacity)
        dropped.append(int(hit.sum() - kept.sum()))
        share = (weights * chosen).sum(1) * kept
        hidden = torch.nn.functional.gelu(x @ w1[e].T + b1[e])
        out = out + share.unsqueeze(1) * (hidden @ w2[e].T + b2[e])
    return out, dropped


class Problem:
    """All ranks' tokens and output gradients, and all experts' weights."""

    def __init__(self, tokens_per_rank, num_experts, skew=False, seed=0):
        g = torch.Generator().manual_seed(seed)
        bf16 = torch.bfloat16
        self.xs = [torch.randn(t, HIDDEN, generator=g).to(bf16) for t in tokens_per_rank]
        self.grads = [torch.randn(t, HIDDEN, generator=g).to(bf16) for t in tokens_per_rank]
        self.router = torch.randn(num_experts, HIDDEN, generator=g) * 0.5
        if skew:  # feature 0 is 1: experts 0 and 1 win, the last two never
            for x in self.xs:
                x[:, 0] = 1
            self.router[:2, 0] += 8
            self.router[-2:, 0] -= 8

        def uniform(*shape, fan_in):
            return ((torch.rand(*shape, generator=g) * 2 - 1) / fan_in**0.5).to(bf16)

        self.w1 = uniform(num_experts, FFN, HIDDEN, fan_in=HIDDEN)
        self.b1 = uniform(num_experts, FFN, fan_in=HIDDEN)
        self.w2 = uniform(num_experts, HIDDEN, FFN, fan_in=FFN)
        self.b2 = uniform(num_experts, HIDDEN, fan_in=FFN)

    def reference(self, rank, capacity):
        """This rank's (out, dropped, grads): x's and the router's from this
        rank's loss, the experts' from every rank's."""
        leaves = [t.double().requires_grad_() for t in (self.w1, self.b1, self.w2, self.b2)]
        loss, mine = 0, None
        for r, (x, grad) in enumerate(zip(self.xs, self.grads)):
            x = x.double().requires_grad_()
            router = self.router.double().requires_grad_()
            out, dropped = reference_moe(x, router, *leaves, capacity)
            loss = loss + (out * grad.double()).sum()
            if r == rank:
                mine = out, dropped, x, router
        loss.backward()
        out, dropped, x, router = mine
        return out.detach(), dropped, dict(
            x=x.grad, router=router.grad, w1=leaves[0].grad, b1=leaves[1].grad,
            w2=leaves[2].grad, b2=leaves[3].grad,
        )


# ---- the cases (run on every rank) ------------------------------------------------


def close(actual, expected, what, tolerance=2e-2):
    actual, expected = actual.detach().double(), expected.double()
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    error = (actual - expected).abs().max().item() if actual.numel() else 0.0
    scale = expected.abs().max().item() if expected.numel() else 0.0
    assert error <= tolerance * scale + 1e-3, "%s: max error %g, scale %g" % (what, error, scale)


def build(num_experts, capacity):
    from groupgemm.torch.moe import ExpertParallelMoE

    return ExpertParallelMoE(HIDDEN, FFN, num_experts, TOP_K, capacity=capacity,
                             dtype=torch.bfloat16)


def check_against_reference(rank, world, tokens_per_rank, capacity, skew=False, batch_shape=None):
    num_experts = 2 * world
    problem = Problem(tokens_per_rank, num_experts, skew=skew)
    layer = build(num_experts, capacity)
    local = slice(rank * 2, rank * 2 + 2)
    with torch.no_grad():
        layer.router.weight.copy_(problem.router)
        for linear, w, b in ((layer.fc1, problem.w1, problem.b1),
                             (layer.fc2, problem.w2, problem.b2)):
            linear.weight.copy_(w[local])
            linear.bias.copy_(b[local])
    x = problem.xs[rank].clone().requires_grad_()
    shape = x.shape if batch_shape is None else batch_shape
    out = layer(x.view(shape))
    out.backward(problem.grads[rank].view(shape))

    expected, dropped, grads = problem.reference(rank, capacity)
    close(out.view(-1, HIDDEN), expected, "out")
    assert layer.dropped.tolist() == dropped, (layer.dropped.tolist(), dropped)
    close(x.grad, grads["x"], "x.grad")
    close(layer.router.weight.grad, grads["router"], "router.grad")
    for name, param in (("w1", layer.fc1.weight), ("b1", layer.fc1.bias),
                        ("w2", layer.fc2.weight), ("b2", layer.fc2.bias)):
        close(param.grad, grads[name][local], name + ".grad")
    return layer, x


class NoHostReads:
    """Makes every tensor-to-host read raise while active."""

    NAMES = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__")

    def __enter__(self):
        self.saved = {name: getattr(torch.Tensor, name) for name in self.NAMES}

        def refuse(self, *args, **kwargs):
            raise AssertionError("the step read a tensor on the host")

        for name in self.NAMES:
            setattr(torch.Tensor, name, refuse)

    def __exit__(self, *exc):
        for name, method in self.saved.items():
            setattr(torch.Tensor, name, method)


def case_uniform_no_drop(rank, world):
    layer, x = check_against_reference(rank, world, [12] * world, None, batch_shape=(3, 4, HIDDEN))
    with NoHostReads():  # the shape is agreed on: the step itself reads nothing back
        layer(x.detach().view(3, 4, HIDDEN)).sum().backward()


def case_skewed_with_drops(rank, world):
    # Experts 0 and 1 get every token and keep 3 of each rank's; the last
    # rank's experts get none, so that rank receives no rows at all.
    check_against_reference(rank, world, [10] * world, 3, skew=True)


def case_skewed_no_drop(rank, world):
    check_against_reference(rank, world, [9] * world, None, skew=True)


def case_uneven_tokens(rank, world):
    # With a capacity, ranks may pass different token counts; rank 1 passes none.
    check_against_reference(rank, world, [9, 0, 5, 7][:world], 4)


def expect_error(match, make):
    with pytest.raises(ValueError, match=match):
        make()


def case_experts_not_divisible(rank, world):
    expect_error("num_experts: 9 experts cannot be split evenly over %d ranks" % world,
                 lambda: build(9, None))


def case_capacity_zero(rank, world):
    expect_error("capacity: expected a positive int, got 0", lambda: build(2 * world, 0))


def case_token_count_mismatch(rank, world):
    layer = build(2 * world, None)
    x = torch.zeros(8 if rank == 0 else 6, HIDDEN, dtype=torch.bfloat16)
    expect_error("x: rank 1 passed 6 tokens, rank 0 8", lambda: layer(x))


def case_hidden_mismatch_on_one_rank(rank, world):
    layer = build(2 * world, 4)
    x = torch.zeros(5, HIDDEN + (rank == 1), dtype=torch.bfloat16)
    expect_error(r"rank 1: x: expected \[..., 16\], got shape \[5, 17\]", lambda: layer(x))


def case_settings_mismatch(rank, world):
    layer = build(2 * world, 4 if rank == world - 1 else 5)
    x = torch.zeros(5, HIDDEN, dtype=torch.bfloat16)
    expect_error("capacity: rank %d built the layer with 4, rank 0 with 5" % (world - 1),
                 lambda: layer(x))


CASES = {name[len("case_"):]: case for name, case in sorted(globals().items())
         if name.startswith("case_")}


# ---- the processes ------------------------------------------------------------------


def _worker(rank, world, folder):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + os.path.join(folder, "rendezvous"),
                            rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=TIMEOUT_S // 2))
    results = {}
    for name, case in CASES.items():
        try:
            case(rank, world)
            results[name] = "ok"
        except Exception:
            results[name] = traceback.format_exc()
    dist.destroy_process_group()
    with open(os.path.join(folder, "rank%d.json" % rank), "w") as f:
        json.dump(results, f)


_RESULTS = {}


def results(world, tmp_path_factory):
    if world not in _RESULTS:
        folder = str(tmp_path_factory.mktemp("ep%d" % world))
        context = mp.spawn(_worker, args=(world, folder), nprocs=world, join=False)
        deadline = time.monotonic() + TIMEOUT_S
        while not context.join(timeout=max(deadline - time.monotonic(), 0)):
            if time.monotonic() >= deadline:
                for process in context.processes:
                    process.kill()
                pytest.fail("the %d processes did not finish in %d s" % (world, TIMEOUT_S))
        _RESULTS[world] = []
        for rank in range(world):
            with open(os.path.join(folder, "rank%d.json" % rank)) as f:
                _RESULTS[world].append(json.load(f))
    return _RESULTS[world]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("world", [2, 4])
def test_expert_parallel_moe(world, case, tmp_path_factory):
    failures = ["rank %d: %s" % (rank, record[case])
                for rank, record in enumerate(results(world, tmp_path_factory))
                if record[case] != "ok"]
    assert not failures, "\n".join(failures)


# ---- the benchmark's command line (it runs on GPUs only) ------------------------------


def test_bench_help(capsys):
    from groupgemm import bench_ep

    with pytest.raises(SystemExit) as exit:
        bench_ep.parse_args(["--help"])
    assert exit.value.code == 0
    assert "--capacity-factor" in capsys.readouterr().out


@pytest.mark.parametrize("argv, world, message", [
    ([], "3", "--preset: 128 experts cannot be split evenly over 3 ranks"),
    (["--preset", "nope"], "2", "--preset: unknown preset 'nope'"),
    (["--tokens", "0"], "2", "--tokens: expected a positive count, got 0"),
    (["--capacity-factor", "0"], "2", "--capacity-factor: expected a positive factor, got 0"),
    (["--methods", "ep,fast"], "2", "--methods: unknown fast"),
])
def test_bench_rejects_bad_arguments(argv, world, message, monkeypatch, capsys):
    from groupgemm import bench_ep

    monkeypatch.setenv("WORLD_SIZE", world)
    with pytest.raises(SystemExit) as exit:
        bench_ep.parse_args(argv)
    assert exit.value.code == 2
    assert message in capsys.readouterr().err


def test_bench_capacity(monkeypatch):
    from groupgemm import bench_ep

    monkeypatch.setenv("WORLD_SIZE", "8")
    # qwen3-30b-a3b: 128 experts, top-8: 1.25 * 1000 * 8 / 128 = 78.125 slots
    assert bench_ep.parse_args(["--tokens", "1000"]).capacity == 79
    assert bench_ep.parse_args(["--dropless"]).capacity is None

"""A Mixture-of-Experts layer on groupgemm.torch.GroupedLinear, trained for a few steps.

  router (nn.Linear) -> top-k experts per token -> token copies sorted by expert
  -> fc1 (GroupedLinear) -> SwiGLU -> fc2 (GroupedLinear)
  -> back to token order, weighted by the router

Every expert's fc1 (and then fc2) runs in one grouped product over the sorted
copies. The per-expert counts are computed on the device and never read by
the host, so a step has no host sync (it can be CUDA-graph captured). The
forward is checked against a plain loop over the experts. Runs on CUDA when
there is a GPU, else on CPU tensors through the library's CPU reference:

  GROUPGEMM_LIBRARY=build/release/src/libgroupgemm.so PYTHONPATH=python \\
    python3 examples/torch_moe.py
"""

import torch
import torch.nn.functional as F
from torch import nn

from groupgemm.torch import GroupedLinear


class MoE(nn.Module):
    def __init__(self, hidden, ffn, experts, top_k, device, dtype=torch.bfloat16):
        super().__init__()
        self.experts, self.top_k = experts, top_k
        self.router = nn.Linear(hidden, experts, bias=False, device=device, dtype=dtype)
        # fc1 makes the gate and the up projection of SwiGLU side by side.
        self.fc1 = GroupedLinear(experts, hidden, 2 * ffn, device=device, dtype=dtype)
        self.fc2 = GroupedLinear(experts, ffn, hidden, device=device, dtype=dtype)

    def route(self, x):
        """Each token's top_k experts [T, k] and their weights [T, k], summing to 1."""
        probs = self.router(x).float().softmax(dim=-1)
        weights, experts = probs.topk(self.top_k, dim=-1)
        return weights / weights.sum(dim=-1, keepdim=True), experts

    def forward(self, x):
        weights, experts = self.route(x)
        # Copy j of token t is entry t * k + j; sort the copies by expert
        # (stable: tokens stay in order within an expert).
        order = experts.flatten().argsort(stable=True)
        token = order // self.top_k
        # Copies per expert. histc over a fixed range runs on the device and,
        # unlike bincount on CUDA, never reads the largest index back.
        counts = torch.histc(experts.flatten().float(), bins=self.experts, min=0,
                             max=self.experts).to(torch.int32)
        gate, up = self.fc1(x[token], counts).chunk(2, dim=-1)
        y = self.fc2(F.silu(gate) * up, counts)
        y = y * weights.flatten()[order, None].to(y.dtype)
        return torch.zeros_like(x).index_add_(0, token, y)


def reference(moe, x):
    """The same layer as a plain loop over the experts, in fp32 from the same weights."""
    weights, experts = moe.route(x)
    out = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for e in range(moe.experts):
        token, slot = (experts == e).nonzero(as_tuple=True)
        h = x[token].float() @ moe.fc1.weight[e].float().T + moe.fc1.bias[e].float()
        gate, up = h.chunk(2, dim=-1)
        y = (F.silu(gate) * up) @ moe.fc2.weight[e].float().T + moe.fc2.bias[e].float()
        out.index_add_(0, token, y * weights[token, slot, None])
    return out


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    tokens, hidden, ffn, experts, top_k = 256, 64, 128, 8, 2
    moe = MoE(hidden, ffn, experts, top_k, device)
    x = torch.randn(tokens, hidden, device=device, dtype=torch.bfloat16)
    target = torch.randn(tokens, hidden, device=device, dtype=torch.bfloat16)

    with torch.no_grad():
        got, want = moe(x).float(), reference(moe, x)
    error = ((got - want).norm() / want.norm()).item()
    print("torch_moe on %s: forward vs. the per-expert loop, relative error %.2e" % (device, error))
    if not error < 2e-2:  # bf16 activations between the products
        raise SystemExit("torch_moe: the grouped forward differs from the per-expert loop")

    optimizer = torch.optim.Adam(moe.parameters(), lr=1e-2)
    for step in range(5):
        optimizer.zero_grad()
        loss = F.mse_loss(moe(x).float(), target.float())
        loss.backward()
        optimizer.step()
        print("step %d: loss %.4f" % (step, loss.item()))


if __name__ == "__main__":
    main()

"""The dense fp8 peers' quantization and scale layouts (groupgemm._dense_fp8),
on the CPU: the block scales reproduce the matrix, and the views handed to
torch._scaled_mm have the shapes and strides its block-scaling checks ask."""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from groupgemm import _dense_fp8 as dense  # noqa: E402


def element_scales(scale, block_rows, shape):
    expand = scale.repeat_interleave(block_rows, 0).repeat_interleave(dense.BLOCK, 1)
    return expand[: shape[0], : shape[1]]


@pytest.mark.parametrize("block_rows", [1, 128])
@pytest.mark.parametrize("shape", [(1, 1), (5, 130), (129, 256), (300, 127)])
def test_block_scales_reproduce_the_matrix(shape, block_rows):
    torch.manual_seed(0)
    t = torch.randn(*shape) * torch.logspace(-3, 3, shape[1])
    codes, scale = dense.block_fp8(t.to(torch.bfloat16), block_rows)
    assert codes.dtype == torch.float8_e4m3fn and codes.shape == t.shape
    assert scale.shape == (-(-shape[0] // block_rows), -(-shape[1] // 128))
    # Each block's largest magnitude lands on 448; e4m3 keeps 3 bits.
    assert float(codes.float().abs().max()) == pytest.approx(448.0, rel=1 / 16)
    scales = element_scales(scale, block_rows, shape)
    reference = t.to(torch.bfloat16).float()
    # Half an e4m3 step: 2^-4 of the value, or 2^-10 x the scale (subnormals).
    bound = reference.abs() / 16 + scales * 2**-10
    assert torch.all((codes.float() * scales - reference).abs() <= bound)


def test_tensor_scale_is_amax_over_448():
    t = torch.tensor([[1.0, -896.0], [3.0, 0.5]])
    codes, scale = dense.tensor_fp8(t)
    assert float(scale) == 2.0 and scale.dim() == 0
    assert codes.float().tolist() == [[0.5, -448.0], [1.5, 0.25]]


def check_size_stride(t, dim, size, stride):
    """torch's check: the size, and the stride where the size is not 1."""
    return t.size(dim) == size and (size == 1 or t.stride(dim) == stride)


@pytest.mark.parametrize("m,n,k", [(64, 256, 512), (33, 384, 640), (8, 128, 7168)])
def test_scale_views_are_the_layouts_scaled_mm_checks(m, n, k):
    a = torch.randn(m, k, dtype=torch.bfloat16)
    b_t = torch.randn(n, k, dtype=torch.bfloat16)
    k_blocks = -(-k // 128)
    # 1x128 x 128x128: A's scales [M, K/128] M-major; B's read through its
    # transpose (b_t) as 128x128 rows K/128-rounded-to-4 apart.
    a8, b8, sa, sb = dense.quantized_pair(a, b_t, 128)
    assert b8.shape == (k, n) and b8.t().is_contiguous()
    assert check_size_stride(sa, 0, m, 1) and check_size_stride(sa, 1, k_blocks, m)
    sbt = sb.t()
    assert check_size_stride(sbt, 0, -(-n // 128), -(-k_blocks // 4) * 4)
    assert check_size_stride(sbt, 1, k_blocks, 1)
    # 1x128 x 1x128: B's through its transpose as 1x128, N-major.
    a8, b8, sa, sb = dense.quantized_pair(a, b_t, 1)
    sbt = sb.t()
    assert check_size_stride(sbt, 0, n, 1) and check_size_stride(sbt, 1, k_blocks, n)
    # The values behind the views are the blocks' scales.
    _, scale_b = dense.block_fp8(b_t, 1)
    assert torch.equal(sbt, scale_b)


def test_tensor_peer_runs_checked_and_counts_its_bytes():
    """torch._scaled_mm runs tensor scales on the CPU too: the peer is offered,
    its product within fp8's error of bf16 (dense_fp8_peers checks it)."""
    torch.manual_seed(1)
    a = torch.randn(64, 256, dtype=torch.bfloat16)
    b_t = torch.randn(128, 256, dtype=torch.bfloat16)
    peers = dense.dense_fp8_peers(a, b_t, {"tensor": None}, tolerance=0.1)
    run, nbytes = peers["cuBLASLt fp8 dense tensor"]
    assert run().shape == (64, 128) and run().dtype == torch.bfloat16
    assert nbytes == 64 * 256 + 128 * 256 + 2 * 4

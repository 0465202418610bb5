"""groupgemm.torch.grouped_quantize: the CPU path (the library's reference)
against values worked out here, and the CUDA path against the CPU path, bit
for bit, eagerly, in a CUDA graph replayed after the sizes changed, and under
torch.compile. Sizes sum to M, so every data element is defined; of the
columnwise block scales only the entries some group uses are compared."""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import groupgemm.torch as ggt  # noqa: E402
from groupgemm import core  # noqa: E402
from groupgemm.torch import _workspace  # noqa: E402

pytestmark = pytest.mark.usefixtures("lib")

HAS_CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA GPU")

RAGGED_FORMATS = [
    "fp8_e4m3_tensor",
    "fp8_e5m2_group",
    "fp8_e4m3_1x128",
    "fp8_e4m3_rowwise",
    "mxfp8_e4m3",
    "mxfp8_e5m2",
    "nvfp4_tensor",
    "nvfp4_group",
    "mxfp4",
]
SIZES = [33, 0, 1, 129, 31, 62]  # sum 256 = M


def _input(shape, dtype=torch.bfloat16, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g) * torch.exp2(
        torch.randint(-8, 8, shape[:-1] + (1,), generator=g)
    )
    return x.to(dtype)


def _bits(t):
    return t.view(torch.uint8) if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2) else t


def _used_block_columns(fmt, sizes):
    if fmt.endswith("rowwise"):
        # One scale per group's K column, an empty group's too, unless the
        # output holds no element at all (nothing is written then).
        return len(sizes) if sum(sizes) > 0 else 0
    bs = 32 if fmt.startswith("mxfp") else 16 if fmt.startswith("nvfp4") else 128
    return sum(-(-s // bs) for s in sizes)


def _assert_same(got, want, fmt, sizes, columnwise):
    for name in ("data", "block_scales", "scale"):
        a, b = getattr(got, name), getattr(want, name)
        assert (a is None) == (b is None), name
        if a is None:
            continue
        a, b = _bits(a.cpu()), _bits(b.cpu())
        if name == "block_scales" and columnwise and sizes is not None:
            used = _used_block_columns(fmt, sizes)
            a, b = a[:, :used], b[:, :used]
        if a.dtype == torch.float32:
            a, b = a.view(torch.int32), b.view(torch.int32)
        diff = (a != b).nonzero()
        assert diff.numel() == 0, "%s %s: first mismatch at %s: got %s, want %s" % (
            fmt,
            name,
            diff[0].tolist(),
            a[tuple(diff[0])].item(),
            b[tuple(diff[0])].item(),
        )


def test_cpu_mxfp8_of_ones_is_worked_out_here():
    # amax 1: X = floor(log2 1) - 8 = -8, e8m0 code 127 - 8 = 119; 1 / 2^-8 =
    # 256 is e4m3 0x78.
    x = torch.ones(4, 64, dtype=torch.bfloat16)
    q = ggt.grouped_quantize(
        x, torch.tensor([4], dtype=torch.int32), rowwise="mxfp8_e4m3", amax=True
    )
    assert q.rowwise.data.view(torch.uint8).eq(0x78).all()
    assert q.rowwise.block_scales.shape == (4, 2)
    assert q.rowwise.block_scales.eq(119).all()
    assert q.amax.tolist() == [1.0]
    assert q.columnwise is None


def test_cpu_shapes_and_dtypes():
    x = _input((64, 96))
    sizes = torch.tensor([10, 54], dtype=torch.int64)
    q = ggt.grouped_quantize(x, sizes, rowwise="nvfp4_group", columnwise="fp8_e4m3_1x128")
    assert q.rowwise.data.shape == (64, 48) and q.rowwise.data.dtype == torch.uint8
    assert q.rowwise.block_scales.shape == (64, 6) and q.rowwise.scale.shape == (2,)
    assert q.columnwise.data.shape == (96, 64) and q.columnwise.data.dtype == torch.float8_e4m3fn
    assert q.columnwise.block_scales.shape == (96, 0 + 2) and q.columnwise.scale is None


def test_unknown_format_is_named():
    with pytest.raises(ValueError, match="unknown quantize format 'fp8'"):
        ggt.grouped_quantize(_input((4, 32)), torch.tensor([4]), rowwise="fp8")


def _sizes(device, sizes=SIZES):
    return torch.tensor(sizes, dtype=torch.int32, device=device)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_cuda)])
def test_later_calls_of_one_signature_use_their_own_tensors(device):
    # The op checks a signature once and retargets the kept descriptor: the
    # second call here runs the first one's, and must read its own input and
    # sizes and write its own results. The CPU run with int64 sizes is
    # another signature, built afresh.
    fmt = "nvfp4_group"
    first, second = [100, 0, 156, 0, 0, 0], SIZES
    x_first, x_second = _input((256, 96), seed=1), _input((256, 96), seed=2)
    q_first = ggt.grouped_quantize(
        x_first.to(device), _sizes(device, first), rowwise=fmt, columnwise=fmt, amax=True
    )
    q_second = ggt.grouped_quantize(
        x_second.to(device), _sizes(device, second), rowwise=fmt, columnwise=fmt, amax=True
    )
    want = ggt.grouped_quantize(
        x_second, torch.tensor(second, dtype=torch.int64), rowwise=fmt, columnwise=fmt, amax=True
    )
    _assert_same(q_second.rowwise, want.rowwise, fmt, second, False)
    _assert_same(q_second.columnwise, want.columnwise, fmt, second, True)
    assert torch.equal(q_second.amax.cpu(), want.amax)
    assert not torch.equal(q_first.amax.cpu(), q_second.amax.cpu())


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_cuda)])
@pytest.mark.parametrize("fmt", RAGGED_FORMATS)
def test_no_tokens_at_all(device, fmt):
    # An expert-parallel rank that receives no tokens: the input and the
    # outputs are empty tensors (without addresses); every group's amax is
    # 0, and its scales are those of an amax of 0, as on the CPU.
    x = torch.empty(0, 160, dtype=torch.bfloat16, device=device)
    zeros = [0] * len(SIZES)
    got = ggt.grouped_quantize(x, _sizes(device, zeros), rowwise=fmt, columnwise=fmt, amax=True)
    want = ggt.grouped_quantize(x.cpu(), _sizes("cpu", zeros), rowwise=fmt, columnwise=fmt,
                                amax=True)
    assert got.rowwise.data.numel() == 0 and got.columnwise.data.numel() == 0
    assert torch.equal(got.amax.cpu(), torch.zeros(len(SIZES)))
    _assert_same(got.rowwise, want.rowwise, fmt, zeros, False)
    _assert_same(got.columnwise, want.columnwise, fmt, zeros, True)


@needs_cuda
@pytest.mark.parametrize("fmt", RAGGED_FORMATS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_cuda_matches_cpu_ragged(fmt, dtype):
    x = _input((256, 160), dtype)
    want = ggt.grouped_quantize(x, _sizes("cpu"), rowwise=fmt, columnwise=fmt, amax=True)
    got = ggt.grouped_quantize(x.cuda(), _sizes("cuda"), rowwise=fmt, columnwise=fmt, amax=True)
    _assert_same(got.rowwise, want.rowwise, fmt, SIZES, False)
    _assert_same(got.columnwise, want.columnwise, fmt, SIZES, True)
    assert torch.equal(got.amax.cpu().view(torch.int32), want.amax.view(torch.int32))
    assert int(ggt.check("cuda")) == 0


# The workspace's first 256 bytes hold the flags; the quantizer's group
# maxima and the GEMMs' records share the bytes after them.
_SCRATCH_OFFSET = 256


@needs_cuda
@pytest.mark.parametrize("fmt", ["fp8_e4m3_tensor", "fp8_e5m2_group", "nvfp4_group"])
def test_cuda_after_gemms_on_the_shared_workspace(fmt):
    # The device's one workspace serves every op: the GEMMs below leave their
    # records where the quantizer keeps its group maxima, which it must zero
    # itself rather than trust to be zero.
    sizes = _sizes("cuda")
    x = _input((256, 160)).cuda()
    w = _input((len(SIZES), 64, 160), seed=3).cuda()
    ggt.grouped_mm(x, w, sizes)
    ggt.ragged_k_mm(x, _input((256, 64), seed=4).cuda(), sizes)
    maxima_bytes = 4 * (len(SIZES) + 1)
    scratch = _workspace._buffers[x.device][_SCRATCH_OFFSET : _SCRATCH_OFFSET + maxima_bytes]
    assert scratch.any(), "the GEMMs left the maxima's words zero: the case is not tested"
    got = ggt.grouped_quantize(x, sizes, rowwise=fmt, columnwise=fmt, amax=True)
    want = ggt.grouped_quantize(x.cpu(), _sizes("cpu"), rowwise=fmt, columnwise=fmt, amax=True)
    _assert_same(got.rowwise, want.rowwise, fmt, SIZES, False)
    _assert_same(got.columnwise, want.columnwise, fmt, SIZES, True)
    assert torch.equal(got.amax.cpu().view(torch.int32), want.amax.view(torch.int32))


@needs_cuda
@pytest.mark.parametrize("fmt", ["fp8_e4m3_128x128", "fp8_e5m2_1x128", "mxfp8_e4m3", "nvfp4_group"])
def test_cuda_matches_cpu_stacked(fmt):
    w = _input((3, 200, 272))
    want = ggt.grouped_quantize(w, rowwise=fmt, columnwise=fmt)
    got = ggt.grouped_quantize(w.cuda(), rowwise=fmt, columnwise=fmt)
    _assert_same(got.rowwise, want.rowwise, fmt, None, False)
    _assert_same(got.columnwise, want.columnwise, fmt, None, True)


@needs_cuda
def test_cuda_graph_replays_with_changed_sizes():
    fmt = "nvfp4_group"
    x = _input((256, 128)).cuda()
    sizes = _sizes("cuda")
    ggt.grouped_quantize(x, sizes, rowwise=fmt, columnwise=fmt)  # sizes the workspace
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        q = ggt.grouped_quantize(x, sizes, rowwise=fmt, columnwise=fmt, amax=True)
    for new_sizes in ([256, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 256], [40, 40, 40, 40, 40, 56]):
        sizes.copy_(torch.tensor(new_sizes, dtype=torch.int32))
        x.copy_(_input((256, 128), seed=sum(new_sizes[:2])).cuda())
        graph.replay()
        want = ggt.grouped_quantize(
            x.cpu(), _sizes("cpu", new_sizes), rowwise=fmt, columnwise=fmt, amax=True
        )
        _assert_same(q.rowwise, want.rowwise, fmt, new_sizes, False)
        _assert_same(q.columnwise, want.columnwise, fmt, new_sizes, True)
        assert torch.equal(q.amax.cpu().view(torch.int32), want.amax.view(torch.int32))


@needs_cuda
def test_cuda_under_torch_compile():
    def f(x, sizes):
        q = ggt.grouped_quantize(x, sizes, rowwise="mxfp8_e4m3", columnwise="mxfp8_e4m3")
        return q.rowwise.data, q.columnwise.block_scales

    x = _input((256, 64)).cuda()
    data, scales = torch.compile(f, fullgraph=True)(x, _sizes("cuda"))
    want = ggt.grouped_quantize(
        x.cpu(), _sizes("cpu"), rowwise="mxfp8_e4m3", columnwise="mxfp8_e4m3"
    )
    assert torch.equal(data.cpu().view(torch.uint8), want.rowwise.data.view(torch.uint8))
    used = _used_block_columns("mxfp8_e4m3", SIZES)
    assert torch.equal(scales.cpu()[:, :used], want.columnwise.block_scales[:, :used])

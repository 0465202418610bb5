"""The grouped-quantize torch op (groupgemm::grouped_quantize) and its fake kernel.

One op quantizes a ragged [M, K] input (sizes on the device) or stacked
[G, N, K] weights into up to two outputs, rowwise and columnwise, each in a
format named as in core.QUANTIZE_FORMATS, from one read of the input. It
returns a flat list of seven tensors, absent ones empty, so its schema is
fixed:

  rowwise data, rowwise block scales, rowwise fp32 scale,
  columnwise data, columnwise block scales, columnwise fp32 scale, amax [G]

The arrays are allocated as core.quantize_arrays says (the JAX front end's
too): fp8 data is float8_e4m3fn / float8_e5m2; nvfp4 data is uint8, two e2m1
elements per byte (the even one in the low nibble), so its last dimension is
half the element count; e8m0 and ue4m3 block scales are uint8, 1x128 and
128x128 block scales float32. Results are new tensors: entries for rows past
the last group (and block-scale capacity no group uses) are left
uninitialized, as the library leaves them unwritten. The op runs on the
current stream, reads no size on the host and is CUDA-graph capturable; CPU
tensors run the library's reference. As the GEMM ops do, a real kernel runs
the checks and works out the results' shapes once per signature
(_checked.py) and retargets the kept descriptor to each launch's tensors.
"""

from typing import List, Optional, Tuple

import torch

from .. import core
from . import _workspace
from ._checked import checked_once, signature
from ._registry import define
from ._views import operand

INPUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)

# One result's (shape, dtype), or None for an empty one.
Result = Optional[Tuple[Tuple[int, ...], torch.dtype]]


def _output_results(
    x: torch.Tensor, fmt: Optional[str], groups: int, columnwise: bool
) -> List[Result]:
    """data, block scales, scale of one output."""
    if fmt is None:
        return [None, None, None]
    arrays = core.quantize_arrays(fmt, tuple(x.shape), groups, columnwise)
    return [None if a is None else (a.shape, getattr(torch, a.dtype)) for a in arrays]


def _template_output(fmt: Optional[str]) -> Optional[core.QuantizedOutput]:
    return None if fmt is None else core.QuantizedOutput(fmt, 0, 0, 0)


def _checked(x, group_sizes, rowwise, columnwise, amax):
    """The seven results and the descriptor without data, after the checks."""
    if x.dtype not in INPUT_DTYPES:
        raise TypeError("x: dtype %s is not supported (bfloat16, float16 or float32)" % x.dtype)
    stacked = group_sizes is None
    core.check_quantize_request(rowwise, columnwise, amax, stacked=stacked)
    groups = x.shape[0] if stacked else group_sizes.shape[0]
    results = _output_results(x, rowwise, groups, False) + _output_results(
        x, columnwise, groups, True
    )
    results.append(((groups,), torch.float32) if amax else None)
    template = core.grouped_quantize(
        x=operand("x", x, False),
        group_sizes=None if stacked else operand("group_sizes", group_sizes, False),
        rowwise=_template_output(rowwise),
        columnwise=_template_output(columnwise),
    )
    return results, template


def _allocated(x: torch.Tensor, results: List[Result]) -> List[torch.Tensor]:
    return [
        x.new_empty((0,), dtype=torch.uint8) if r is None else x.new_empty(r[0], dtype=r[1])
        for r in results
    ]


def _address(tensor: torch.Tensor) -> int:
    return tensor.data_ptr() if tensor.numel() > 0 else 0


def _addresses(fmt: Optional[str], tensors: List[torch.Tensor]) -> Optional[core.OutputAddresses]:
    if fmt is None:
        return None
    data, block_scales, scale = tensors
    # An empty tensor may have no address, and the library reads an output's
    # NULL data as "not requested": an aligned stand-in is passed (nothing is
    # written there). Empty block scales may stay NULL.
    return data.data_ptr() or 256, block_scales.data_ptr(), _address(scale)


def _grouped_quantize(x, group_sizes, rowwise, columnwise, amax):
    key = ("grouped_quantize", signature(x), signature(group_sizes), rowwise, columnwise, amax)
    results, template = checked_once(
        key, lambda: _checked(x, group_sizes, rowwise, columnwise, amax)
    )
    outputs = _allocated(x, results)
    desc = core.quantize_retargeted(
        template,
        x.data_ptr(),
        0 if group_sizes is None else group_sizes.data_ptr(),
        _addresses(rowwise, outputs[0:3]),
        _addresses(columnwise, outputs[3:6]),
        _address(outputs[6]),
    )
    _workspace.run(desc, x.device)
    return outputs


def _grouped_quantize_fake(x, group_sizes, rowwise, columnwise, amax):
    results, _ = _checked(x, group_sizes, rowwise, columnwise, amax)
    return _allocated(x, results)


grouped_quantize_op = define(
    "grouped_quantize(Tensor x, Tensor? group_sizes, str? rowwise, str? columnwise, bool amax) "
    "-> Tensor[]",
    _grouped_quantize,
    _grouped_quantize_fake,
)


def grouped_quantize(
    x: torch.Tensor,
    group_sizes: Optional[torch.Tensor] = None,
    *,
    rowwise: Optional[str] = None,
    columnwise: Optional[str] = None,
    amax: bool = False,
) -> core.Quantized:
    """Quantizes x [M, K] (ragged: group_sizes [G] int32/int64 on x's device)
    or stacked weights [G, N, K] (group_sizes None), bf16/fp16/fp32, into a
    rowwise output (x's shape, blocks along K) and/or a columnwise one
    (transposed: [K, M] or [G, K, N], blocks along the tokens restarting at
    every group start), in one pass. Formats: fp8_e4m3/e5m2 with _tensor or
    _group scales, fp8_e4m3/e5m2_1x128, fp8_e4m3/e5m2_128x128 (stacked only),
    fp8_e4m3/e5m2_rowwise, mxfp8_e4m3/e5m2, mxfp4, nvfp4_tensor/_group, on
    the CPU and the GPU alike. amax=True also returns each group's absolute
    maximum [G]. Entries past the last group are left uninitialized. Each
    output is a QuantizedTensor, which grouped_mm and ragged_k_mm take as an
    operand."""
    out = grouped_quantize_op(x, group_sizes, rowwise, columnwise, amax)
    return core.quantized(rowwise, columnwise, amax, out)

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
tensors run the library's reference.
"""

from typing import List, Optional

import torch

from .. import core
from . import _workspace
from ._registry import define
from ._views import operand

INPUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _groups(x: torch.Tensor, group_sizes: Optional[torch.Tensor]) -> int:
    return x.shape[0] if group_sizes is None else group_sizes.shape[0]


def _empty(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty((0,), dtype=torch.uint8)


def _allocate(
    x: torch.Tensor, fmt: Optional[str], groups: int, columnwise: bool
) -> List[torch.Tensor]:
    """data, block scales, scale of one output (empty tensors where absent)."""
    if fmt is None:
        return [_empty(x), _empty(x), _empty(x)]
    arrays = core.quantize_arrays(fmt, tuple(x.shape), groups, columnwise)
    return [
        _empty(x) if a is None else x.new_empty(a.shape, dtype=getattr(torch, a.dtype))
        for a in arrays
    ]


def _results(x, group_sizes, rowwise, columnwise, amax) -> List[torch.Tensor]:
    if x.dtype not in INPUT_DTYPES:
        raise TypeError("x: dtype %s is not supported (bfloat16, float16 or float32)" % x.dtype)
    core.check_quantize_request(rowwise, columnwise, amax, stacked=group_sizes is None)
    groups = _groups(x, group_sizes)
    outputs = _allocate(x, rowwise, groups, False) + _allocate(x, columnwise, groups, True)
    outputs.append(x.new_empty((groups,), dtype=torch.float32) if amax else _empty(x))
    return outputs


def _address(tensor: torch.Tensor) -> int:
    return tensor.data_ptr() if tensor.numel() > 0 else 0


def _output(fmt: Optional[str], tensors: List[torch.Tensor]) -> Optional[core.QuantizedOutput]:
    if fmt is None:
        return None
    data, block_scales, scale = tensors
    # An empty tensor may have no address; the library needs one (it
    # writes nothing there), so an aligned stand-in is passed.
    return core.QuantizedOutput(
        fmt, data.data_ptr() or 256, block_scales.data_ptr() or 256, _address(scale)
    )


def _check(x, group_sizes, rowwise, columnwise, outputs, launch):
    views = dict(
        x=operand("x", x, launch),
        group_sizes=None if group_sizes is None else operand("group_sizes", group_sizes, launch),
        rowwise=_output(rowwise, outputs[0:3]) if launch else None,
        columnwise=_output(columnwise, outputs[3:6]) if launch else None,
        amax=_address(outputs[6]) if launch else 0,
    )
    desc = core.grouped_quantize(**views)
    if launch:
        _workspace.run(desc, x.device)


def _grouped_quantize(x, group_sizes, rowwise, columnwise, amax):
    outputs = _results(x, group_sizes, rowwise, columnwise, amax)
    _check(x, group_sizes, rowwise, columnwise, outputs, launch=True)
    return outputs


def _grouped_quantize_fake(x, group_sizes, rowwise, columnwise, amax):
    outputs = _results(x, group_sizes, rowwise, columnwise, amax)
    _check(x, group_sizes, rowwise, columnwise, outputs, launch=False)
    return outputs


grouped_quantize_op = define(
    "grouped_quantize(Tensor x, Tensor? group_sizes, str? rowwise, str? columnwise, bool amax) "
    "-> Tensor[]",
    _grouped_quantize,
    _grouped_quantize_fake,
)

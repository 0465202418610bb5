"""torch tensors as core.Operand views.

The dtype table is the one place torch element types meet the C API's. Fake
tensors (torch.compile's tracing, meta kernels) have no memory, so their
views carry address 0: the checks only need shapes, strides and devices.
"""

import torch

from .. import core
from .._capi import DType, IndexType

ELEMENT_TYPES = {
    torch.bfloat16: DType.BF16,
    torch.float16: DType.FP16,
    torch.float32: DType.FP32,
    torch.float8_e4m3fn: DType.E4M3,
    torch.float8_e5m2: DType.E5M2,
    torch.int32: IndexType.INT32,
    torch.int64: IndexType.INT64,
}


def operand(name: str, tensor: torch.Tensor, with_data: bool = True) -> core.Operand:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError("%s: expected a torch.Tensor, got %s" % (name, type(tensor).__name__))
    element_type = ELEMENT_TYPES.get(tensor.dtype)
    if element_type is None:
        raise TypeError("%s: unsupported dtype %s" % (name, tensor.dtype))
    return core.Operand(
        name=name,
        data=tensor.data_ptr() if with_data else 0,
        dtype=element_type,
        shape=tuple(tensor.shape),
        strides=tuple(tensor.stride()),
        device=str(tensor.device),
    )

"""torch tensors as core.Operand views, and the ops' operands.

The dtype table is the one place torch element types meet the C API's. Fake
tensors (torch.compile's tracing, meta kernels) have no memory, so their
views carry address 0: the checks only need shapes, strides and devices.

An op's operand is five arguments, since an op takes tensors, not a
core.QuantizedTensor: the data, its block scales and fp32 scale, its
format and whether it is the columnwise copy (a plain tensor: the data,
None, None, None, False: `plain`). `parts` flattens what the caller passed,
Arg gathers the five again.
"""

from typing import NamedTuple, Optional, Tuple

import torch

from .. import core
from .._capi import DType, IndexType
from ._checked import signature

ELEMENT_TYPES = {
    torch.bfloat16: DType.BF16,
    torch.float16: DType.FP16,
    torch.float32: DType.FP32,
    torch.float8_e4m3fn: DType.E4M3,
    torch.float8_e5m2: DType.E5M2,
    torch.int32: IndexType.INT32,
    torch.int64: IndexType.INT64,
    torch.uint8: core.Storage.UINT8,  # packed e2m1, e8m0 and ue4m3 block scales
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


class Arg(NamedTuple):
    """One operand of an op, as its five arguments."""

    data: torch.Tensor
    block_scales: Optional[torch.Tensor]
    scale: Optional[torch.Tensor]
    fmt: Optional[str]
    columnwise: bool

    @property
    def quantized(self) -> bool:
        return self.fmt is not None

    def view(self, name: str, with_data: bool = True) -> core.Argument:
        if not self.quantized:
            return operand(name, self.data, with_data)
        arrays = {
            part: None if array is None else operand("%s.%s" % (name, part), array, with_data)
            for part, array in zip(core.QuantizedTensor.ARRAYS, self[:3])
        }
        return core.QuantizedOperand(name, self.fmt, columnwise=self.columnwise, **arrays)

    def signature(self) -> tuple:
        """What the checks read of it (_checked.signature of each tensor)."""
        return tuple(signature(t) for t in self[:3]) + (self.fmt, self.columnwise)

    def scale_addresses(self) -> core.ScaleAddresses:
        return _address(self.block_scales), _address(self.scale)


def _address(tensor: Optional[torch.Tensor]) -> int:
    return 0 if tensor is None else tensor.data_ptr()


Parts = Tuple[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor], Optional[str], bool]


def plain(tensor: torch.Tensor) -> Parts:
    """The five op arguments of a tensor that is not quantized."""
    return tensor, None, None, None, False


def parts(name: str, value) -> Parts:
    """The five op arguments of a tensor or a core.QuantizedTensor."""
    if isinstance(value, core.QuantizedTensor):
        return value.data, value.block_scales, value.scale, value.format, value.columnwise
    if isinstance(value, torch.Tensor):
        return plain(value)
    raise TypeError(
        "%s: expected a torch.Tensor or a QuantizedTensor (grouped_quantize's), got %s"
        % (name, type(value).__name__)
    )


# The schema of one operand's five arguments, named after it.
OPERAND_SCHEMA = (
    "Tensor {0}, Tensor? {0}_block_scales, Tensor? {0}_scale, str? {0}_format, bool {0}_columnwise"
)

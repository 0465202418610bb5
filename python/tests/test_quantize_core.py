"""core.grouped_quantize's descriptors, run through the CPU reference on numpy
arrays: the shapes it names match the library's gg_block_scale_shape, and
values worked out here come back (the torch op builds the same descriptors)."""

import ctypes

import numpy as np
import pytest

from groupgemm import _capi, core
from groupgemm._capi import BlockScaling, DType, IndexType, Path

pytestmark = pytest.mark.usefixtures("lib")


def _operand(name, array, dtype):
    return core.Operand(
        name=name,
        data=array.ctypes.data,
        dtype=dtype,
        shape=array.shape,
        strides=tuple(s // array.itemsize for s in array.strides),
        device="cpu",
    )


def _run(desc):
    workspace = np.zeros(256, dtype=np.uint8)
    core.launch(desc, workspace.ctypes.data, workspace.nbytes)


@pytest.mark.parametrize("fmt", sorted(core.QUANTIZE_FORMATS))
@pytest.mark.parametrize("columnwise", [False, True])
def test_shapes_match_the_library(fmt, columnwise):
    stacked = fmt.endswith("128x128")
    shape = (3, 200, 272) if stacked else (300, 272)
    shapes = core.quantize_shapes(fmt, shape, 3, columnwise)
    _, scaling, _ = core.quantize_format(fmt)
    if shapes.block_scales is None:  # a format without block scales has none to size
        assert scaling == BlockScaling.NONE, fmt
        return
    out = (ctypes.c_int64 * 2)()
    rows, cols = shapes.data[-2:]
    ragged = int(columnwise and not stacked)
    _capi.call("gg_block_scale_shape", int(scaling), rows, cols, 1, ragged, 3, out)
    assert shapes.block_scales[-2:] == (out[0], out[1])


def test_mxfp8_of_ones_through_the_reference():
    # amax 1: X = floor(log2 1) - 8 = -8, e8m0 code 119; 1 / 2^-8 = 256 is e4m3 0x78.
    x = np.ones((4, 64), dtype=np.float32)
    sizes = np.array([3, 1], dtype=np.int32)
    row = np.zeros((4, 64), dtype=np.uint8)
    row_scales = np.zeros((4, 2), dtype=np.uint8)
    col = np.zeros((64, 4), dtype=np.uint8)
    col_scales = np.zeros(core.quantize_shapes("mxfp8_e4m3", (4, 64), 2, True).block_scales, np.uint8)
    amax = np.zeros(2, dtype=np.float32)
    desc = core.grouped_quantize(
        _operand("x", x, DType.FP32),
        _operand("group_sizes", sizes, IndexType.INT32),
        core.QuantizedOutput("mxfp8_e4m3", row.ctypes.data, row_scales.ctypes.data, 0),
        core.QuantizedOutput("mxfp8_e4m3", col.ctypes.data, col_scales.ctypes.data, 0),
        amax.ctypes.data,
    )
    assert desc.path == Path.REFERENCE
    _run(desc)
    assert (row == 0x78).all() and (row_scales == 119).all()
    assert (col == 0x78).all()
    assert col_scales.shape == (64, 2) and (col_scales == 119).all()  # one block per group
    assert amax.tolist() == [1.0, 1.0]


def test_nvfp4_tensor_scale_through_the_reference():
    # amax 2688 = 6 * 448: tensor scale 1, block scale ue4m3(448 / 1) = 0x7E,
    # and 2688 / 448 = 6, the e2m1 max 0x7 (two per byte: 0x77).
    x = np.full((2, 32), 2688.0, dtype=np.float32)
    data = np.zeros((2, 16), dtype=np.uint8)
    block_scales = np.zeros((2, 2), dtype=np.uint8)
    scale = np.zeros(1, dtype=np.float32)
    desc = core.grouped_quantize(
        _operand("x", x, DType.FP32),
        _operand("group_sizes", np.array([2], dtype=np.int64), IndexType.INT64),
        core.QuantizedOutput("nvfp4_tensor", data.ctypes.data, block_scales.ctypes.data,
                             scale.ctypes.data),
        None,
    )
    _run(desc)
    assert scale.tolist() == [1.0]
    assert (block_scales == 0x7E).all() and (data == 0x77).all()

"""The quantized formats' meaning, written out here for the tests: decoding,
dequantizing a grouped_quantize output from its arrays, and float64 models
of the grouped products.

Nothing here calls the library. Formats are read from their names, the
element and scale encodings are decoded bit by bit, and the block-scale
layout is groupgemm.h's, restated: block scales are packed row major over
the data as stored, one entry per block along the stored last dimension
(128 x 128 tiles for stacked weights, one entry per row for rowwise); where
that dimension is the tokens of a ragged input (a columnwise copy), blocks
restart at every group start, group g's first block following all blocks
of the groups before it, and the scale matrix has room for
cols // block + min(G, cols) blocks (a rowwise block there is the whole
group: G entries). Arrays come in as numpy: fp8 data and ue4m3/e8m0 scales
as their uint8 bits, e2m1 data as its packed bytes, fp32 scales as float32.
"""

import numpy as np

E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def _fp8_table(exponent_bits: int, mantissa_bits: int, finite_only: bool) -> np.ndarray:
    """The value of each of the 256 bit patterns (NaN for NaNs, inf for infs)."""
    bias = (1 << (exponent_bits - 1)) - 1
    values = np.empty(256)
    for bits in range(256):
        sign = -1.0 if bits & 0x80 else 1.0
        exponent = (bits >> mantissa_bits) & ((1 << exponent_bits) - 1)
        mantissa = bits & ((1 << mantissa_bits) - 1)
        top = exponent == (1 << exponent_bits) - 1
        if finite_only and top and mantissa == (1 << mantissa_bits) - 1:
            value = np.nan
        elif not finite_only and top:
            value = np.inf if mantissa == 0 else np.nan
        elif exponent == 0:
            value = mantissa / (1 << mantissa_bits) * 2.0 ** (1 - bias)
        else:
            value = (1 + mantissa / (1 << mantissa_bits)) * 2.0 ** (exponent - bias)
        values[bits] = sign * value
    return values


E4M3_VALUES = _fp8_table(4, 3, finite_only=True)
E5M2_VALUES = _fp8_table(5, 2, finite_only=False)


def spec(fmt: str):
    """(element, block, block scale encoding, fp32 scale extent) of a format
    name: block is an element count, "tile" (128 x 128), "row" or None."""
    if fmt.startswith("mxfp"):
        element = "e2m1" if fmt == "mxfp4" else fmt.split("_")[1]
        return element, 32, "e8m0", None
    if fmt.startswith("nvfp4"):
        return "e2m1", 16, "ue4m3", fmt.split("_")[1]
    _, element, kind = fmt.split("_")
    if kind == "1x128":
        return element, 128, "fp32", None
    if kind == "128x128":
        return element, "tile", "fp32", None
    if kind == "rowwise":
        return element, "row", "fp32", None
    return element, None, None, kind


def elements(fmt: str, data: np.ndarray) -> np.ndarray:
    """The element values of a format's data (e2m1: unpacked, the even element
    from the low nibble)."""
    element = spec(fmt)[0]
    data = data.astype(np.int64)
    if element == "e2m1":
        nibbles = np.stack([data & 15, data >> 4], axis=-1).reshape(*data.shape[:-1], -1)
        magnitude = E2M1_VALUES[nibbles & 7]
        return np.where(nibbles & 8, -magnitude, magnitude)
    return (E4M3_VALUES if element == "e4m3" else E5M2_VALUES)[data]


def _block_scale_values(encoding: str, scales: np.ndarray) -> np.ndarray:
    if encoding == "e8m0":
        return 2.0 ** (scales.astype(np.float64) - 127)
    if encoding == "ue4m3":
        return E4M3_VALUES[scales.astype(np.int64)]
    return scales.astype(np.float64)


def offsets(sizes):
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def group_of_tokens(tokens: int, sizes) -> np.ndarray:
    """The group of each token; -1 past the last group."""
    groups = np.full(tokens, -1)
    starts = offsets(sizes)
    for g, size in enumerate(sizes):
        groups[starts[g] : starts[g] + size] = g
    return groups


def _block_entries(fmt: str, rows: int, cols: int, sizes, ragged_cols: bool):
    """The block-scale entry of each element of a rows x cols matrix as
    stored (-1 for tokens past the last group), and the scale matrix's shape."""
    _, block, _, _ = spec(fmt)
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    if block == "tile":
        width = -(-cols // 128)
        entries = np.broadcast_to((r // 128) * width + c // 128, (rows, cols))
        return entries, (-(-rows // 128), width)
    if not ragged_cols:
        width = 1 if block == "row" else -(-cols // block)
        column = 0 if block == "row" else c // block
        return np.broadcast_to(r * width + column, (rows, cols)), (rows, width)
    groups = len(sizes)
    group = group_of_tokens(cols, sizes)[None, :]
    if block == "row":
        column, width = group, groups
    else:
        first = offsets([-(-size // block) for size in sizes])
        column = first[group] + (c - offsets(sizes)[group]) // block
        width = cols // block + min(groups, cols)
    return np.where(group >= 0, r * width + column, -1), (rows, width)


# Entries past the last group are uninitialized memory: whatever they hold
# (NaN, inf) is decoded, then masked.
@np.errstate(invalid="ignore", over="ignore")
def dequantize(fmt: str, data, block_scales, scale, sizes, columnwise: bool):
    """(values, regions) of one quantized output, in the shape of the input it
    was quantized from (a columnwise copy transposed back). values: element
    x block scale x fp32 scale in float64, NaN where undefined (tokens past
    the last group). regions: for each scaling level of the format (its
    blocks, then its fp32 scale's extent), an array numbering the block or
    extent each element was scaled in, -1 where undefined. sizes None:
    stacked weights [G, N, K], one matrix per group. Asserts the scales'
    shapes."""
    _, block, encoding, extent = spec(fmt)
    stacked = sizes is None
    matrices = elements(fmt, data) if stacked else elements(fmt, data)[None]
    count, rows, cols = matrices.shape
    regions = []
    if block is not None:
        ragged_cols = columnwise and not stacked
        entries, shape = _block_entries(fmt, rows, cols, sizes, ragged_cols)
        lead = (count,) if stacked else ()
        assert block_scales.shape == lead + shape, (fmt, block_scales.shape)
        scales = _block_scale_values(encoding, block_scales).reshape(count, -1)
        blocks = np.stack([np.where(entries >= 0, entries + g * scales.shape[1], -1)
                           for g in range(count)])
        matrices = matrices * np.where(blocks >= 0, scales.reshape(-1)[blocks], np.nan)
        regions.append(blocks)
    # The group of each element: its matrix (stacked), or its token's group.
    if stacked:
        group = np.broadcast_to(np.arange(count)[:, None, None], matrices.shape)
    else:
        tokens = group_of_tokens(cols if columnwise else rows, sizes)
        group = np.broadcast_to(tokens[None, None, :] if columnwise else tokens[None, :, None],
                                matrices.shape)
    if extent is not None:
        groups = count if stacked else len(sizes)
        assert scale.shape == ((1,) if extent == "tensor" else (groups,)), (fmt, scale.shape)
        per_group = np.broadcast_to(scale.astype(np.float64), (groups,))
        matrices = matrices * np.where(group >= 0, per_group[group], np.nan)
        regions.append(np.where(group >= 0, 0 if extent == "tensor" else group, -1))
    matrices = np.where(group >= 0, matrices, np.nan)
    regions = [np.where(group >= 0, r, -1) for r in regions]
    if not stacked:
        matrices, regions = matrices[0], [r[0] for r in regions]
    if columnwise:
        matrices, regions = np.swapaxes(matrices, -1, -2), [np.swapaxes(r, -1, -2) for r in regions]
    return matrices, regions


# Quantization error of one element: rel * |x| + floor * (the amax of its
# block, or of its scale's extent for a format without blocks). The floor
# covers saturation at the top of MX blocks (their scale is a power of two
# below the amax: up to 1/8 of the amax clipped for mxfp8, 1/4 for e2m1) and
# subnormals. Under an nvfp4 tensor or group scale, a block whose amax is
# far below its extent's gets a ue4m3 block scale near or below its
# smallest subnormal: EXTENT_FLOOR * the extent's amax bounds that error.
ERROR_BOUNDS = {"e4m3": (2.0**-4, 2.0**-3), "e5m2": (2.0**-3, 2.0**-3), "e2m1": (0.25, 0.25)}
EXTENT_FLOOR = 2.0**-16


def assert_quantizes(fmt: str, original: np.ndarray, values: np.ndarray, regions):
    """values (dequantize's) are original within the format's error, where defined."""
    defined = regions[0] >= 0 if regions else ~np.isnan(values)
    if not defined.any():
        return
    rel, floor = ERROR_BOUNDS[spec(fmt)[0]]
    bound = rel * np.abs(original[defined])
    for level, region in enumerate(regions):
        amax = np.zeros(region.max() + 1)
        np.maximum.at(amax, region[defined], np.abs(original[defined]))
        bound += (floor if level == 0 else EXTENT_FLOOR) * amax[region[defined]]
    error = np.abs(values[defined] - original[defined])
    worst = np.argmax(error - bound)
    assert np.all(error <= bound), "%s: error %g > bound %g at %g" % (
        fmt, error[worst], bound[worst], original[defined][worst])


# ---- the products, in float64 ------------------------------------------------


def _per_group(alpha, g):
    return float(alpha[g]) if np.ndim(alpha) else float(alpha)


def ragged_m(x, w, sizes, w_layout, alpha=1.0):
    """out [M, N]: alpha_g * x[g rows] @ op(w[g]); NaN past the last group."""
    n = w.shape[1] if w_layout == "nk" else w.shape[2]
    out = np.full((x.shape[0], n), np.nan)
    starts = offsets(sizes)
    for g, size in enumerate(sizes):
        rows = slice(starts[g], starts[g] + size)
        out[rows] = _per_group(alpha, g) * x[rows] @ (w[g].T if w_layout == "nk" else w[g])
    return out


def ragged_k(a, b, sizes, alpha=1.0):
    """out [G, P, Q]: alpha_g * a[g rows]^T @ b[g rows]."""
    starts = offsets(sizes)
    return np.stack([
        _per_group(alpha, g) * a[starts[g] : starts[g] + size].T @ b[starts[g] : starts[g] + size]
        for g, size in enumerate(sizes)
    ])


def on_fp8_cores(lhs_fmt, rhs_fmt, device) -> bool:
    """Whether a product of these formats may sum on fp8 tensor cores: fp8 x
    fp8 on a CUDA device (the sm90 path's fp8 wgmma, on Hopper), and mxfp8
    x mxfp8 e4m3 (ragged-M with K-major weights runs there, each 32-deep
    block promoted times its MX scales)."""
    fp8 = lambda fmt: fmt is not None and fmt.startswith("fp8_")  # noqa: E731
    mx = (lhs_fmt is not None and lhs_fmt.startswith("mxfp8_") and rhs_fmt == "mxfp8_e4m3")
    return str(device).startswith("cuda") and ((fp8(lhs_fmt) and fp8(rhs_fmt)) or mx)


def assert_fp32_accumulation(got, want, magnitude, depth, rounding=2.0**-24, fp8_cores=False):
    """got within the rounding of an fp32 accumulation over `depth` products
    and of the result (`rounding`: its unit roundoff, 2^-24 for fp32, 2^-8
    for bf16); want and magnitude (the same sum of absolute values) in
    float64, NaN where undefined. fp8_cores: summed on fp8 tensor cores,
    whose adder is narrower than fp32: 2^-13 of the magnitude per 32-deep
    wgmma (tests/gpu/output_check.h)."""
    defined = ~np.isnan(want)
    if not defined.any():
        return
    per_magnitude = (2.0 * (-(-depth // 32) + 8) * 2.0**-13) if fp8_cores else depth * 2.0**-23
    bound = per_magnitude * magnitude[defined] + rounding * np.abs(want[defined])
    error = np.abs(np.asarray(got, dtype=np.float64)[defined] - want[defined])
    worst = np.argmax(error - bound)
    assert np.all(error <= bound), "error %g > bound %g" % (error[worst], bound[worst])

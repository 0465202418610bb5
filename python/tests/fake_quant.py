"""A float64 model of quantized operands and of the grouped products, for
the tests: numpy only, written from the formats' definitions (the header's
gg_block_scaling and gg_block_scale_shape, core.quantize_arrays), never
from the code under test.

A quantized array is given as its stored arrays (data, block scales, fp32
scale), its format name and whether it is the columnwise copy (stored
transposed). dequantize() returns each element's value, element x block
scale x fp32 scale, in the argument's own (logical) layout. Blocks run
along the stored data's last dimension (128x128 tiles along both). Along
the tokens of a ragged tensor (the columns of a columnwise copy) blocks
restart at every group start, and a rowwise-format block is the whole
group; tokens past the last group are undefined, left NaN here.
"""

import numpy as np

E2M1_VALUES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
BLOCK_ELEMENTS = {"mxfp8": 32, "mxfp4": 32, "nvfp4": 16, "1x128": 128}


def _family(fmt: str) -> str:
    """mxfp8, mxfp4, nvfp4, 1x128, 128x128, rowwise, or tensor/group (no blocks)."""
    for family in ("mxfp8", "mxfp4", "nvfp4"):
        if fmt.startswith(family):
            return family
    return fmt.rsplit("_", 1)[1]


def decode_data(data) -> np.ndarray:
    """Elements as float64: fp8 as itself, e2m1 two per byte (the even one
    in the low nibble: bit 3 the sign, then two exponent bits and one
    mantissa bit)."""
    data = np.asarray(data)
    if data.dtype != np.uint8:
        return data.astype(np.float64)
    out = np.empty(data.shape[:-1] + (2 * data.shape[-1],))
    for nibbles, half in ((data & 0xF, 0), (data >> 4, 1)):
        out[..., half::2] = np.where(nibbles & 8, -1.0, 1.0) * E2M1_VALUES[nibbles & 7]
    return out


def decode_block_scales(fmt: str, block_scales) -> np.ndarray:
    """e8m0 (MX) is 2^(byte - 127); ue4m3 (nvfp4) an e4m3 byte; the rest fp32."""
    block_scales = np.asarray(block_scales)
    family = _family(fmt)
    if family in ("mxfp8", "mxfp4"):
        return np.exp2(block_scales.astype(np.float64) - 127)
    if family == "nvfp4":
        return block_scales.view(_e4m3()).astype(np.float64)
    return block_scales.astype(np.float64)


def _e4m3():
    import ml_dtypes

    return ml_dtypes.float8_e4m3fn


def group_of_tokens(sizes, tokens: int) -> np.ndarray:
    """Each token's group, -1 past the last group."""
    groups = np.full(tokens, -1)
    groups[: int(np.sum(sizes))] = np.repeat(np.arange(len(sizes)), sizes)
    return groups


def dequantize(data, block_scales, scale, fmt: str, columnwise: bool, sizes=None) -> np.ndarray:
    """The values of a quantized array, float64, in the argument's layout:
    [M, K] for a ragged one (sizes given), [G, rows, cols] for stacked
    weights (sizes None)."""
    with np.errstate(invalid="ignore"):  # undefined entries (past the groups) may hold NaNs
        return _dequantize(data, block_scales, scale, fmt, columnwise, sizes)


def _dequantize(data, block_scales, scale, fmt, columnwise, sizes):
    stored = decode_data(data)
    rows, cols = stored.shape[-2:]
    r = np.arange(rows)[:, None]
    c = np.arange(cols)[None, :]
    ragged = sizes is not None
    family = _family(fmt)
    tokens_along_cols = ragged and columnwise
    groups = group_of_tokens(sizes, cols if tokens_along_cols else rows) if ragged else None
    if family in ("tensor", "group"):
        factor = np.ones(stored.shape)
    else:
        bs = decode_block_scales(fmt, block_scales)
        if family == "128x128":
            factor = bs[..., r // 128, c // 128]
        elif family == "rowwise":
            entry = np.maximum(groups[c], 0) if tokens_along_cols else 0 * c
            factor = bs[..., r, entry]
        elif tokens_along_cols:  # blocks restart at each group start
            block = BLOCK_ELEMENTS[family]
            starts = np.concatenate([[0], np.cumsum(sizes)])
            first_block = np.concatenate([[0], np.cumsum(-(-np.asarray(sizes) // block))])
            g = np.maximum(groups, 0)
            factor = bs[r, first_block[g][c] + (c - starts[g][c]) // block]
        else:
            factor = bs[..., r, c // BLOCK_ELEMENTS[family]]
    values = stored * factor
    if scale is not None:
        scale = np.asarray(scale, np.float64)
        if len(scale) == 1:
            values = values * scale[0]
        elif not ragged:  # a scale per matrix of stacked weights
            values = values * scale[:, None, None]
        else:  # a scale per group of tokens
            per_token = scale[np.maximum(groups, 0)]
            values = values * (per_token[None, :] if tokens_along_cols else per_token[:, None])
    if ragged:  # tokens past the last group are undefined
        past = groups < 0
        if tokens_along_cols:
            values[:, past] = np.nan
        else:
            values[past, :] = np.nan
    return np.swapaxes(values, -1, -2) if columnwise else values


def ragged_m(x, w, sizes, rhs_layout: str, alpha=None, bias=None) -> np.ndarray:
    """out[g rows] = alpha_g * x[g rows] @ op(w[g]) + bias[g]; zeros past the groups."""
    out = np.zeros((x.shape[0], w.shape[2] if rhs_layout == "kn" else w.shape[1]))
    start = 0
    for g, size in enumerate(sizes):
        rows = slice(start, start + size)
        weights = w[g] if rhs_layout == "kn" else w[g].T
        out[rows] = (1.0 if alpha is None else alpha[g]) * (x[rows] @ weights)
        if bias is not None:
            out[rows] += bias[g]
        start += size
    return out


def ragged_k(a, b, sizes, alpha=None) -> np.ndarray:
    """out[g] = alpha_g * a[g rows]^T @ b[g rows]; zeros for an empty group."""
    out = np.zeros((len(sizes), a.shape[1], b.shape[1]))
    start = 0
    for g, size in enumerate(sizes):
        rows = slice(start, start + size)
        out[g] = (1.0 if alpha is None else alpha[g]) * (a[rows].T @ b[rows])
        start += size
    return out

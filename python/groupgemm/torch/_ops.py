"""The torch custom ops (namespace "groupgemm") and their fake kernels.

Four ops, two products each with a functional and an out= form:

  grouped_mm(x, w, group_sizes, w_layout, out_dtype, bias, alpha) -> out [M, N]
  grouped_mm_out(out!, x, w, group_sizes, w_layout, bias, alpha, beta)
  grouped_mm_zero_rest(x, w, group_sizes, w_layout, alpha) -> out [M, N], x's dtype,
      rows past the last group zeros (written by the same launch): an input
      gradient, for autograd
  ragged_k_mm(a, b, group_sizes, out_dtype, alpha) -> out [G, P, Q]
  ragged_k_mm_out(out!, a, b, group_sizes, alpha, beta)

The functional forms allocate their result and carry autograd (_autograd.py);
accumulation (beta != 0) writes into a caller's tensor, so it is the out=
form, which declares its mutation (mutates_args) so torch.compile
functionalizes it correctly. A functional ragged-M result leaves rows past
the last group unwritten (uninitialized), as torch._grouped_mm does.

Each op runs the same host checks in its real and its fake kernel, so a bad
argument is reported while tracing under torch.compile as well as eagerly,
always before a launch. Real kernels launch on the current stream of the
data's device (CUDA) or run the CPU reference (CPU tensors, sizes on the
CPU); nothing reads the group sizes on the host, so the ops are CUDA-graph
capturable.
"""

from typing import Optional

import torch

from .. import core
from . import _workspace
from ._views import operand

OPERAND_DTYPES = (torch.bfloat16, torch.float16)
OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _check_operand_dtypes(
    first_name: str, first: torch.Tensor, second_name: str, second: torch.Tensor
) -> None:
    if first.dtype not in OPERAND_DTYPES:
        raise TypeError(
            "%s: dtype %s is not supported (bfloat16 or float16)" % (first_name, first.dtype)
        )
    if second.dtype != first.dtype:
        raise TypeError(
            "%s: dtype %s differs from %s's %s"
            % (second_name, second.dtype, first_name, first.dtype)
        )


def _check_out_dtype(name: str, dtype: torch.dtype) -> None:
    if dtype not in OUT_DTYPES:
        raise TypeError(
            "%s: %s is not an output type (bfloat16, float16 or float32)" % (name, dtype)
        )


def _ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, beta, launch, zero_rest=False):
    """Checks (and when `launch`, runs) a ragged-M product; zero_rest: the
    launch also writes zeros to the rows past the last group."""
    _check_operand_dtypes("x", x, "w", w)
    _check_out_dtype("out", out.dtype)
    if bias is not None:
        _check_out_dtype("bias", bias.dtype)
    views = dict(
        x=operand("x", x, launch),
        w=operand("w", w, launch),
        out=operand("out", out, launch),
        group_sizes=operand("group_sizes", group_sizes, launch),
        w_layout=w_layout,
        bias=None if bias is None else operand("bias", bias, launch),
        alpha=alpha,
        beta=beta,
    )
    if launch:
        _workspace.run(core.ragged_m(**views, zero_unused_rows=zero_rest), x.device)
    else:
        core.check_ragged_m(**views)


def _ragged_k(out, a, b, group_sizes, alpha, beta, launch):
    """Checks (and when `launch`, runs) a ragged-K product."""
    _check_operand_dtypes("a", a, "b", b)
    _check_out_dtype("out", out.dtype)
    views = dict(
        a=operand("a", a, launch),
        b=operand("b", b, launch),
        out=operand("out", out, launch),
        group_sizes=operand("group_sizes", group_sizes, launch),
        alpha=alpha,
        beta=beta,
    )
    if launch:
        _workspace.run(core.ragged_k(**views), a.device)
    else:
        core.check_ragged_k(**views)


def _result_dtype(operand_dtype, out_dtype):
    if out_dtype is None:
        return operand_dtype
    _check_out_dtype("out_dtype", out_dtype)
    return out_dtype


def _ragged_m_result(x, w, w_layout, out_dtype):
    rows, cols = core.ragged_m_out_shape(operand("x", x, False), operand("w", w, False), w_layout)
    return x.new_empty((rows, cols), dtype=_result_dtype(x.dtype, out_dtype))


def _ragged_k_result(a, b, group_sizes, out_dtype):
    shape = core.ragged_k_out_shape(
        operand("a", a, False), operand("b", b, False), operand("group_sizes", group_sizes, False)
    )
    return a.new_empty(shape, dtype=_result_dtype(a.dtype, out_dtype))


@torch.library.custom_op("groupgemm::grouped_mm", mutates_args=())
def grouped_mm(
    x: torch.Tensor,
    w: torch.Tensor,
    group_sizes: torch.Tensor,
    w_layout: str,
    out_dtype: Optional[torch.dtype],
    bias: Optional[torch.Tensor],
    alpha: float,
) -> torch.Tensor:
    out = _ragged_m_result(x, w, w_layout, out_dtype)
    _ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, 0.0, launch=True)
    return out


@grouped_mm.register_fake
def _(x, w, group_sizes, w_layout, out_dtype, bias, alpha):
    out = _ragged_m_result(x, w, w_layout, out_dtype)
    _ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, 0.0, launch=False)
    return out


@torch.library.custom_op("groupgemm::grouped_mm_zero_rest", mutates_args=())
def grouped_mm_zero_rest(
    x: torch.Tensor, w: torch.Tensor, group_sizes: torch.Tensor, w_layout: str, alpha: float
) -> torch.Tensor:
    out = _ragged_m_result(x, w, w_layout, None)
    _ragged_m(out, x, w, group_sizes, w_layout, None, alpha, 0.0, launch=True, zero_rest=True)
    return out


@grouped_mm_zero_rest.register_fake
def _(x, w, group_sizes, w_layout, alpha):
    out = _ragged_m_result(x, w, w_layout, None)
    _ragged_m(out, x, w, group_sizes, w_layout, None, alpha, 0.0, launch=False)
    return out


@torch.library.custom_op("groupgemm::grouped_mm_out", mutates_args=("out",))
def grouped_mm_out(
    out: torch.Tensor,
    x: torch.Tensor,
    w: torch.Tensor,
    group_sizes: torch.Tensor,
    w_layout: str,
    bias: Optional[torch.Tensor],
    alpha: float,
    beta: float,
) -> None:
    _ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, beta, launch=True)


@grouped_mm_out.register_fake
def _(out, x, w, group_sizes, w_layout, bias, alpha, beta):
    _ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, beta, launch=False)


@torch.library.custom_op("groupgemm::ragged_k_mm", mutates_args=())
def ragged_k_mm(
    a: torch.Tensor,
    b: torch.Tensor,
    group_sizes: torch.Tensor,
    out_dtype: Optional[torch.dtype],
    alpha: float,
) -> torch.Tensor:
    out = _ragged_k_result(a, b, group_sizes, out_dtype)
    _ragged_k(out, a, b, group_sizes, alpha, 0.0, launch=True)
    return out


@ragged_k_mm.register_fake
def _(a, b, group_sizes, out_dtype, alpha):
    out = _ragged_k_result(a, b, group_sizes, out_dtype)
    _ragged_k(out, a, b, group_sizes, alpha, 0.0, launch=False)
    return out


@torch.library.custom_op("groupgemm::ragged_k_mm_out", mutates_args=("out",))
def ragged_k_mm_out(
    out: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    group_sizes: torch.Tensor,
    alpha: float,
    beta: float,
) -> None:
    _ragged_k(out, a, b, group_sizes, alpha, beta, launch=True)


@ragged_k_mm_out.register_fake
def _(out, a, b, group_sizes, alpha, beta):
    _ragged_k(out, a, b, group_sizes, alpha, beta, launch=False)

"""The torch ops (namespace "groupgemm"): schemas, kernels and fake kernels.

Five ops, two products with a functional and an out= form each:

  grouped_mm(x, w, group_sizes, w_layout, out_dtype, bias, alpha) -> out [M, N]
  grouped_mm_out(out!, x, w, group_sizes, w_layout, bias, alpha, beta)
  grouped_mm_zero_rest(x, w, group_sizes, w_layout, alpha) -> out [M, N], x's dtype,
      rows past the last group zeros (written by the same launch): an input
      gradient, for autograd
  ragged_k_mm(a, b, group_sizes, out_dtype, alpha) -> out [G, P, Q]
  ragged_k_mm_out(out!, a, b, group_sizes, alpha, beta)

The functional forms allocate their result and carry autograd (_autograd.py);
accumulation (beta != 0) writes into a caller's tensor, so it is the out=
form, whose schema declares the mutation (Tensor(a!)) so torch.compile
functionalizes it correctly, and whose kernel bumps the output's version
counter so autograd notices the mutation. A functional ragged-M result
leaves rows past the last group unwritten (uninitialized), as
torch._grouped_mm does.

Each op (defined as _registry.py says) runs the same host checks in its real
and its fake kernel, so a bad argument is reported while tracing under
torch.compile as well as eagerly, always before a launch. A real kernel runs
them once per signature (_checked.py), keeps the checked descriptor and
retargets it to each launch's data and scalars (core.retargeted).

Real kernels launch on the current stream of the data's device (CUDA) or run
the CPU reference (CPU tensors, sizes on the CPU); nothing reads the group
sizes on the host, so the ops are CUDA-graph capturable.
"""

from typing import Optional

import torch

from .. import core
from . import _workspace
from ._checked import checked_once, signature
from ._registry import define
from ._views import operand

OPERAND_DTYPES = (torch.bfloat16, torch.float16)
OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _check_operand_dtypes(
    first_name: str, first: torch.Tensor, second_name: str, second: torch.Tensor
) -> None:
    if first.dtype not in OPERAND_DTYPES:
        raise TypeError(
            "%s: dtype %s is not supported (bfloat16 or float16); cast %s and %s to "
            "torch.bfloat16 and pass out_dtype=torch.float32 for a float32 result"
            % (first_name, first.dtype, first_name, second_name)
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


def _address(tensor: Optional[torch.Tensor]) -> int:
    return 0 if tensor is None else tensor.data_ptr()


def _ragged_m_views(out, x, w, group_sizes, w_layout, bias, alpha, beta) -> dict:
    """core's views (without data) of a ragged-M product, after the dtype checks."""
    _check_operand_dtypes("x", x, "w", w)
    _check_out_dtype("out", out.dtype)
    if bias is not None:
        _check_out_dtype("bias", bias.dtype)
    return dict(
        x=operand("x", x, False),
        w=operand("w", w, False),
        out=operand("out", out, False),
        group_sizes=operand("group_sizes", group_sizes, False),
        w_layout=w_layout,
        bias=None if bias is None else operand("bias", bias, False),
        alpha=alpha,
        beta=beta,
    )


def _ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, beta, zero_rest=False) -> None:
    """Launches a ragged-M product into `out`; zero_rest: the launch also
    writes zeros to the rows past the last group."""
    key = (
        "ragged_m",
        signature(out),
        signature(x),
        signature(w),
        signature(group_sizes),
        signature(bias),
        w_layout,
        zero_rest,
    )
    template = checked_once(
        key,
        lambda: core.ragged_m(
            **_ragged_m_views(out, x, w, group_sizes, w_layout, bias, alpha, beta),
            zero_unused_rows=zero_rest,
        ),
    )
    desc = core.retargeted(
        template,
        x.data_ptr(),
        w.data_ptr(),
        out.data_ptr(),
        group_sizes.data_ptr(),
        _address(bias),
        alpha,
        beta,
    )
    _workspace.run(desc, x.device)


def _check_ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, beta) -> None:
    core.check_ragged_m(**_ragged_m_views(out, x, w, group_sizes, w_layout, bias, alpha, beta))


def _ragged_k_views(out, a, b, group_sizes, alpha, beta) -> dict:
    """core's views (without data) of a ragged-K product, after the dtype checks."""
    _check_operand_dtypes("a", a, "b", b)
    _check_out_dtype("out", out.dtype)
    return dict(
        a=operand("a", a, False),
        b=operand("b", b, False),
        out=operand("out", out, False),
        group_sizes=operand("group_sizes", group_sizes, False),
        alpha=alpha,
        beta=beta,
    )


def _ragged_k(out, a, b, group_sizes, alpha, beta) -> None:
    """Launches a ragged-K product into `out`."""
    key = (
        "ragged_k",
        signature(out),
        signature(a),
        signature(b),
        signature(group_sizes),
    )
    template = checked_once(
        key, lambda: core.ragged_k(**_ragged_k_views(out, a, b, group_sizes, alpha, beta))
    )
    desc = core.retargeted(
        template, a.data_ptr(), b.data_ptr(), out.data_ptr(), group_sizes.data_ptr(), 0, alpha, beta
    )
    _workspace.run(desc, a.device)


def _check_ragged_k(out, a, b, group_sizes, alpha, beta) -> None:
    core.check_ragged_k(**_ragged_k_views(out, a, b, group_sizes, alpha, beta))


def _result_dtype(operand_dtype, out_dtype):
    if out_dtype is None:
        return operand_dtype
    _check_out_dtype("out_dtype", out_dtype)
    return out_dtype


def _ragged_m_shape(x, w, w_layout):
    return core.ragged_m_out_shape(operand("x", x, False), operand("w", w, False), w_layout)


def _ragged_k_shape(a, b, group_sizes):
    return core.ragged_k_out_shape(
        operand("a", a, False), operand("b", b, False), operand("group_sizes", group_sizes, False)
    )


def _ragged_m_result(x, w, w_layout, out_dtype):
    """A new ragged-M result; its shape is worked out once per signature."""
    shape = checked_once(
        ("ragged_m_shape", x.shape, w.shape, w_layout), lambda: _ragged_m_shape(x, w, w_layout)
    )
    return x.new_empty(shape, dtype=_result_dtype(x.dtype, out_dtype))


def _ragged_k_result(a, b, group_sizes, out_dtype):
    shape = checked_once(
        ("ragged_k_shape", a.shape, b.shape, group_sizes.shape),
        lambda: _ragged_k_shape(a, b, group_sizes),
    )
    return a.new_empty(shape, dtype=_result_dtype(a.dtype, out_dtype))


# ---- the ops -----------------------------------------------------------------


def _grouped_mm(x, w, group_sizes, w_layout, out_dtype, bias, alpha):
    out = _ragged_m_result(x, w, w_layout, out_dtype)
    _ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, 0.0)
    return out


def _grouped_mm_fake(x, w, group_sizes, w_layout, out_dtype, bias, alpha):
    out = x.new_empty(_ragged_m_shape(x, w, w_layout), dtype=_result_dtype(x.dtype, out_dtype))
    _check_ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, 0.0)
    return out


grouped_mm = define(
    "grouped_mm(Tensor x, Tensor w, Tensor group_sizes, str w_layout, ScalarType? out_dtype, "
    "Tensor? bias, float alpha) -> Tensor",
    _grouped_mm,
    _grouped_mm_fake,
)


def _grouped_mm_zero_rest(x, w, group_sizes, w_layout, alpha):
    out = _ragged_m_result(x, w, w_layout, None)
    _ragged_m(out, x, w, group_sizes, w_layout, None, alpha, 0.0, zero_rest=True)
    return out


def _grouped_mm_zero_rest_fake(x, w, group_sizes, w_layout, alpha):
    return _grouped_mm_fake(x, w, group_sizes, w_layout, None, None, alpha)


grouped_mm_zero_rest = define(
    "grouped_mm_zero_rest(Tensor x, Tensor w, Tensor group_sizes, str w_layout, float alpha) "
    "-> Tensor",
    _grouped_mm_zero_rest,
    _grouped_mm_zero_rest_fake,
)


def _grouped_mm_out(out, x, w, group_sizes, w_layout, bias, alpha, beta):
    _ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, beta)
    torch.autograd.graph.increment_version(out)


grouped_mm_out = define(
    "grouped_mm_out(Tensor(a!) out, Tensor x, Tensor w, Tensor group_sizes, str w_layout, "
    "Tensor? bias, float alpha, float beta) -> ()",
    _grouped_mm_out,
    _check_ragged_m,
)


def _ragged_k_mm(a, b, group_sizes, out_dtype, alpha):
    out = _ragged_k_result(a, b, group_sizes, out_dtype)
    _ragged_k(out, a, b, group_sizes, alpha, 0.0)
    return out


def _ragged_k_mm_fake(a, b, group_sizes, out_dtype, alpha):
    shape = _ragged_k_shape(a, b, group_sizes)
    out = a.new_empty(shape, dtype=_result_dtype(a.dtype, out_dtype))
    _check_ragged_k(out, a, b, group_sizes, alpha, 0.0)
    return out


ragged_k_mm = define(
    "ragged_k_mm(Tensor a, Tensor b, Tensor group_sizes, ScalarType? out_dtype, float alpha) "
    "-> Tensor",
    _ragged_k_mm,
    _ragged_k_mm_fake,
)


def _ragged_k_mm_out(out, a, b, group_sizes, alpha, beta):
    _ragged_k(out, a, b, group_sizes, alpha, beta)
    torch.autograd.graph.increment_version(out)


ragged_k_mm_out = define(
    "ragged_k_mm_out(Tensor(a!) out, Tensor a, Tensor b, Tensor group_sizes, float alpha, "
    "float beta) -> ()",
    _ragged_k_mm_out,
    _check_ragged_k,
)

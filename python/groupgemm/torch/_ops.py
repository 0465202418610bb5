"""The torch ops (namespace "groupgemm"): schemas, kernels and fake kernels.

Five ops, two products with a functional and an out= form each:

  grouped_mm(x*, w*, group_sizes, w_layout, out_dtype, bias, alpha, alpha_per_group)
      -> out [M, N]
  grouped_mm_out(out!, x*, w*, group_sizes, w_layout, bias, alpha, alpha_per_group, beta)
  grouped_mm_zero_rest(x*, w*, group_sizes, w_layout, out_dtype, alpha, alpha_per_group)
      -> out [M, N], rows past the last group zeros (written by the same
      launch): an input gradient
  ragged_k_mm(a*, b*, group_sizes, out_dtype, alpha, alpha_per_group) -> out [G, P, Q]
  ragged_k_mm_out(out!, a*, b*, group_sizes, alpha, alpha_per_group, beta)

Each operand marked * is five arguments (_views.OPERAND_SCHEMA): the data,
and for a quantized operand (a core.QuantizedTensor's parts) its block
scales, fp32 scale, format and whether it is the columnwise copy. alpha is a
host float, or with alpha_per_group an fp32 tensor [G] beside the data. An
output's dtype defaults to a plain first operand's, float32 for a quantized
one. Quantized formats run on the CPU (the library's reference); on a GPU
the library answers NOT_SUPPORTED, raised as NotSupported.

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
from ._views import OPERAND_SCHEMA, Arg, operand

OPERAND_DTYPES = (torch.bfloat16, torch.float16)
OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _check_operand_dtypes(first_name: str, first: Arg, second_name: str, second: Arg) -> None:
    """Plain operands are bf16 or fp16, and of one dtype when both are plain;
    which quantized formats go together is the library's to say."""
    plain = [(name, arg.data) for name, arg in ((first_name, first), (second_name, second))
             if not arg.quantized]
    if plain and plain[0][1].dtype not in OPERAND_DTYPES:
        raise TypeError(
            "%s: dtype %s is not supported (bfloat16 or float16); cast %s and %s to "
            "torch.bfloat16 and pass out_dtype=torch.float32 for a float32 result"
            % (plain[0][0], plain[0][1].dtype, first_name, second_name)
        )
    if len(plain) == 2 and second.data.dtype != first.data.dtype:
        raise TypeError(
            "%s: dtype %s differs from %s's %s"
            % (second_name, second.data.dtype, first_name, first.data.dtype)
        )


def _check_out_dtype(name: str, dtype: torch.dtype) -> None:
    if dtype not in OUT_DTYPES:
        raise TypeError(
            "%s: %s is not an output type (bfloat16, float16 or float32)" % (name, dtype)
        )


def _address(tensor: Optional[torch.Tensor]) -> int:
    return 0 if tensor is None else tensor.data_ptr()


def _scalar(name: str, value: float, per_group: Optional[torch.Tensor]) -> core.Scalar:
    return value if per_group is None else operand(name, per_group, False)


def _ragged_m_views(out, x, w, group_sizes, w_layout, bias, alpha, alpha_per_group, beta) -> dict:
    """core's views (without data) of a ragged-M product, after the dtype checks."""
    _check_operand_dtypes("x", x, "w", w)
    _check_out_dtype("out", out.dtype)
    if bias is not None:
        _check_out_dtype("bias", bias.dtype)
    return dict(
        x=x.view("x", False),
        w=w.view("w", False),
        out=operand("out", out, False),
        group_sizes=operand("group_sizes", group_sizes, False),
        w_layout=w_layout,
        bias=None if bias is None else operand("bias", bias, False),
        alpha=_scalar("alpha", alpha, alpha_per_group),
        beta=beta,
    )


def _ragged_m(
    out, x, w, group_sizes, w_layout, bias, alpha, alpha_per_group, beta, zero_rest=False
) -> None:
    """Launches a ragged-M product into `out`; zero_rest: the launch also
    writes zeros to the rows past the last group."""
    key = (
        "ragged_m",
        signature(out),
        x.signature(),
        w.signature(),
        signature(group_sizes),
        signature(bias),
        signature(alpha_per_group),
        w_layout,
        zero_rest,
    )
    template = checked_once(
        key,
        lambda: core.ragged_m(
            **_ragged_m_views(out, x, w, group_sizes, w_layout, bias, alpha, alpha_per_group, beta),
            zero_unused_rows=zero_rest,
        ),
    )
    desc = core.retargeted(
        template,
        x.data.data_ptr(),
        w.data.data_ptr(),
        out.data_ptr(),
        group_sizes.data_ptr(),
        _address(bias),
        alpha,
        beta,
        lhs_scales=x.scale_addresses(),
        rhs_scales=w.scale_addresses(),
        alpha_per_group=_address(alpha_per_group),
    )
    _workspace.run(desc, x.data.device)


def _check_ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, alpha_per_group, beta) -> None:
    core.check_ragged_m(
        **_ragged_m_views(out, x, w, group_sizes, w_layout, bias, alpha, alpha_per_group, beta)
    )


def _ragged_k_views(out, a, b, group_sizes, alpha, alpha_per_group, beta) -> dict:
    """core's views (without data) of a ragged-K product, after the dtype checks."""
    _check_operand_dtypes("a", a, "b", b)
    _check_out_dtype("out", out.dtype)
    return dict(
        a=a.view("a", False),
        b=b.view("b", False),
        out=operand("out", out, False),
        group_sizes=operand("group_sizes", group_sizes, False),
        alpha=_scalar("alpha", alpha, alpha_per_group),
        beta=beta,
    )


def _ragged_k(out, a, b, group_sizes, alpha, alpha_per_group, beta) -> None:
    """Launches a ragged-K product into `out`."""
    key = (
        "ragged_k",
        signature(out),
        a.signature(),
        b.signature(),
        signature(group_sizes),
        signature(alpha_per_group),
    )
    template = checked_once(
        key,
        lambda: core.ragged_k(
            **_ragged_k_views(out, a, b, group_sizes, alpha, alpha_per_group, beta)
        ),
    )
    desc = core.retargeted(
        template,
        a.data.data_ptr(),
        b.data.data_ptr(),
        out.data_ptr(),
        group_sizes.data_ptr(),
        0,
        alpha,
        beta,
        lhs_scales=a.scale_addresses(),
        rhs_scales=b.scale_addresses(),
        alpha_per_group=_address(alpha_per_group),
    )
    _workspace.run(desc, a.data.device)


def _check_ragged_k(out, a, b, group_sizes, alpha, alpha_per_group, beta) -> None:
    core.check_ragged_k(**_ragged_k_views(out, a, b, group_sizes, alpha, alpha_per_group, beta))


def _result_dtype(first: Arg, out_dtype):
    if out_dtype is None:
        return torch.float32 if first.quantized else first.data.dtype
    _check_out_dtype("out_dtype", out_dtype)
    return out_dtype


def _ragged_m_shape(x: Arg, w: Arg, w_layout):
    return core.ragged_m_out_shape(x.view("x", False), w.view("w", False), w_layout)


def _ragged_k_shape(a: Arg, b: Arg, group_sizes):
    return core.ragged_k_out_shape(
        a.view("a", False), b.view("b", False), operand("group_sizes", group_sizes, False)
    )


def _shape_key(arg: Arg) -> tuple:
    return arg.data.dtype, arg.data.shape, arg.fmt, arg.columnwise


def _ragged_m_result(x: Arg, w: Arg, w_layout, out_dtype):
    """A new ragged-M result; its shape is worked out once per signature."""
    shape = checked_once(
        ("ragged_m_shape", _shape_key(x), _shape_key(w), w_layout),
        lambda: _ragged_m_shape(x, w, w_layout),
    )
    return x.data.new_empty(shape, dtype=_result_dtype(x, out_dtype))


def _ragged_k_result(a: Arg, b: Arg, group_sizes, out_dtype):
    shape = checked_once(
        ("ragged_k_shape", _shape_key(a), _shape_key(b), group_sizes.shape),
        lambda: _ragged_k_shape(a, b, group_sizes),
    )
    return a.data.new_empty(shape, dtype=_result_dtype(a, out_dtype))


def _two_operands(args):
    """The two operands (five arguments each) at the front of `args`, and the rest."""
    return Arg(*args[0:5]), Arg(*args[5:10]), args[10:]


def _schema(name: str, first: str, second: str, rest: str, result: str, out: bool = False) -> str:
    operands = ", ".join(OPERAND_SCHEMA.format(o) for o in (first, second))
    leading = "Tensor(a!) out, " if out else ""
    return "%s(%s%s, %s) -> %s" % (name, leading, operands, rest, result)


# ---- the ops -----------------------------------------------------------------


def _grouped_mm(*args):
    x, w, (group_sizes, w_layout, out_dtype, bias, alpha, alpha_per_group) = _two_operands(args)
    out = _ragged_m_result(x, w, w_layout, out_dtype)
    _ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, alpha_per_group, 0.0)
    return out


def _grouped_mm_fake(*args):
    x, w, (group_sizes, w_layout, out_dtype, bias, alpha, alpha_per_group) = _two_operands(args)
    out = x.data.new_empty(_ragged_m_shape(x, w, w_layout), dtype=_result_dtype(x, out_dtype))
    _check_ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, alpha_per_group, 0.0)
    return out


grouped_mm = define(
    _schema(
        "grouped_mm",
        "x",
        "w",
        "Tensor group_sizes, str w_layout, ScalarType? out_dtype, Tensor? bias, float alpha, "
        "Tensor? alpha_per_group",
        "Tensor",
    ),
    _grouped_mm,
    _grouped_mm_fake,
)


def _grouped_mm_zero_rest(*args):
    x, w, (group_sizes, w_layout, out_dtype, alpha, alpha_per_group) = _two_operands(args)
    out = _ragged_m_result(x, w, w_layout, out_dtype)
    _ragged_m(out, x, w, group_sizes, w_layout, None, alpha, alpha_per_group, 0.0, zero_rest=True)
    return out


def _grouped_mm_zero_rest_fake(*args):
    x, w, (group_sizes, w_layout, out_dtype, alpha, alpha_per_group) = _two_operands(args)
    return _grouped_mm_fake(*x, *w, group_sizes, w_layout, out_dtype, None, alpha, alpha_per_group)


grouped_mm_zero_rest = define(
    _schema(
        "grouped_mm_zero_rest",
        "x",
        "w",
        "Tensor group_sizes, str w_layout, ScalarType? out_dtype, float alpha, "
        "Tensor? alpha_per_group",
        "Tensor",
    ),
    _grouped_mm_zero_rest,
    _grouped_mm_zero_rest_fake,
)


def _grouped_mm_out(out, *args):
    x, w, (group_sizes, w_layout, bias, alpha, alpha_per_group, beta) = _two_operands(args)
    _ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, alpha_per_group, beta)
    torch.autograd.graph.increment_version(out)


def _grouped_mm_out_fake(out, *args):
    x, w, (group_sizes, w_layout, bias, alpha, alpha_per_group, beta) = _two_operands(args)
    _check_ragged_m(out, x, w, group_sizes, w_layout, bias, alpha, alpha_per_group, beta)


grouped_mm_out = define(
    _schema(
        "grouped_mm_out",
        "x",
        "w",
        "Tensor group_sizes, str w_layout, Tensor? bias, float alpha, Tensor? alpha_per_group, "
        "float beta",
        "()",
        out=True,
    ),
    _grouped_mm_out,
    _grouped_mm_out_fake,
)


def _ragged_k_mm(*args):
    a, b, (group_sizes, out_dtype, alpha, alpha_per_group) = _two_operands(args)
    out = _ragged_k_result(a, b, group_sizes, out_dtype)
    _ragged_k(out, a, b, group_sizes, alpha, alpha_per_group, 0.0)
    return out


def _ragged_k_mm_fake(*args):
    a, b, (group_sizes, out_dtype, alpha, alpha_per_group) = _two_operands(args)
    shape = _ragged_k_shape(a, b, group_sizes)
    out = a.data.new_empty(shape, dtype=_result_dtype(a, out_dtype))
    _check_ragged_k(out, a, b, group_sizes, alpha, alpha_per_group, 0.0)
    return out


ragged_k_mm = define(
    _schema(
        "ragged_k_mm",
        "a",
        "b",
        "Tensor group_sizes, ScalarType? out_dtype, float alpha, Tensor? alpha_per_group",
        "Tensor",
    ),
    _ragged_k_mm,
    _ragged_k_mm_fake,
)


def _ragged_k_mm_out(out, *args):
    a, b, (group_sizes, alpha, alpha_per_group, beta) = _two_operands(args)
    _ragged_k(out, a, b, group_sizes, alpha, alpha_per_group, beta)
    torch.autograd.graph.increment_version(out)


def _ragged_k_mm_out_fake(out, *args):
    a, b, (group_sizes, alpha, alpha_per_group, beta) = _two_operands(args)
    _check_ragged_k(out, a, b, group_sizes, alpha, alpha_per_group, beta)


ragged_k_mm_out = define(
    _schema(
        "ragged_k_mm_out",
        "a",
        "b",
        "Tensor group_sizes, float alpha, Tensor? alpha_per_group, float beta",
        "()",
        out=True,
    ),
    _ragged_k_mm_out,
    _ragged_k_mm_out_fake,
)

"""The groupgemm op namespace, how an op is defined in it, and how it is called.

Ops are defined with torch.library.Library (a schema, a kernel for real
tensors, a fake kernel for tracing) rather than the torch.library.custom_op
decorator, whose per-call wrappers (aliasing checks, a frame that disables
dynamo, a redispatch through Python) cost more host time than a launch. What
the decorator would add that matters here, a version-counter bump for a
mutated argument, each out= kernel does itself.

Going through torch's dispatcher from Python still costs several times a
launch's host time: a hop into C++ and back for each dispatch key with a
Python kernel, autograd's among them. So an eager call on plain tensors
(not traced or compiled, no tensor subclass such as a fake or functional
tensor, no meta tensor, no torch function or dispatch mode, no functorch
transform, the profiler off so that the op still appears in profiles)
skips it: it runs the kernel, or, when autograd must record the call, a
torch.autograd.Function made of the same kernel and the same formulas as
the registered autograd. Every other call goes through the dispatcher as
registered.
"""

from typing import Callable, Dict

import torch

_library = torch.library.Library("groupgemm", "DEF")
_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)
_kernels: Dict[str, Callable] = {}
_eager_autograd: Dict[str, Callable] = {}  # op name -> its autograd.Function's apply


def _dispatcher_needed(args) -> bool:
    """Whether torch's dispatcher would do more for this call than autograd and the kernel."""
    if (
        torch.compiler.is_compiling()
        or torch._C._is_torch_function_mode_enabled()
        or torch._C._len_torch_dispatch_stack() > 0
        or torch._C._are_functorch_transforms_active()
        or torch._C._autograd._profiler_enabled()
    ):
        return True
    return any(
        isinstance(arg, torch.Tensor) and (type(arg) not in _PLAIN_TYPES or arg.is_meta)
        for arg in args
    )


def _records_grad(args) -> bool:
    return torch.is_grad_enabled() and any(
        isinstance(arg, torch.Tensor) and arg.requires_grad for arg in args
    )


def define(schema: str, kernel: Callable, fake: Callable) -> Callable:
    """Defines groupgemm::<name> from its schema, with `kernel` for real
    tensors (CPU or CUDA) and `fake` for tracing (shapes only); returns the
    function that calls it (positional arguments, as in the schema)."""
    name = schema[: schema.index("(")]
    _library.define(schema)
    _library.impl(name, kernel, "CompositeExplicitAutograd")
    torch.library.register_fake("groupgemm::" + name, fake, lib=_library)
    _kernels[name] = kernel
    overload = getattr(torch.ops.groupgemm, name).default

    def call(*args):
        if _dispatcher_needed(args):
            return overload(*args)
        if _records_grad(args):
            # Without a formula of its own, the dispatcher says what autograd does.
            return _eager_autograd.get(name, overload)(*args)
        return kernel(*args)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = "Calls torch.ops.groupgemm.%s (see the module's docstring)." % name
    return call


def register_autograd(name: str, backward: Callable, setup_context: Callable) -> None:
    """Registers groupgemm::<name>'s autograd formulas, with the dispatcher
    and for eager calls, as torch.library.register_autograd takes them."""
    torch.library.register_autograd(
        "groupgemm::" + name, backward, setup_context=setup_context, lib=_library
    )
    kernel = _kernels[name]

    def forward(ctx, *args):
        # The setup_context of the formulas runs here, not as the Function's
        # own setup_context, whose apply() binds arguments by signature (slow).
        output = kernel(*args)
        setup_context(ctx, args, output)
        return output

    function = type(
        name,
        (torch.autograd.Function,),
        dict(forward=staticmethod(forward), backward=staticmethod(backward)),
    )
    _eager_autograd[name] = function.apply

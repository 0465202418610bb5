"""What an op's host checks produced, kept by signature for its later launches.

The checks of the ops read each tensor's dtype, shape, strides and device and
the non-tensor arguments, never an address or a scalar's value. So a real
kernel runs them once per such signature, keeps what they produced (a
descriptor built without data, a result's shape) and retargets it to each
launch's data: an MoE layer launches the same shapes every step. A fake
kernel's tensors may have symbolic shapes: it runs the checks directly, never
through this cache.
"""

from typing import Callable, Dict, Optional

import torch

# Bounded: a caller whose shapes never repeat pays the checks on every
# launch, as without the cache, and no more.
_LIMIT = 1024
_checked: Dict[tuple, object] = {}


def signature(tensor: Optional[torch.Tensor]):
    """What the checks read of a tensor."""
    return None if tensor is None else (tensor.dtype, tensor.shape, tensor.stride(), tensor.device)


def checked_once(key: tuple, check: Callable[[], object]) -> object:
    """check()'s result for `key`, from the first launch with that signature."""
    found = _checked.get(key)
    if found is None:
        if len(_checked) >= _LIMIT:
            _checked.clear()
        found = _checked[key] = check()
    return found

"""The library's messages in the caller's vocabulary.

gg_last_error() names descriptor fields ("desc->lhs.dtype fp32: ..."),
while a front end's caller passed x, w, out. The descriptor builders in core
record on each descriptor the argument behind each field they fill
(`record`), and a failing call on it reports the library's message with
those fields replaced by the arguments' names (`translated`). An operand
that the C view reads transposed (a transposed array passed as the other
layout, with no copy) is named with ^T, since the shape and stride indices
of the message are those of the transpose.
"""

import re
from typing import Dict, Optional

# A field and the sub-field of its C struct that means the argument itself.
_FIELD = re.compile(r"desc->(\w+)(?:\.(?:sizes|value|per_group)\b)?")


def record(desc, **names: Optional[str]) -> None:
    """Keeps on `desc` the argument name of each of its fields (None: not filled)."""
    desc.argument_names = {field: name for field, name in names.items() if name is not None}


def carry_over(source, target) -> None:
    """Gives a copy of a descriptor (ctypes copies only the C fields) its source's names."""
    target.argument_names = getattr(source, "argument_names", {})


def translated(message: str, desc) -> str:
    """`message` with each field of `desc` that has a recorded name replaced by that name."""
    names: Dict[str, str] = getattr(desc, "argument_names", {})
    return _FIELD.sub(lambda field: names.get(field.group(1), field.group(0)), message)

"""The library's messages in the Python arguments' names (groupgemm._c_names)."""

import types

from groupgemm import _c_names


def described(**names):
    desc = types.SimpleNamespace()
    _c_names.record(desc, **names)
    return desc


def test_fields_become_the_arguments_behind_them():
    desc = described(lhs="x", rhs="w^T", out="out", group_sizes="group_sizes", alpha="alpha")
    cases = {
        "desc->lhs.dtype fp32: fp32 operands are not supported": "x.dtype fp32: fp32 operands "
        "are not supported",
        "desc->lhs (bf16) x desc->rhs (fp16): operands of different formats":
            "x (bf16) x w^T (fp16): operands of different formats",
        "M = desc->lhs.shape[0]": "M = x.shape[0]",
        "desc->group_sizes.sizes is NULL": "group_sizes is NULL",
        "desc->alpha.value must be finite (got inf)": "alpha must be finite (got inf)",
        "desc->alpha.per_group (0x1) must be 4-byte aligned": "alpha (0x1) must be 4-byte aligned",
    }
    for message, expected in cases.items():
        assert _c_names.translated(message, desc) == expected


def test_fields_without_a_recorded_argument_stay():
    desc = described(lhs="x", bias=None)
    message = "desc->bias.data must be NULL for ragged-K; desc->num_groups must be > 0"
    assert _c_names.translated(message, desc) == message
    assert _c_names.translated(message, object()) == message  # a descriptor with no names


def test_a_copy_carries_the_names_over():
    source, target = described(out="grad_w"), types.SimpleNamespace()
    _c_names.carry_over(source, target)
    assert _c_names.translated("desc->out.dtype e4m3", target) == "grad_w.dtype e4m3"

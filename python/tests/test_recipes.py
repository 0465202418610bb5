"""groupgemm.recipes: the named recipes' formats, and the errors of get()
and Recipe."""

import pytest

from groupgemm import core, recipes


def test_named_recipes_quantize_each_operand_along_its_contraction():
    by_name = recipes.RECIPES
    assert list(by_name) == [
        "fp8_tensor", "fp8_group", "fp8_rowwise", "fp8_blockwise", "mxfp8", "nvfp4"
    ]
    # fp8: e4m3 forward, e5m2 gradients (TransformerEngine's HYBRID).
    for name in ("fp8_tensor", "fp8_group", "fp8_rowwise", "fp8_blockwise"):
        recipe = by_name[name]
        for fmt in (recipe.fprop_x, recipe.fprop_w, recipe.dgrad_w, recipe.wgrad_x):
            assert fmt.startswith("fp8_e4m3_"), (name, fmt)
        for fmt in (recipe.dgrad_dy, recipe.wgrad_dy):
            assert fmt.startswith("fp8_e5m2_"), (name, fmt)
    blockwise = by_name["fp8_blockwise"]
    assert (blockwise.fprop_x, blockwise.fprop_w, blockwise.dgrad_w) == (
        "fp8_e4m3_1x128", "fp8_e4m3_128x128", "fp8_e4m3_128x128")
    assert (blockwise.wgrad_x, blockwise.wgrad_dy) == ("fp8_e4m3_1x128", "fp8_e5m2_1x128")
    assert set(vars(by_name["mxfp8"]).values()) == {"mxfp8", "mxfp8_e4m3"}
    assert set(vars(by_name["nvfp4"]).values()) == {"nvfp4", "nvfp4_tensor"}


def test_get():
    recipe = recipes.get("mxfp8")
    assert recipes.get(recipe) is recipe
    with pytest.raises(ValueError, match="recipe: unknown recipe 'fp8'; one of fp8_tensor, "):
        recipes.get("fp8")
    with pytest.raises(TypeError, match="recipe: expected a recipe name or a"):
        recipes.get(3)


def test_recipe_checks_its_formats():
    formats = dict(vars(recipes.get("fp8_blockwise")))
    with pytest.raises(ValueError, match="wgrad_dy: unknown quantize format 'fp8'"):
        recipes.Recipe(**dict(formats, wgrad_dy="fp8"))
    with pytest.raises(ValueError, match="fprop_x: fp8_e4m3_128x128 is for stacked weights"):
        recipes.Recipe(**dict(formats, fprop_x="fp8_e4m3_128x128"))
    mixed = recipes.Recipe(**dict(formats, name="mine", wgrad_x="mxfp8_e4m3"))
    assert mixed.wgrad_x in core.QUANTIZE_FORMATS

"""The benchmark's MoE problems: preset shapes and routing rules (docs/DESIGN.md,
"Performance method")."""

import pytest

from groupgemm import presets


def test_presets_are_the_design_models():
    shapes = {p.name: (p.hidden, p.ffn, p.experts, p.top_k) for p in presets.PRESETS}
    assert shapes == {
        "deepseek-v3": (7168, 2048, 256, 8),
        "mixtral-8x7b": (4096, 14336, 8, 2),
        "qwen3-30b-a3b": (2048, 768, 128, 8),
        "qwen3-235b-a22b": (4096, 1536, 128, 8),
        "gpt-oss-120b": (2880, 2880, 128, 4),
        "llama4-maverick": (5120, 8192, 128, 1),
    }
    mixtral = presets.find("mixtral-8x7b")
    assert (mixtral.n, mixtral.k, mixtral.rows(2048)) == (2 * 14336, 4096, 4096)
    with pytest.raises(ValueError, match="unknown preset"):
        presets.find("gpt-5")


@pytest.mark.parametrize("rows, groups", [(16384, 128), (1000, 7), (3, 8), (0, 4)])
def test_uniform_is_balanced(rows, groups):
    sizes = presets.route("uniform", rows, groups)
    assert len(sizes) == groups and sum(sizes) == rows
    assert max(sizes) - min(sizes) <= 1
    assert sizes == sorted(sizes, reverse=True)  # the remainder goes to the first groups


def test_skewed_follows_zipf_with_a_tenth_empty():
    rows, groups = 1_000_000, 10
    sizes = presets.route("skewed", rows, groups, seed=3)
    assert sum(sizes) == rows
    assert sizes.count(0) == 1  # round(0.1 * 10)
    weights = [1 / (rank + 1) ** 1.2 for rank in range(groups - 1)]
    expected = [rows * w / sum(weights) for w in weights]
    served = sorted((s for s in sizes if s), reverse=True)
    assert all(abs(s - e) <= 1 for s, e in zip(served, expected))


def test_skewed_is_seeded():
    first = presets.route("skewed", 16384, 128, seed=1)
    assert first == presets.route("skewed", 16384, 128, seed=1)
    assert first != presets.route("skewed", 16384, 128, seed=2)
    assert sum(first) == 16384 and first.count(0) >= 13


def test_unknown_routing():
    with pytest.raises(ValueError, match="unknown routing"):
        presets.route("hot", 10, 2)


def test_recipe_bench_takes_each_routing():
    from groupgemm import bench_recipes

    for routing in presets.ROUTINGS:
        assert bench_recipes.parse_args(["--routing", routing]).routing == routing
    assert bench_recipes.parse_args([]).routing == "uniform"
    with pytest.raises(SystemExit):
        bench_recipes.parse_args(["--routing", "random"])

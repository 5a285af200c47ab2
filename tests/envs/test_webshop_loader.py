"""The loader for WebShop's original files, on a hand-written sample in their schema (tests/envs/webshop_sample)."""

from pathlib import Path

import pytest

import agentbench_af
from agentbench_af.api.checker import expert_episode
from agentbench_af.environments.webshop.catalogue import find_file, load_catalogue

SAMPLE = str(Path(__file__).parent / "webshop_sample")


def test_products_are_normalised_as_webshop_does():
    c = load_catalogue(SAMPLE, "_sample", "synthetic")
    assert [p.asin for p in c.products] == [
        "B07TEST001",
        "B07TEST002",
        "B07TEST003",
        "B07TEST004",
    ]  # 'nan', dup out
    shampoo, shirt, coffee, buds = c.products
    assert shampoo.query == "shampoo"  # lower case, trimmed
    assert shampoo.options == {"size": ("12 fl oz", "24 fl oz | pack of 2")}  # lower case, '/' -> ' | '
    assert shampoo.attributes == ("tea tree", "sulfate free", "dry hair")
    assert shampoo.rating == "4.5" and [r.score for r in shampoo.reviews] == [5.0, 4.0]
    assert shirt.pricing == (10.99, 15.99) and shirt.price_tag == "$10.99 to $15.99"
    assert 10.99 <= shirt.price <= 15.99 and shirt.bullet_points == ("Machine wash cold",)
    assert coffee.pricing == (100.0,) and coffee.options == {} and coffee.bullet_points == ()
    assert buds.attributes == ("DUMMY_ATTR",) and buds.reviews[0].body == "Pairs quickly."


def test_synthetic_goals_one_per_option_combination_or_the_named_one():
    c = load_catalogue(SAMPLE, "_sample", "synthetic")
    by_asin = sorted((g.asin, g.options) for g in c.goals)
    assert by_asin == [
        ("B07TEST001", (("size", "12 fl oz"),)),
        ("B07TEST001", (("size", "24 fl oz | pack of 2"),)),
        ("B07TEST002", (("color", "navy blue"), ("size", "large"))),
    ]
    shirt_goal = next(g for g in c.goals if g.asin == "B07TEST002")
    assert shirt_goal.instruction_text.startswith(
        "i want a crew neck t-shirt that is machine washable with color: navy blue, and size: large, "
        "and price lower than "
    )
    assert shirt_goal.price_upper in (30.0, 40.0, 50.0) and shirt_goal.attributes == ("crew neck",)


def test_human_goals_and_catalogue_names():
    h = load_catalogue(SAMPLE, "", "human")  # the only items_shuffle*.json is found without a subset
    assert sorted(g.asin for g in h.goals) == [
        "B07TEST003",
        "B07TEST004",
    ]  # the empty-attribute one is skipped
    buds = next(g for g in h.goals if g.asin == "B07TEST004")
    assert buds.options == ((None, "white"),)
    coffee = next(g for g in h.goals if g.asin == "B07TEST003")
    assert coffee.instruction_text.startswith("i am looking for organic dark roast coffee beans, and price")
    s = load_catalogue(SAMPLE, "_sample", "synthetic")
    assert h.name.startswith("webshop-items_shuffle_sample-human@")
    assert s.name.startswith("webshop-items_shuffle_sample-synthetic@") and s.name != h.name


def test_missing_files_and_folders_give_clear_errors(tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_catalogue(str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match="items_shuffle"):
        find_file(tmp_path, "items_shuffle")
    monkeypatch.delenv("WEBSHOP_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="WEBSHOP_DATA"):
        load_catalogue("env")
    with pytest.raises(ValueError, match="goals"):
        agentbench_af.make("WebShop-v0", goals="robot")


def test_env_on_the_sample_via_data_dir_and_env_var(monkeypatch):
    e = agentbench_af.make(
        "WebShop-v0", data_dir=SAMPLE, subset="_sample", eval_seeds=(0, 1), train_seeds=(1, 3)
    )
    assert e.catalogue_name.startswith("webshop-items_shuffle_sample-synthetic@")
    for seed in range(3):
        success, total, turns, _ = expert_episode(e, seed)
        assert success and total == 1.0 and turns <= e.variant.max_turns
    monkeypatch.setenv("WEBSHOP_DATA", SAMPLE)
    h = agentbench_af.make("WebShop-v0", data_dir="env", goals="human", eval_seeds=(0, 1), train_seeds=(1, 2))
    for seed in range(2):  # a value-only goal option ('white') and a goal without options
        assert expert_episode(h, seed)[0]
    with pytest.raises(ValueError, match="seed ranges"):
        agentbench_af.make("WebShop-v0", data_dir=SAMPLE, subset="_sample")  # default seeds reach 4000

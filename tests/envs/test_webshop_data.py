"""The shipped catalogue: schema, size, and the generator's byte-identical output."""

import gzip
import json
import re

import pytest

from agentbench_af.environments.webshop.catalogue import MINI_DIR, SHIPPED_DIR, find_file
from agentbench_af.environments.webshop.generate import (
    MINI_TYPES,
    PROFILES,
    CatalogueProfile,
    generate,
    write,
)
from agentbench_af.environments.webshop.scoring import normalize_color
from agentbench_af.environments.webshop.variants import MINI_GOALS, SHIPPED_GOALS

RAW_KEYS = {
    "asin",
    "name",
    "full_description",
    "small_description",
    "pricing",
    "customization_options",
    "category",
}


def _load(stem: str, folder=SHIPPED_DIR):
    return json.loads(gzip.decompress(find_file(folder, stem).read_bytes()))  # type: ignore[union-attr]


def test_shipped_files_are_small_and_in_webshop_schema():
    assert sum(p.stat().st_size for p in SHIPPED_DIR.glob("*.json.gz")) < 1_000_000
    items, ins, reviews = _load("items_shuffle"), _load("items_ins_v2"), _load("reviews")
    assert len(items) >= 1000 and RAW_KEYS | {"query", "product_category"} <= set(items[0])
    assert len({p["asin"] for p in items}) == len(items)
    with_goal = [a for a, e in ins.items() if e["instruction"]]
    assert len(with_goal) == SHIPPED_GOALS
    for asin in with_goal[:200]:
        e = ins[asin]
        assert set(e["instruction_attributes"]) <= set(e["attributes"])
        assert isinstance(e["instruction_options"], dict)
    assert {r["asin"] for r in reviews} == {p["asin"] for p in items}


def test_option_values_never_appear_in_the_product_text():
    """Otherwise WebShop's text fallback would count any choice of that option as right."""
    for p in _load("items_shuffle")[:500]:
        text = " ".join([p["name"], p["full_description"], *p["small_description"]]).lower()
        for contents in p["customization_options"].values():
            assert all(normalize_color(c["value"]) not in text for c in contents), p["asin"]


def test_generator_is_deterministic(tmp_path):
    small = CatalogueProfile(products=300, goals=100)
    a = write(generate(seed=3, profile=small), tmp_path / "a")
    b = write(generate(seed=3, profile=small), tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]
    c = write(generate(seed=4, profile=small), tmp_path / "c")
    assert a[0].read_bytes() != c[0].read_bytes()


@pytest.mark.slow
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_generator_reproduces_the_shipped_files(tmp_path, profile):
    for path in write(generate(profile=PROFILES[profile]), tmp_path):
        assert path.read_bytes() == (PROFILES[profile].out / path.name).read_bytes(), path.name


def test_mini_catalogue_is_the_smaller_profile():
    items, ins = _load("items_shuffle", MINI_DIR), _load("items_ins_v2", MINI_DIR)
    assert len(items) == 600 and {p["query"] for p in items} == set(MINI_TYPES)
    assert all(re.fullmatch(r"B0\d{3}", p["asin"]) for p in items)
    goals = [e for e in ins.values() if e["instruction"]]
    assert len(goals) == MINI_GOALS and all(len(e["instruction_attributes"]) == 1 for e in goals)

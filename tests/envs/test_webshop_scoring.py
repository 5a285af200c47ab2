"""Hand-worked cases of each WebShop scoring rule: type, attributes, options, price, and the combination."""

from dataclasses import replace

import pytest

from agentbench_af.environments.webshop.records import Goal, Product
from agentbench_af.environments.webshop.scoring import (
    attribute_matches,
    fuzzy_ratio,
    normalize_color,
    option_matches,
    price_upper_choices,
    score_purchase,
    type_reward,
    type_words,
)

CAT = "Beauty & Personal Care › Hair Care › Shampoos"


def product(**kw) -> Product:
    base = dict(
        asin="B000000001",
        name="Lumo Tea Tree Shampoo",
        category="beauty",
        query="shampoo",
        product_category=CAT,
        pricing=(12.0,),
        price_tag="$12.00",
        price=12.0,
        options={"scent": ("lavender", "vanilla"), "size": ("8 fl oz", "16 fl oz")},
        attributes=("tea tree", "sulfate free", "essential oils"),
        description="A gentle everyday formula.",
        bullet_points=("Gentle on hair",),
        reviews=(),
        rating="N.A.",
    )
    base.update(kw)
    return Product(**base)


def goal(**kw) -> Goal:
    base = dict(
        asin="B000000001",
        instruction_text="i need a tea tree shampoo",
        attributes=("tea tree", "sulfate free"),
        options=(("scent", "lavender"), ("size", "16 fl oz")),
        price_upper=20.0,
        query="shampoo",
        category="beauty",
        product_category=CAT,
        name="Lumo Tea Tree Shampoo",
    )
    base.update(kw)
    return Goal(**base)


# ------------------------------------------------------------------------------------------ type
def test_type_exact_match():
    t = type_reward(product(), goal())
    assert (t.r_type, t.query_match, t.category_match, t.title_score) == (1.0, True, True, 1.0)


def test_type_category_match_ignores_order_and_needs_two_parts():
    g = goal(query="other", name="Zed Tea Tree Shampoo Bar")
    assert type_reward(product(product_category="Shampoos › Hair Care › Other"), g).category_match
    assert not type_reward(product(product_category="Shampoos › Other › Else"), g).category_match


def test_type_half_when_nothing_matches_but_title_shares_10_to_20_percent():
    # goal type words: alpha beta gamma delta epsilon zeta (6); the product shares one: 1/6
    g = goal(query="q1", product_category="a › b › c", name="Alpha Beta Gamma Delta Epsilon Zeta")
    p = product(query="q2", product_category="x › y › z", name="Alpha Omega")
    t = type_reward(p, g)
    assert t.title_score == pytest.approx(1 / 6)
    assert t.r_type == 0.5


def test_type_low_title_share_overrides_a_query_match():
    # 11 goal words, one shared: 1/11 < 0.1 -> 0.1 even though the query matches
    g = goal(name="alpha beta gamma delta epsilon zeta eta theta iota kappa lambda")
    t = type_reward(product(name="alpha"), g)
    assert t.query_match and t.title_score == pytest.approx(1 / 11)
    assert t.r_type == 0.1


def test_type_zero_when_no_title_word_is_shared():
    assert type_reward(product(name="Garden Hose"), goal()).r_type == 0.0


def test_type_words_drop_stop_words_numbers_and_single_letters():
    assert type_words("The T-Shirt for Men, 2 Pack") == ["shirt", "men", "pack"]
    g = goal(name="2 X")  # no type words: title score 0.2, which is not > 0.2; the query decides
    t = type_reward(product(name="Anything"), g)
    assert t.title_score == 0.2 and t.r_type == 1.0


# ------------------------------------------------------------------------------------ attributes
def test_attributes_fuzzy_match_in_attribute_list():
    assert fuzzy_ratio("essential oil", "essential oils") > 85
    assert attribute_matches(product(attributes=("essential oil",)), ["essential oils"]) == 1


def test_attributes_found_in_title_features_or_description():
    p = product(
        attributes=("DUMMY_ATTR",),
        name="Lumo Shampoo",
        bullet_points=("Made with natural ingredients",),
        description="Best with tea tree extract.",
    )
    assert attribute_matches(p, ["natural ingredients", "tea tree", "paraben free"]) == 2


def test_attributes_no_match():
    p = product(attributes=("earl gray", "tea bag"), name="Breakfast Tea", description="", bullet_points=())
    assert attribute_matches(p, ["tea tree", "essential oils"]) == 0


# --------------------------------------------------------------------------------------- options
def test_normalize_color_takes_the_first_webshop_colour_word():
    assert normalize_color("navy blue") == "blue"  # 'blue' comes before 'navy' in WebShop's list
    assert normalize_color("light pink") == "light"
    assert normalize_color("standard") == "tan"  # the original's substring quirk
    assert normalize_color("us 9") == "us 9"


def test_size_options_match_exactly_others_fuzzily():
    p = product(name="Shirt", description="", bullet_points=())
    assert option_matches(p, ["x-large"], {"size": "large"}) == 0  # exact for size
    assert option_matches(p, ["x-large"], {"fit": "large"}) == 1  # token-set subset: 100
    assert option_matches(p, ["pack of 12"], {"count": "pack of 2"}) == 1  # fuzzy ratio 87.5 > 85
    assert option_matches(p, ["blue"], {"color": "navy blue"}) == 1  # both normalise to 'blue'


def test_option_found_in_text_counts_even_if_not_wanted():
    p = product(name="Lumo Lavender Shampoo")
    assert option_matches(p, ["vanilla"], {"scent": "lavender"}) == 1
    assert option_matches(p, ["vanilla"], {}) == 0


# ----------------------------------------------------------------------------------------- price
def test_price_budget_choices_and_check():
    assert price_upper_choices(35.0) == (40.0, 50.0, 60.0, 70.0)
    assert price_upper_choices(40.0) == (50.0, 60.0, 70.0, 80.0)
    assert price_upper_choices(985.0) == (990.0,)
    assert score_purchase(product(price=20.0), goal(), {"scent": "lavender", "size": "16 fl oz"}).r_price
    assert not score_purchase(product(price=20.5), goal(), {"scent": "lavender", "size": "16 fl oz"}).r_price


# ----------------------------------------------------------------------------------- combination
def test_score_perfect_purchase_is_exactly_one():
    s = score_purchase(product(), goal(), {"scent": "lavender", "size": "16 fl oz"})
    assert s.score == 1.0 and s.r_option == 1.0 and s.r_att == 1.0


def test_score_combines_counts_over_goal_size_plus_one():
    g = goal(attributes=("tea tree", "sulfate free", "argan oil"))  # 3 attributes, 2 options, 1 price
    s = score_purchase(product(), g, {"scent": "vanilla", "size": "16 fl oz"})
    assert (s.n_attr, s.n_option, s.r_price) == (2, 1, True)
    assert s.score == pytest.approx((2 + 1 + 1) / (3 + 2 + 1))
    expensive = score_purchase(replace(product(), price=99.0), g, {"size": "16 fl oz"})
    assert expensive.score == pytest.approx((2 + 1 + 0) / 6)


def test_score_is_scaled_by_the_type_reward():
    g = goal(query="q1", product_category="a › b › c", name="Alpha Beta Gamma Delta Epsilon Zeta")
    p = product(
        query="q2", product_category="x › y › z", name="Alpha Omega", attributes=("tea tree", "sulfate free")
    )
    s = score_purchase(p, g, {"scent": "lavender", "size": "16 fl oz"})
    assert s.r_type == 0.5 and s.score == pytest.approx(0.5)


def test_score_without_goal_options():
    s = score_purchase(product(), goal(options=()), {})
    assert s.r_option is None and s.score == 1.0

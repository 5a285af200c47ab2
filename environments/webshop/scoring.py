"""WebShop's reward for a purchase (Yao et al. 2022, `get_reward`), re-implemented from its published rules.

    score = r_type * (n_attr + n_option + [price <= price_upper]) / (|goal attrs| + |goal options| + 1)

- r_type (product type): 1 when the query, the category breadcrumb (>= 2 shared parts) or the title
  words (> 20 % of the goal title's type words) match, else 0.5; 0.1 when the title share is below
  10 %; 0 when no type word is shared.
- n_attr: goal attributes found in the product's attributes (fuzzy token-set ratio > 85) or, failing
  that, as a substring of its title, features or description.
- n_option: chosen options (colour-normalised) matching a goal option: exactly for `size`, fuzzily
  (> 85) otherwise, or, failing that, found in the title, features or description.
Deliberate difference: WebShop keeps the nouns of the titles with spaCy's `en_core_web_lg` tagger;
no tagger model ships here, so the type words are the title's alphabetic words of 2+ letters minus
Lucene's English stop words (adjectives count too). Everything else follows the original rules,
including its quirks (an option found in the text counts even if it is not the goal's).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bm25s.stopwords import STOPWORDS_EN
from rapidfuzz import fuzz, utils

from agentbench_af.environments.webshop.records import Goal, Product

EXACT_MATCH_OPTIONS = frozenset({"size"})
FUZZY_THRESHOLD = 85
PRICE_STEPS = tuple(10.0 * i for i in range(1, 100))  # the budgets instructions are written with

# WebShop's colour words, in its order: an option value is reduced to the first one it contains.
COLOR_WORDS = tuple(
    """alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze brown
    burgundy camel camo caramel champagne charcoal cheetah chestnut chocolate christmas coffee cognac
    copper coral cranberry cream crystal dark denim eggplant elephant espresso fuchsia gold granite
    grape graphite grass gray green grey heather indigo ivory ivy khaki lavender lemon leopard light
    lilac lime magenta maroon mauve merlot midnight mint mocha multicolor mushroom mustard natural navy
    nude olive orange peach pewter pink plum purple rainbow red rose royal rust sand sapphire seashell
    silver skull slate steel stone stonewash sunflower tan taupe teal tiger turquoise violet walnut
    wheat white wine yellow""".split()
)
_WORD_RE = re.compile(r"[a-z]{2,}")
_STOP = frozenset(STOPWORDS_EN)


def normalize_color(value: str) -> str:
    """The first WebShop colour word contained in `value`, else `value` unchanged."""
    return next((c for c in COLOR_WORDS if c in value), value)


def fuzzy_ratio(a: str, b: str) -> int:
    """thefuzz's `token_set_ratio` (ASCII-only, lower case, punctuation as spaces, rounded)."""
    a = a.encode("ascii", "ignore").decode()
    b = b.encode("ascii", "ignore").decode()
    return round(fuzz.token_set_ratio(a, b, processor=utils.default_process))


def fuzzy_match(a: str, b: str) -> bool:
    return fuzzy_ratio(a, b) > FUZZY_THRESHOLD


def type_words(title: str) -> list[str]:
    """The words of a title that stand in for WebShop's nouns (see the module docstring)."""
    return [w for w in _WORD_RE.findall(title.lower()) if w not in _STOP]


@dataclass(frozen=True)
class TypeMatch:
    r_type: float
    query_match: bool
    category_match: bool
    title_score: float


@dataclass(frozen=True)
class Score:
    """The score of one purchase and its parts (the `verbose` info of WebShop's `get_reward`)."""

    score: float
    r_type: float
    r_att: float
    r_option: float | None  # None when the goal names no option
    r_price: bool
    n_attr: int
    n_option: int
    query_match: bool
    category_match: bool
    title_score: float


def type_reward(product: Product, goal: Goal) -> TypeMatch:
    query_match = product.query == goal.query
    bought = {x.strip() for x in product.product_category.split("›")}
    wanted = {x.strip() for x in goal.product_category.split("›")}
    category_match = len(bought & wanted) >= 2
    desired = type_words(goal.name)
    title_score = 0.2 if not desired else len(set(type_words(product.name)) & set(desired)) / len(desired)
    r_type = 1.0 if (query_match or category_match or title_score > 0.2) else 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return TypeMatch(r_type, query_match, category_match, title_score)


def _in_text(product: Product, phrase: str) -> bool:
    return (
        phrase in product.name.lower()
        or phrase in " ".join(product.bullet_points).lower()
        or phrase in product.description.lower()
    )


def attribute_matches(product: Product, goal_attributes: tuple[str, ...] | list[str]) -> int:
    n = 0
    for g in goal_attributes:
        if any(fuzzy_match(p, g) for p in product.attributes) or _in_text(product, g):
            n += 1
    return n


def option_matches(product: Product, goal_values: list[str], chosen: dict[str, str]) -> int:
    """How many chosen options match (counted per chosen option, as WebShop does)."""
    goal_norm = [normalize_color(v) for v in goal_values]
    n = 0
    for name, value in chosen.items():
        v = normalize_color(value)
        if name.lower() in EXACT_MATCH_OPTIONS:
            matched = v in goal_norm
        else:
            matched = any(fuzzy_match(g, v) for g in goal_norm)
        if matched or _in_text(product, v):
            n += 1
    return n


def score_purchase(product: Product, goal: Goal, chosen: dict[str, str]) -> Score:
    """Score buying `product` with the `chosen` options (group -> value) against `goal`."""
    t = type_reward(product, goal)
    r_price = product.price <= goal.price_upper
    n_attr = attribute_matches(product, goal.attributes)
    values = goal.option_values
    n_option = option_matches(product, values, chosen)
    total = (n_attr + n_option + int(r_price)) / (len(goal.attributes) + len(values) + 1) * t.r_type
    return Score(
        score=total,
        r_type=t.r_type,
        r_att=n_attr / len(goal.attributes) if goal.attributes else 0.0,
        r_option=n_option / len(values) if values else None,
        r_price=r_price,
        n_attr=n_attr,
        n_option=n_option,
        query_match=t.query_match,
        category_match=t.category_match,
        title_score=t.title_score,
    )


def price_upper_choices(price: float) -> tuple[float, ...]:
    """The budgets WebShop may write for `price`: the next four multiples of 10 above it."""
    return tuple(p for p in PRICE_STEPS if p > price)[:4]

"""Catalogues in WebShop's file schema: the one shipped here, or the original files a user points to.

Files read (plain `.json` or gzipped `.json.gz`), as in WebShop's `data/` folder:
  items_shuffle{subset}.json   list of raw products (asin, name, full_description, small_description,
                               pricing, customization_options, category, query, product_category, ...)
  items_ins_v2{subset}.json    asin -> {attributes, instruction, instruction_attributes[, instruction_options]}
  items_human_ins.json         asin -> [{instruction, instruction_attributes, instruction_options}, ...]
  reviews.json                 optional: [{asin, reviews: [{title, stars, review}], average_rating}]
Goals are built as WebShop's `get_goals`: synthetic ones from items_ins_v2 (one goal per option
combination, or the single combination an entry's `instruction_options` names), human ones from
items_human_ins; then shuffled with seed 233. Deliberate differences: a price range is scored at a
price drawn from the asin (WebShop draws it unseeded), and the budget is drawn from the asin and goal
number, so a catalogue always gives the same goals. Left out: images, and the `num_products` cut.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import os
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentbench_af.environments.webshop.records import Goal, Product, Review
from agentbench_af.environments.webshop.scoring import price_upper_choices

SHIPPED_DIR = Path(__file__).parent / "data"
MINI_DIR = SHIPPED_DIR / "mini"  # the smaller catalogue of WebShop-mini-v0 (data_dir "shipped-mini")
ENV_VAR = "WEBSHOP_DATA"
NO_BUDGET = 1_000_000.0
GOAL_SHUFFLE_SEED = 233
_PRICE_RE = re.compile(r"[^\d.]")


@dataclass(eq=False)  # hashed by identity: search indexes are cached per catalogue object
class Catalogue:
    name: str
    products: list[Product]
    goals: list[Goal]
    by_asin: dict[str, Product] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.by_asin:
            self.by_asin = {p.asin: p for p in self.products}


# ----------------------------------------------------------------------------- raw -> records
def _parse_pricing(raw: object) -> tuple[float, ...]:
    if not isinstance(raw, str) or "$" not in raw:
        return ()
    prices: list[float] = []
    for part in raw.split("$")[1:]:
        digits = _PRICE_RE.sub("", part)
        try:
            prices.append(float(digits))
        except ValueError:
            return ()
    return tuple(prices[:2])


def _asin_fraction(asin: str) -> float:
    return int(hashlib.sha256(asin.encode()).hexdigest()[:8], 16) / 2**32


def product_from_raw(raw: dict[str, Any], ins: dict[str, Any], reviews: dict[str, Any]) -> Product | None:
    """One raw product as WebShop's `load_products` normalises it (None for a bad asin)."""
    asin = str(raw.get("asin", ""))
    if not asin or asin == "nan" or len(asin) > 10:
        return None
    pricing = _parse_pricing(raw.get("pricing")) or (100.0,)
    if len(pricing) == 1:
        price_tag, price = f"${pricing[0]:.2f}", pricing[0]
    else:
        price_tag = f"${pricing[0]:.2f} to ${pricing[1]:.2f}"
        price = pricing[0] + _asin_fraction(asin) * (pricing[1] - pricing[0])
    options: dict[str, tuple[str, ...]] = {}
    for name, contents in (raw.get("customization_options") or {}).items():
        if contents:
            values = [str(c.get("value", "")).strip().replace("/", " | ").lower() for c in contents]
            options[str(name).lower()] = tuple(values)
    small = raw.get("small_description")
    bullets = tuple(str(b) for b in small) if isinstance(small, list) else ((str(small),) if small else ())
    review_entry = reviews.get(asin) or {}
    review_list = tuple(
        Review(
            title=str(r.get("title", "")),
            score=float(r.get("score", r.get("stars", 0)) or 0),
            body=str(r.get("body", r.get("review", "")) or ""),
        )
        for r in review_entry.get("reviews") or []
    )
    rating = review_entry.get("average_rating")
    return Product(
        asin=asin,
        name=str(raw.get("name") or ""),
        category=str(raw.get("category") or ""),
        query=str(raw.get("query") or "").lower().strip(),
        product_category=str(raw.get("product_category") or ""),
        pricing=pricing,
        price_tag=price_tag,
        price=float(price),
        options=options,
        attributes=tuple((ins.get(asin) or {}).get("attributes") or ["DUMMY_ATTR"]),
        description=str(raw.get("full_description") or ""),
        bullet_points=bullets,
        reviews=review_list,
        rating=str(rating) if rating not in (None, "") else "N.A.",
    )


def option_text(options: list[tuple[str, str]]) -> str:
    """WebShop's option clause of a synthetic instruction: ' with color: red, and size: large'."""
    joined = ", and ".join(f"{k}: {v}" for k, v in options)
    return f" with {joined}" if joined else ""


def _budget(product: Product, key: str) -> tuple[float, str]:
    choices = price_upper_choices(product.price)
    if len(choices) < 2:
        return NO_BUDGET, ""
    upper = max(random.Random(f"webshop-budget:{key}").sample(choices, 2))
    return upper, f", and price lower than {upper:.2f} dollars"


def _goal(
    p: Product, text: str, attrs: list[str], options: tuple[tuple[str | None, str], ...], upper: float
) -> Goal:
    return Goal(p.asin, text, tuple(attrs), options, upper, p.query, p.category, p.product_category, p.name)


def synthetic_goals(products: list[Product], ins: dict[str, Any]) -> list[Goal]:
    goals: list[Goal] = []
    for p in products:
        entry = ins.get(p.asin) or {}
        instruction, attrs = entry.get("instruction"), entry.get("instruction_attributes") or []
        if not instruction or not attrs:
            continue
        upper, price_text = _budget(p, p.asin)
        wanted = entry.get("instruction_options")
        if isinstance(wanted, dict):
            combos = [[(str(k).lower(), str(wanted[k]).lower()) for k in sorted(wanted)]]
        else:
            names = sorted(p.options)
            combos = [
                list(zip(names, c, strict=True)) for c in itertools.product(*(p.options[n] for n in names))
            ]
        for combo in combos:
            text = f"{instruction}{option_text(combo)}{price_text}"
            goals.append(_goal(p, text, attrs, tuple(combo), upper))
    return goals


def human_goals(products: list[Product], human: dict[str, Any]) -> list[Goal]:
    goals: list[Goal] = []
    for p in products:
        for j, entry in enumerate(human.get(p.asin) or []):
            attrs = entry.get("instruction_attributes") or []
            if not attrs:
                continue
            upper, price_text = _budget(p, f"{p.asin}:{j}")
            wanted = entry.get("instruction_options") or []
            pairs: tuple[tuple[str | None, str], ...] = (
                tuple((str(k).lower(), str(v)) for k, v in wanted.items())
                if isinstance(wanted, dict)
                else tuple((None, str(v)) for v in wanted)
            )
            text = str(entry.get("instruction", "")).strip(".") + price_text
            goals.append(_goal(p, text, attrs, pairs, upper))
    return goals


def build_catalogue(
    raw_products: list[dict[str, Any]],
    ins: dict[str, Any],
    reviews: list[dict[str, Any]] | None,
    human: dict[str, Any] | None,
    goals: str,
    name: str,
    require_goals: bool = True,
) -> Catalogue:
    review_map = {str(r.get("asin")): r for r in reviews or []}
    products: list[Product] = []
    seen: set[str] = set()
    for raw in raw_products:
        p = product_from_raw(raw, ins, review_map)
        if p is not None and p.asin not in seen:
            seen.add(p.asin)
            products.append(p)
    if goals == "synthetic":
        goal_list = synthetic_goals(products, ins)
    elif goals == "human":
        if human is None:
            raise FileNotFoundError("human goals need items_human_ins.json in the data folder")
        goal_list = human_goals(products, human)
    else:
        raise ValueError(f"goals must be 'synthetic' or 'human', not {goals!r}")
    random.Random(GOAL_SHUFFLE_SEED).shuffle(goal_list)
    if require_goals and not goal_list:
        raise ValueError(f"catalogue {name} has no goals")
    return Catalogue(name=name, products=products, goals=goal_list)


# ----------------------------------------------------------------------------- files
def read_json(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def find_file(folder: Path, stem: str, subset: str = "", required: bool = True) -> Path | None:
    """`{stem}{subset}.json[.gz]` in `folder`; without a subset, the only `{stem}*.json[.gz]` there."""
    for ext in (".json", ".json.gz"):
        if (folder / f"{stem}{subset}{ext}").is_file():
            return folder / f"{stem}{subset}{ext}"
    if not subset:
        found = sorted(p for p in folder.glob(f"{stem}*.json*") if p.name.endswith((".json", ".json.gz")))
        if len(found) == 1:
            return found[0]
        if len(found) > 1 and required:
            raise FileNotFoundError(
                f"several {stem}*.json files in {folder} ({[p.name for p in found]}); set the variant's subset"
            )
    if required:
        raise FileNotFoundError(f"no {stem}{subset}.json(.gz) in {folder}")
    return None


def resolve_data_dir(data_dir: str) -> Path:
    """'shipped' (this package's catalogue), 'shipped-mini' (its smaller one), 'env' (the folder in
    $WEBSHOP_DATA) or a folder path."""
    if data_dir == "shipped":
        return SHIPPED_DIR
    if data_dir == "shipped-mini":
        return MINI_DIR
    if data_dir == "env":
        value = os.environ.get(ENV_VAR, "")
        if not value:
            raise FileNotFoundError(f"data_dir='env' but ${ENV_VAR} is not set to a WebShop data folder")
        data_dir = value
    path = Path(data_dir).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"WebShop data folder {path} does not exist")
    return path.resolve()


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.name.encode())
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()[:12]


@lru_cache(maxsize=8)
def load_catalogue(data_dir: str = "shipped", subset: str = "", goals: str = "synthetic") -> Catalogue:
    """Load (once per process) the catalogue in `data_dir`; its `name` says which files, by hash."""
    folder = resolve_data_dir(data_dir)
    items = find_file(folder, "items_shuffle", subset)
    ins = find_file(folder, "items_ins_v2", subset)
    reviews = find_file(folder, "reviews", required=False)
    human = find_file(folder, "items_human_ins", required=goals == "human") if goals == "human" else None
    paths = [p for p in (items, ins, reviews, human) if p is not None]
    shipped = {SHIPPED_DIR: "shipped", MINI_DIR: "shipped-mini"}
    label = shipped.get(folder) or items.name.split(".")[0]  # type: ignore[union-attr]
    name = f"webshop-{label}-{goals}@{_digest(paths)}"
    return build_catalogue(
        read_json(items),  # type: ignore[arg-type]
        read_json(ins),  # type: ignore[arg-type]
        read_json(reviews) if reviews else None,
        read_json(human) if human else None,
        goals,
        name,
    )

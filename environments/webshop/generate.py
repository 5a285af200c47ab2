"""Generate the shipped WebShop catalogue, deterministically, in WebShop's raw file schema.

    python -m agentbench_af.environments.webshop.generate                  # rewrites environments/webshop/data/
    python -m agentbench_af.environments.webshop.generate --profile mini   # rewrites data/mini/

Products are drawn from `vocab.PRODUCT_TYPES` (type x attributes x option values x price) with a seeded
`random.Random`; the files are gzipped with a zero timestamp, so the same seed and counts give the same
bytes. Every instruction is checked before it is kept: the goal product is among the first
`search_return_n` BM25 results for the instruction (so the expert finds it within the action budget),
and no wrong option value of the product would count as a goal option under WebShop's option
matching (so choosing a wrong option costs score). Left out: images and the raw fields WebShop's
loader drops (brand, seller, list price, ...).

Profiles (`PROFILES`): `shipped` (WebShop-v0: 5,000 products of 33 types, 4,000 goals, 10-character
ASINs, 1-3 attributes per instruction) and `mini` (WebShop-mini-v0, for CPU tables: 600 products of 10
types, 500 goals, ASINs of `B0` and 3 digits, one attribute per instruction), so that a tiny policy
has fewer words to learn and shorter ids and queries to copy.
"""

from __future__ import annotations

import gzip
import json
import random
import string
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import typer

from agentbench_af.environments.webshop import vocab
from agentbench_af.environments.webshop.catalogue import MINI_DIR, SHIPPED_DIR, build_catalogue, option_text
from agentbench_af.environments.webshop.scoring import fuzzy_match, normalize_color
from agentbench_af.environments.webshop.search import SEARCH_RETURN_N, SearchEngine
from agentbench_af.environments.webshop.variants import MINI_GOALS, SHIPPED_GOALS

DEFAULT_SEED = 20220101
DEFAULT_PRODUCTS = 5000
INSTRUCTION_TRIES = 6


@dataclass(frozen=True)
class CatalogueProfile:
    """What a generated catalogue holds; the defaults are the shipped (WebShop-v0) catalogue's."""

    products: int = DEFAULT_PRODUCTS
    goals: int = SHIPPED_GOALS
    asin_tail: str = string.ascii_uppercase + string.digits  # characters after "B0"
    asin_length: int = 8  # characters after "B0"
    types: tuple[str, ...] = ()  # product type nouns to draw from; () = all of vocab.PRODUCT_TYPES
    max_instruction_attributes: int = 3
    out: Path = SHIPPED_DIR


MINI_TYPES = ("shampoo", "lipstick", "coffee beans", "protein bar", "t-shirt", "socks", "bookshelf",
              "desk lamp", "power bank", "bluetooth speaker")  # two per category
PROFILES: dict[str, CatalogueProfile] = {
    "shipped": CatalogueProfile(),
    "mini": CatalogueProfile(products=600, goals=MINI_GOALS, asin_tail=string.digits, asin_length=3,
                             types=MINI_TYPES, max_instruction_attributes=1, out=MINI_DIR),
}


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _title(words: str) -> str:
    return " ".join(w[:1].upper() + w[1:] for w in words.split())


def _compatible(value: str, group: str, chosen: dict[str, list[str]], text: str) -> bool:
    """`value` can join `group`: absent from the product text, and no mix-up with other values."""
    v = normalize_color(value)
    if v in text:
        return False
    for other_group, values in chosen.items():
        for u in values:
            w = normalize_color(u)
            if w == v:
                return False
            both_exact = group == "size" and other_group == "size"
            if not both_exact and (fuzzy_match(w, v) or fuzzy_match(v, w)):
                return False
    return True


def _product(rng: random.Random, ptype: vocab.ProductType, asin: str, brand: str) -> dict[str, Any]:
    attrs = rng.sample(ptype.attributes, rng.randint(3, 4))
    name = f"{brand} {_title(attrs[0])} {_title(ptype.noun)}"
    if rng.random() < 0.5:
        name += f", {_title(attrs[1])}"
    description = rng.choice(vocab.DESCRIPTION_TEMPLATES).format(
        brand=brand, noun=ptype.noun, attrs=_join(attrs)
    )
    bullets = [
        f"{a[:1].upper() + a[1:]}: {rng.choice(vocab.FEATURE_TAILS)}" for a in rng.sample(attrs, len(attrs))
    ]
    text = " ".join([name, description, *bullets]).lower()
    chosen: dict[str, list[str]] = {}
    for key in ptype.options:
        group, pool = vocab.OPTION_POOLS[key]
        picked: list[str] = []
        want = rng.randint(2, min(5, len(pool)))
        for value in rng.sample(pool, len(pool)):
            if len(picked) < want and _compatible(value, group, {**chosen, group: picked}, text):
                picked.append(value)
        if len(picked) >= 2:
            chosen[group] = sorted(picked, key=pool.index)
    lo, hi = ptype.price
    price = round(rng.uniform(lo, hi), 2)
    pricing = f"${price:.2f}"
    if rng.random() < 0.1:
        pricing += f" - ${price * rng.uniform(1.2, 1.6):.2f}"
    return {
        "asin": asin,
        "name": name,
        "full_description": description,
        "small_description": bullets,
        "pricing": pricing,
        "customization_options": {
            g: [{"value": v, "image": None} for v in vals] for g, vals in chosen.items()
        },
        "images": [],
        "category": ptype.category,
        "query": ptype.noun,
        "product_category": ptype.path,
        "attributes": attrs,  # moved to items_ins_v2 by `generate`
    }


def _reviews(rng: random.Random, asin: str, brand: str, noun: str) -> dict[str, Any]:
    reviews = [
        {
            "title": rng.choice(vocab.REVIEW_TITLES),
            "stars": rng.randint(3, 5),
            "review": rng.choice(vocab.REVIEW_BODIES).format(noun=noun, brand=brand),
        }
        for _ in range(rng.randint(1, 3))
    ]
    return {
        "asin": asin,
        "reviews": reviews,
        "average_rating": round(sum(r["stars"] for r in reviews) / len(reviews), 1),
    }


def _instruction(rng: random.Random, raw: dict[str, Any], max_attributes: int) -> dict[str, Any]:
    attrs = raw["attributes"]
    wanted = rng.sample(attrs, rng.randint(1, min(max_attributes, len(attrs))))
    text = rng.choice(vocab.INSTRUCTION_TEMPLATES).format(attrs=_join(wanted), noun=raw["query"])
    options = {g: rng.choice(vals)["value"] for g, vals in sorted(raw["customization_options"].items())}
    return {"instruction": text, "instruction_attributes": wanted, "instruction_options": options}


def _wrong_option_scores(raw: dict[str, Any], options: dict[str, str]) -> bool:
    """True when some wrong value of the product would still match a goal option."""
    goal = [normalize_color(v) for v in options.values()]
    for group, contents in raw["customization_options"].items():
        for c in contents:
            v = normalize_color(c["value"])
            if c["value"] == options[group]:
                continue
            if (group == "size" and v in goal) or (group != "size" and any(fuzzy_match(g, v) for g in goal)):
                return True
    return False


def generate(seed: int = DEFAULT_SEED, profile: CatalogueProfile = PROFILES["shipped"]) -> dict[str, Any]:
    """The three files' contents: items_shuffle, items_ins_v2 and reviews (JSON-ready)."""
    rng = random.Random(seed)
    brands = [(h + t).capitalize() for h in vocab.BRAND_HEADS for t in vocab.BRAND_TAILS]
    types = [t for t in vocab.PRODUCT_TYPES if not profile.types or t.noun in profile.types]
    n_products, n_goals = profile.products, profile.goals
    asins: set[str] = set()
    raws, reviews = [], []
    for i in range(n_products):
        ptype = types[i % len(types)]
        asin = ""
        while not asin or asin in asins:
            asin = "B0" + "".join(rng.choices(profile.asin_tail, k=profile.asin_length))
        asins.add(asin)
        brand = rng.choice(brands)
        raws.append(_product(rng, ptype, asin, brand))
        reviews.append(_reviews(rng, asin, brand, ptype.noun))
    order = list(range(n_products))
    rng.shuffle(order)
    raws, reviews = [raws[i] for i in order], [reviews[i] for i in order]
    ins = {
        r["asin"]: {"attributes": r.pop("attributes"), "instruction": None, "instruction_attributes": []}
        for r in raws
    }
    engine = SearchEngine(
        build_catalogue(raws, ins, reviews, None, "synthetic", "draft", require_goals=False)
    )
    kept = 0
    for raw in raws:
        if kept == n_goals:
            break
        for _ in range(INSTRUCTION_TRIES):
            entry = _instruction(rng, {**raw, "attributes": ins[raw["asin"]]["attributes"]},
                                 profile.max_instruction_attributes)
            combo = sorted(entry["instruction_options"].items())
            query = entry["instruction"] + option_text(combo)
            if raw["asin"] in engine.search(query, SEARCH_RETURN_N) and not _wrong_option_scores(
                raw, entry["instruction_options"]
            ):
                ins[raw["asin"]].update(entry)
                kept += 1
                break
    if kept < n_goals:
        raise RuntimeError(f"only {kept} of {n_goals} instructions passed the checks; add products")
    return {"items_shuffle": raws, "items_ins_v2": ins, "reviews": reviews}


def write(files: dict[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for stem, content in files.items():
        data = json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode()
        path = out / f"{stem}.json.gz"
        path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
        paths.append(path)
    return paths


def main(
    profile: str = typer.Option("shipped", help=f"one of {list(PROFILES)}"),
    out: Path = typer.Option(None, help="folder to write the .json.gz files to (default: the profile's)"),
    seed: int = typer.Option(DEFAULT_SEED),
    products: int = typer.Option(None, help="number of products (default: the profile's)"),
    goals: int = typer.Option(None, help="number of products that get an instruction (default: the profile's)"),
) -> None:
    if profile not in PROFILES:
        raise typer.BadParameter(f"unknown profile {profile!r}; choose one of {list(PROFILES)}")
    chosen = PROFILES[profile]
    chosen = replace(chosen, products=products or chosen.products, goals=goals or chosen.goals)
    for path in write(generate(seed, chosen), out or chosen.out):
        typer.echo(f"wrote {path} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    typer.run(main)

"""The in-memory records of a catalogue: products as WebShop's engine sees them, and goals.

These are the *normalised* forms (what WebShop's `load_products` and `get_goals` build from the raw
JSON files), not the raw file schema; `catalogue.py` converts one into the other.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Review:
    title: str
    score: float
    body: str


@dataclass(frozen=True, slots=True)
class Product:
    """One product. `options` keeps the page order of option groups; values are lower case."""

    asin: str
    name: str  # the title (WebShop's `name` and `Title`)
    category: str
    query: str  # the search term the product was collected under (lower case)
    product_category: str  # a breadcrumb, parts separated by '›'
    pricing: tuple[float, ...]  # one price, or a (low, high) range
    price_tag: str  # what the pages show, e.g. "$12.99" or "$12.99 to $18.99"
    price: float  # the price the purchase is scored at (fixed per product)
    options: dict[str, tuple[str, ...]]
    attributes: tuple[str, ...]
    description: str
    bullet_points: tuple[str, ...]
    reviews: tuple[Review, ...]
    rating: str  # "4.5" or "N.A."

    def option_group_of(self, value: str) -> str | None:
        """The first option group offering `value` (as WebShop's page, a value names one radio button)."""
        for name, values in self.options.items():
            if value in values:
                return name
        return None


@dataclass(frozen=True, slots=True)
class Goal:
    """One instruction to satisfy: the target product's type fields and the wanted attributes/options.

    `options` pairs an option group (None when the instruction gives values only, as human goals do)
    with the wanted value.
    """

    asin: str
    instruction_text: str
    attributes: tuple[str, ...]
    options: tuple[tuple[str | None, str], ...]
    price_upper: float
    query: str
    category: str
    product_category: str
    name: str

    @property
    def option_values(self) -> list[str]:
        return [v for _, v in self.options]

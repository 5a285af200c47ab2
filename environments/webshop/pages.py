"""The browsing state of one WebShop session, its buttons, and its pages as compact text.

Pages follow WebShop's site: `search` (a search box), `results` (10 items a page, up to 50),
`item` (title, price, rating, option groups and the sub-page buttons), `item-sub` (Description,
Features, Reviews, or Attributes when shown) and `done` (after Buy Now). Left out: HTML, images,
and the per-session action counters of the original server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from agentbench_af.environments.webshop.records import Product
from agentbench_af.environments.webshop.scoring import Score

BACK_TO_SEARCH = "Back to Search"
NEXT_PAGE = "Next >"
PREV_PAGE = "< Prev"
BUY_NOW = "Buy Now"
SUB_PAGES = ("Description", "Features", "Reviews")
ATTRIBUTES = "Attributes"
SEARCH_PATTERN = "search[<your query>]"


@dataclass
class Session:
    page: str = "search"  # search | results | item | item-sub | done
    keywords: str = ""
    results: tuple[str, ...] = ()
    result_page: int = 1
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    sub_page: str = ""
    score: Score | None = None

    def snapshot(self) -> tuple:
        """Everything that defines the state (for the `effective` test)."""
        return (
            self.page,
            self.keywords,
            self.results,
            self.result_page,
            self.asin,
            tuple(sorted(self.options.items())),
            self.sub_page,
        )


def page_asins(s: Session, per_page: int) -> tuple[str, ...]:
    start = (s.result_page - 1) * per_page
    return s.results[start : start + per_page]


def n_pages(s: Session, per_page: int) -> int:
    return max(1, -(-len(s.results) // per_page))


def buttons(
    s: Session, product: Product | None, per_page: int, show_attrs: bool, label: Callable[[str], str] = str
) -> list[str]:
    """The clickable buttons of the current page, in page order (no search box); product ids as `label` shows them."""
    if s.page == "results":
        nav = [BACK_TO_SEARCH]
        if s.result_page > 1:
            nav.append(PREV_PAGE)
        if s.result_page < n_pages(s, per_page):
            nav.append(NEXT_PAGE)
        return nav + [label(a) for a in page_asins(s, per_page)]
    if s.page == "item" and product is not None:
        subs = list(SUB_PAGES) + ([ATTRIBUTES] if show_attrs else [])
        values = [v for vals in product.options.values() for v in vals]
        return [BACK_TO_SEARCH, PREV_PAGE, *subs, BUY_NOW, *values]
    if s.page == "item-sub":
        return [BACK_TO_SEARCH, PREV_PAGE]
    return []


def _cut(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: max(0, n - 3)].rstrip() + "..."


def render(
    s: Session,
    instruction: str,
    products: dict[str, Product],
    per_page: int,
    title_chars: int,
    text_chars: int,
    label: Callable[[str], str] = str,
) -> str:
    """The page's text; product ids as `label` shows them."""
    lines = [f"Instruction: {instruction}"]
    product = products.get(s.asin) if s.asin else None
    if s.page == "search":
        lines.append("Page: search. Type a query to find products.")
    elif s.page == "results":
        shown = page_asins(s, per_page)
        lines.append(
            f'Page: results for "{_cut(s.keywords, 120)}" (page {s.result_page} of {n_pages(s, per_page)}, '
            f"{len(s.results)} items)"
        )
        if not shown:
            lines.append("No products match this query.")
        for asin in shown:
            p = products[asin]
            lines.append(f"{label(asin)} | {_cut(p.name, title_chars)} | {p.price_tag}")
    elif s.page in ("item", "item-sub") and product is not None:
        where = "item" if s.page == "item" else f"{s.sub_page.lower()} of item"
        lines.append(f"Page: {where} {label(product.asin)}")
        lines.append(
            f"{_cut(product.name, 2 * title_chars)} | Price: {product.price_tag} | Rating: {product.rating}"
        )
        if s.page == "item":
            for name, values in product.options.items():
                chosen = s.options.get(name, "none")
                lines.append(f"{name}: {', '.join(values)} (chosen: {chosen})")
        else:
            lines.append(_sub_page_text(product, s.sub_page, text_chars))
    elif s.page == "done" and product is not None and s.score is not None:
        chosen = ", ".join(f"{k}: {v}" for k, v in s.options.items()) or "no options"
        lines.append(
            f"Page: done. You bought {label(product.asin)} ({chosen}) at {product.price_tag}. "
            f"Score: {s.score.score:.3f}."
        )
    return "\n".join(lines)


def _sub_page_text(p: Product, sub: str, n: int) -> str:
    if sub == "Description":
        return _cut(p.description, n) or "(no description)"
    if sub == "Features":
        return _cut(" | ".join(p.bullet_points), n) or "(no features)"
    if sub == "Reviews":
        parts = [f"{r.title} ({r.score:g}/5): {r.body}" for r in p.reviews]
        return _cut(" | ".join(parts), n) or "(no reviews)"
    return _cut(", ".join(p.attributes), n)

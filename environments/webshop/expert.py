"""The WebShop expert: knows the goal (privileged) and walks search -> results -> item -> options -> buy.

It searches with the instruction (without its price clause), falling back to the goal product's
title when the instruction does not bring the product up. From the results it takes the first item
that would score 1 with the goal's options (`fitting_asin`; the goal product when none does), as a
shopper takes the first match rather than one particular listing; it pages to that item, opens it,
chooses the goal's options and buys. From any other state it first steps back towards that path. Each
turn comes with one short templated reasoning sentence. Left out: comparing prices among fitting items.

With `expert_action_noise` = p (`noisy_click`), each click turn is, with probability p, replaced by a click
on a button drawn uniformly from the page (possibly the planned one), with a sentence that names that
click; the expert then steps back towards its path from wherever the click led. The draw depends only on
(episode seed, turn), so the noisy expert is deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from agentbench_af.api import ExpertTurn
from agentbench_af.api.types import action_noise_draws
from agentbench_af.environments.webshop import pages
from agentbench_af.environments.webshop.pages import Session
from agentbench_af.environments.webshop.records import Goal, Product
from agentbench_af.environments.webshop.scoring import score_purchase

if TYPE_CHECKING:
    from agentbench_af.environments.webshop.catalogue import Catalogue
    from agentbench_af.environments.webshop.search import SearchEngine
    from agentbench_af.environments.webshop.variants import WebShopVariant

_PRICE_CLAUSE = re.compile(r",? and price lower than [\d.,]+ dollars\s*$", re.IGNORECASE)


def instruction_query(instruction: str) -> str:
    """The instruction without WebShop's trailing price clause: what the expert types."""
    return _PRICE_CLAUSE.sub("", instruction).strip()


def expert_query(goal: Goal, catalogue: Catalogue, engine: SearchEngine, n: int) -> str:
    query = instruction_query(goal.instruction_text)
    if goal.asin in engine.search(query, n):
        return query
    title = catalogue.by_asin[goal.asin].name
    return title if goal.asin in engine.search(title, n) else query


def missing_option(product: Product, goal: Goal, chosen: dict[str, str]) -> tuple[str, str] | None:
    """The next goal option (group, value) not yet chosen that a click can set."""
    for name, value in goal.options:
        v = value.lower()
        group = product.option_group_of(v)
        if group is None or (name is not None and name != group):
            continue  # not offered here, or the value's button sets another group
        if chosen.get(group) != v:
            return group, v
    return None


def goal_options(product: Product, goal: Goal) -> dict[str, str]:
    """The options the expert would choose on `product`: each goal option a click there can set."""
    chosen: dict[str, str] = {}
    while (todo := missing_option(product, goal, chosen)) is not None:
        chosen[todo[0]] = todo[1]
    return chosen


def fitting_asin(results: tuple[str, ...] | list[str], goal: Goal, catalogue: Catalogue) -> str:
    """The first of `results` whose purchase with `goal_options` scores 1, else the goal's asin."""
    for asin in results:
        product = catalogue.by_asin[asin]
        if score_purchase(product, goal, goal_options(product, goal)).score >= 1.0:
            return asin
    return goal.asin


def plan_turn(
    s: Session, goal: Goal, catalogue: Catalogue, engine: SearchEngine, v: WebShopVariant,
    label: Callable[[str], str] = str,
) -> ExpertTurn:
    """The expert's next turn from `s`; a product id is written as `label` shows it (the page's names)."""
    kind = catalogue.by_asin[goal.asin].query or "product"
    target = fitting_asin(s.results, goal, catalogue) if s.results else goal.asin
    product = catalogue.by_asin[target]
    if s.page == "search":
        q = expert_query(goal, catalogue, engine, v.search_return_n)
        return ExpertTurn(
            f"I am shopping for {kind} as the instruction describes, so I search for it.", (f"search[{q}]",)
        )
    if s.page == "results":
        if target in s.results:
            where = s.results.index(target) // v.results_per_page + 1
            if where == s.result_page:
                return ExpertTurn(
                    f"Item {label(target)} on this page fits the instruction, so I open it.",
                    (f"click[{label(target)}]",),
                )
            if where > s.result_page:
                return ExpertTurn(
                    f"No item on this page fits yet, so I look at page {s.result_page + 1}.",
                    (f"click[{pages.NEXT_PAGE}]",),
                )
            return ExpertTurn(
                "A fitting item was on an earlier page, so I go back.", (f"click[{pages.PREV_PAGE}]",)
            )
        return ExpertTurn(
            "None of these results fits the instruction, so I search again.",
            (f"click[{pages.BACK_TO_SEARCH}]",),
        )
    if s.page == "item-sub":
        return ExpertTurn("I have read this page, so I return to the item.", (f"click[{pages.PREV_PAGE}]",))
    if s.page == "item":
        if s.asin != target:
            return ExpertTurn(
                "This item does not fit the instruction, so I go back to the results.",
                (f"click[{pages.PREV_PAGE}]",),
            )
        todo = missing_option(product, goal, s.options)
        if todo is not None:
            group, value = todo
            return ExpertTurn(
                f"The instruction asks for {group} {value}, so I choose it.", (f"click[{value}]",)
            )
        return ExpertTurn(
            f"This item has the wanted attributes and options at {product.price_tag}, within budget, so I buy it.",
            (f"click[{pages.BUY_NOW}]",),
        )
    return ExpertTurn("The purchase is done.", (f"click[{pages.BUY_NOW}]",))


def noisy_click(
    turn: ExpertTurn, buttons: Sequence[str], p: float, seed: int | None, turn_index: int
) -> ExpertTurn:
    """`turn`, or with probability `p` a click on a uniformly drawn one of `buttons` that names it.

    Search turns (and pages without buttons) are returned unchanged.
    """
    if p == 0.0 or not buttons or not turn.actions or not turn.actions[0].startswith("click["):
        return turn
    replace, drawn = action_noise_draws(p, 1, len(buttons), seed, turn_index)
    if not replace[0]:
        return turn
    button = buttons[int(drawn[0])]
    return ExpertTurn(f"I click {button} on this page.", (f"click[{button}]",))

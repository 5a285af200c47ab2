"""WebShop over text: a seed picks a goal, the agent searches, browses and buys; WebShop's score is the reward.

Actions are `search[query]` (search page only) and `click[button]` with a button of the current page
(matched case-insensitively after trimming). Buy Now ends the episode with reward = the purchase's
score; success = score 1 ("strict success"). `info["score"]` carries the score (0 before buying).
Left out: HTML observations, images, and WebShop's [SEP]-joined flat text mode.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from agentbench_af.api import ActionOutcome, ExpertTurn, TextEnv, Variant
from agentbench_af.api.types import StepInfo
from agentbench_af.environments.webshop import pages
from agentbench_af.environments.webshop.catalogue import Catalogue, load_catalogue
from agentbench_af.environments.webshop.expert import noisy_click, plan_turn
from agentbench_af.environments.webshop.pages import Session
from agentbench_af.environments.webshop.records import Goal, Product
from agentbench_af.environments.webshop.scoring import score_purchase
from agentbench_af.environments.webshop.search import SearchEngine, engine_for
from agentbench_af.environments.webshop.variants import WebShopVariant

_ACTION_RE = re.compile(r"^(search|click)\s*\[(.*)\]$", re.IGNORECASE | re.DOTALL)
MAX_QUERY_CHARS = 300
#: the random stream of `relabel_ids`' permutation (apart from every other draw keyed on the episode seed)
_RELABEL_STREAM = 7_211


class WebShopEnv(TextEnv[WebShopVariant]):
    description = "Find and buy the product an instruction describes in a web shop (WebShop)."
    action_help = "search[query], click[button]"

    def __init__(self, variant: WebShopVariant | None = None, render_mode: str | None = "ansi") -> None:
        super().__init__(variant or WebShopVariant(), render_mode)
        v = self.variant
        self.catalogue: Catalogue = load_catalogue(v.data_dir, v.subset, v.goals)
        self.engine: SearchEngine = engine_for(self.catalogue)
        n = len(self.catalogue.goals)
        top = max(v.train_seeds[1], v.eval_seeds[1])
        if top > n:
            raise ValueError(
                f"catalogue {self.catalogue.name} has {n} goals but the variant's seed ranges reach {top}; "
                f"set train_seeds/eval_seeds within [0, {n})"
            )
        self._goal: Goal | None = None
        self._s = Session()
        self._shown: dict[str, str] = {}  # real id -> shown id, under `relabel_ids` (empty: ids as they are)
        self._real: dict[str, str] = {}

    @property
    def catalogue_name(self) -> str:
        """Which catalogue (files and goal kind, by content hash) this environment plays."""
        return self.catalogue.name

    @property
    def goal(self) -> Goal:
        assert self._goal is not None, "call reset() first"
        return self._goal

    @property
    def session(self) -> Session:
        return self._s

    @classmethod
    def rules(cls, variant: Variant) -> str:
        return (
            "You are shopping in WebShop. Find and buy the product that matches the instruction: its type, "
            "attributes, options and price budget.\n"
            f"Pages: search, results ({variant.results_per_page} items a page), item (options, Description, Features, Reviews), "
            "item sub-pages.\n"
            "Actions: search[query] on the search page; click[button] with a button from the available "
            "actions (an item id, Next >, < Prev, Back to Search, an option value, Description, Features, "
            "Reviews, Buy Now). Choose the wanted options before Buy Now. Buying ends the episode and "
            "scores the purchase from 0 to 1."
        )

    # ------------------------------------------------------------------ game
    def _new_game(self, seed: int) -> None:
        goals = self.catalogue.goals
        if not 0 <= seed < len(goals):
            raise ValueError(f"seed {seed} is outside the {len(goals)} goals of {self.catalogue.name}")
        self._goal = goals[seed]
        self._s = Session()
        if self.variant.relabel_ids:
            ids = [p.asin for p in self.catalogue.products]
            key = [seed, _RELABEL_STREAM] + ([self._draw] if self._draw else [])  # draw 0: the seed's own
            drawn = np.random.default_rng(key).permutation(len(ids))
            self._shown = {real: ids[int(j)] for real, j in zip(ids, drawn, strict=True)}
            self._real = {shown: real for real, shown in self._shown.items()}

    @property
    def draws_vary(self) -> bool:
        """Under `relabel_ids` each draw of a seed shows the ids under another permutation (`sft.demo_draws`)."""
        return bool(self.variant.relabel_ids)

    def _label(self, asin: str) -> str:
        """How the page shows product `asin`."""
        return self._shown.get(asin, asin)

    def _product(self) -> Product | None:
        return self.catalogue.by_asin.get(self._s.asin) if self._s.asin else None

    def _buttons(self) -> list[str]:
        return pages.buttons(self._s, self._product(), self.variant.results_per_page, self.variant.show_attrs,
                             self._label)

    def admissible_actions(self) -> list[str] | None:
        if self._s.page == "search":
            return [pages.SEARCH_PATTERN]
        if self._s.page == "done":
            return None  # the episode is over
        return [f"click[{b}]" for b in self._buttons()]

    def _apply_action(self, action: str) -> ActionOutcome:
        m = _ACTION_RE.match(action.strip())
        if m is None:
            return ActionOutcome.invalid(f"{action[:40]!r} is not search[query] or click[button]")
        verb, arg = m.group(1).lower(), " ".join(m.group(2).split())
        before = self._s.snapshot()
        if verb == "search":
            if self._s.page != "search":
                return ActionOutcome.invalid(
                    "search is only possible on the search page (click Back to Search)"
                )
            if not arg:
                return ActionOutcome.invalid("the search query is empty")
            if "[" in arg or "]" in arg:
                return ActionOutcome.invalid(
                    "write one search[query] per action, with no brackets in the query"
                )
            self._search(arg[:MAX_QUERY_CHARS])
            return ActionOutcome(valid=True, effective=self._s.snapshot() != before)
        by_key: dict[str, str] = {}
        for b in self._buttons():
            by_key.setdefault(b.lower(), b)
        button = by_key.get(arg.lower())
        if button is None:
            return ActionOutcome.invalid(f"no button {arg[:40]!r} on the {self._s.page} page")
        reward = self._click(button)
        return ActionOutcome(valid=True, reward=reward, effective=self._s.snapshot() != before)

    def _search(self, query: str) -> None:
        s = self._s
        s.keywords = query
        s.results = self.engine.search(query, self.variant.search_return_n)
        s.result_page, s.asin, s.options, s.sub_page, s.page = 1, None, {}, "", "results"

    def _click(self, button: str) -> float:
        s, product = self._s, self._product()
        if button == pages.BACK_TO_SEARCH:
            self._s = Session()
        elif s.page == "results":
            if button == pages.NEXT_PAGE:
                s.result_page += 1
            elif button == pages.PREV_PAGE:
                s.result_page -= 1
            else:
                s.asin, s.options, s.page = self._real.get(button, button), {}, "item"
        elif s.page == "item-sub":  # only < Prev is left: back to the item
            s.page, s.sub_page = "item", ""
        elif s.page == "item" and product is not None:
            if button == pages.PREV_PAGE:  # back to the results, which forget the chosen options
                s.page, s.asin, s.options = "results", None, {}
            elif button in pages.SUB_PAGES or button == pages.ATTRIBUTES:
                s.page, s.sub_page = "item-sub", button
            elif button == pages.BUY_NOW:
                s.score = score_purchase(product, self.goal, dict(s.options))
                s.page = "done"
                return float(s.score.score)
            else:
                group = product.option_group_of(button)
                if group is not None:
                    s.options[group] = button
        return 0.0

    def _render_state(self) -> str:
        v = self.variant
        return pages.render(
            self._s,
            self.goal.instruction_text if self._goal else "",
            self.catalogue.by_asin,
            v.results_per_page,
            v.title_chars,
            v.text_chars,
            self._label,
        )

    @property
    def score(self) -> float:
        return float(self._s.score.score) if self._s.score is not None else 0.0

    @property
    def is_success(self) -> bool:
        return self._s.score is not None and self._s.score.score >= 1.0 - 1e-9

    @property
    def is_failure(self) -> bool:
        return self._s.score is not None and not self.is_success

    def expert_turn(self) -> ExpertTurn:
        planned = plan_turn(self._s, self.goal, self.catalogue, self.engine, self.variant, self._label)
        buttons = self._buttons() if self._s.page not in ("search", "done") else []
        return noisy_click(planned, buttons, self.variant.expert_action_noise, self.seed_used, self.turn)

    # ------------------------------------------------------------------ info: add the score
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, StepInfo]:
        obs, info = super().reset(seed=seed, options=options)
        info["score"] = self.score  # type: ignore[typeddict-unknown-key]
        return obs, info

    def step(self, action: str) -> tuple[str, float, bool, bool, StepInfo]:
        obs, reward, terminated, truncated, info = super().step(action)
        info["score"] = self.score  # type: ignore[typeddict-unknown-key]
        return obs, reward, terminated, truncated, info

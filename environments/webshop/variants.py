"""WebShop variants (ids registered on import)."""

from dataclasses import dataclass

from agentbench_af.api import Variant, register
from agentbench_af.api.types import check_action_noise

#: goals in the shipped catalogue (checked by the tests against the data file)
SHIPPED_GOALS = 4000
#: the first goals are the evaluation set, as WebShop's first 500 goals are its test split
EVAL_GOALS = 500
#: goals in the smaller shipped catalogue of WebShop-mini-v0, and its evaluation split
MINI_GOALS = 500
MINI_EVAL_GOALS = 100


@dataclass(frozen=True)
class WebShopVariant(Variant):
    """Seeds index the catalogue's shuffled goal list. For the original files, set `data_dir` (or
    'env' for $WEBSHOP_DATA), `goals` ('synthetic' from items_ins_v2, 'human' from items_human_ins)
    and seed ranges that fit its goal count (WebShop's split: eval 0-500, dev 500-1500, train 1500+).
    """

    data_dir: str = "shipped"  # "shipped", "shipped-mini", "env" ($WEBSHOP_DATA) or a folder with WebShop's files
    subset: str = ""  # file-name suffix of the original files, e.g. "_1000"
    goals: str = "synthetic"
    results_per_page: int = 10
    search_return_n: int = 50
    show_attrs: bool = False  # WebShop's show_attrs: an Attributes sub-page on item pages
    title_chars: int = 80  # titles on result pages are cut to this many characters
    text_chars: int = 600  # sub-page texts are cut to this many characters
    max_turns: int = 15
    max_actions_per_turn: int = 1
    max_actions_per_episode: int = 15
    eval_seeds: tuple[int, int] = (0, EVAL_GOALS)
    train_seeds: tuple[int, int] = (EVAL_GOALS, SHIPPED_GOALS)
    # the expert's click is, with this probability per turn, one drawn uniformly from the page's buttons
    # (search turns are kept); only the expert reads it, the game is unchanged
    expert_action_noise: float = 0.0
    # each episode shows the catalogue's product ids under a permutation drawn from its seed, on every page and
    # in the expert's turns; clicks take the shown ids. Search, scoring and the expert's choices are unchanged,
    # only the names differ, so a policy cannot tell the id to click from the instruction alone: for warm-start
    # demonstrations (`sft.env_overrides`) that teach copying an id off the page rather than memorising it
    relabel_ids: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        check_action_noise(self.expert_action_noise)
        if self.goals not in ("synthetic", "human"):
            raise ValueError(f"goals must be 'synthetic' or 'human', not {self.goals!r}")
        if self.results_per_page < 1 or self.search_return_n < 1:
            raise ValueError("results_per_page and search_return_n must be >= 1")


_ENTRY = "agentbench_af.environments.webshop.env:WebShopEnv"

VARIANTS: dict[str, tuple[WebShopVariant, str]] = {
    "WebShop-v0": (
        WebShopVariant(),
        "WebShop on the shipped catalogue: search, open an item, choose options, buy; WebShop's score.",
    ),
    "WebShop-mini-v0": (
        WebShopVariant(data_dir="shipped-mini", max_turns=10, max_actions_per_episode=10,
                       eval_seeds=(0, MINI_EVAL_GOALS), train_seeds=(MINI_EVAL_GOALS, MINI_GOALS)),
        "WebShop on the smaller shipped catalogue (600 products of 10 types, short ids, one attribute per "
        "instruction), 10 turns: the CPU tables' WebShop; WebShop-v0 stays the paper setting.",
    ),
}

for _id, (_variant, _desc) in VARIANTS.items():
    register(_id, _ENTRY, _variant, _desc)

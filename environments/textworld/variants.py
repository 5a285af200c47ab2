"""TextWorld variants (ids registered on import; nothing here imports textworld).

A variant names one of textworld's challenges and a difficulty level. Treasure hunter (levels 1-30)
and coin collector (levels 1-300, at most 100 rooms) use textworld's own level numbers; tw-cooking
has skills instead of levels, so `COOKING_LEVELS` is this project's ladder of skill sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentbench_af.api import Variant, register

#: challenge (variant field) -> (textworld challenge name, short name used in ids)
CHALLENGES: dict[str, tuple[str, str]] = {
    "cooking": ("tw-cooking", "cooking"),
    "treasure_hunter": ("tw-treasure_hunter", "treasure"),
    "coin_collector": ("tw-coin_collector", "coin"),
}

#: cooking level -> tw-cooking skills (recipe: ingredients; take: ingredients to find; go: rooms;
#: open: closed doors and containers; cook/cut: ingredients to cook/cut as the cookbook says)
COOKING_LEVELS: dict[int, dict[str, Any]] = {
    1: {"recipe": 1, "take": 1, "go": 1, "open": True},
    2: {"recipe": 2, "take": 2, "go": 6, "open": True, "cook": True, "cut": True},
    3: {"recipe": 3, "take": 3, "go": 9, "open": True, "cook": True, "cut": True},
}


def level_error(challenge: str, level: int) -> str | None:
    """Why (challenge, level) is not a level textworld can generate (None: it can)."""
    if challenge not in CHALLENGES:
        return f"challenge {challenge!r} must be one of {sorted(CHALLENGES)}"
    if challenge == "cooking" and level not in COOKING_LEVELS:
        return f"cooking level {level} must be one of {sorted(COOKING_LEVELS)}"
    if challenge == "treasure_hunter" and not 1 <= level <= 30:
        return f"treasure_hunter level {level} must be within 1-30"
    if challenge == "coin_collector":
        rooms = ((level - 1) // 100 + 1) * ((level - 1) % 100 + 1)
        if not 1 <= level <= 300 or rooms > 100:
            return f"coin_collector level {level} must be within 1-300 with at most 100 rooms (it has {rooms})"
    return None


def challenge_settings(challenge: str, level: int) -> tuple[str, dict[str, Any]]:
    """(textworld challenge name, the `settings` its `make` takes) for a level."""
    error = level_error(challenge, level)
    if error:
        raise ValueError(error)
    name = CHALLENGES[challenge][0]
    if challenge == "cooking":
        return name, {"recipe_seed": 0, "split": None, **COOKING_LEVELS[level]}
    return name, {"level": level}


@dataclass(frozen=True)
class TextWorldVariant(Variant):
    """`challenge` is a key of CHALLENGES; `level` a level of that challenge (see the module docstring).

    Seeds: train `[0, 1_000_000)`, eval `[1_000_000, 1_010_000)`; a game is a function of
    (challenge, level, seed) only. The generator keeps games whose winning policy fits
    `plan_limit(challenge, level)`, the registered id's budget (overriding the budget lower does not
    change the games).
    """

    challenge: str = "coin_collector"
    level: int = 5
    max_turns: int = 50
    max_actions_per_turn: int = 1
    max_actions_per_episode: int = 50

    def __post_init__(self) -> None:
        super().__post_init__()
        error = level_error(self.challenge, self.level)
        if error:
            raise ValueError(error)
        if self.max_actions_per_turn != 1:
            raise ValueError("TextWorld variants take one command per turn (max_actions_per_turn=1)")


_ENTRY = "agentbench_af.environments.textworld.env:TextWorldEnv"
#: (challenge, level, limit on turns and commands, description)
_LEVELS: tuple[tuple[str, int, int, str], ...] = (
    ("cooking", 1, 20, "Cooking, one room: find one ingredient in a closed container, prepare the meal, eat it."),
    ("cooking", 2, 50, "Cooking, 6 rooms, closed doors: fetch 2 ingredients, cook and cut them as the cookbook says."),
    ("cooking", 3, 70, "Cooking, 9 rooms, closed doors: fetch 3 ingredients, cook and cut them as the cookbook says."),
    ("treasure_hunter", 5, 20, "Treasure hunter (textworld level 5): 5 empty rooms, find and take the named object."),
    ("treasure_hunter", 15, 40, "Treasure hunter (level 15): 10 rooms with doors and containers, a distractor object."),
    ("treasure_hunter", 25, 60, "Treasure hunter (level 25): 20 rooms, locked doors and containers, keys to find."),
    ("coin_collector", 5, 20, "Coin collector (textworld level 5): follow a chain of 5 rooms to the coin."),
    ("coin_collector", 15, 40, "Coin collector (level 15): a chain of 15 rooms to the coin."),
    ("coin_collector", 110, 40, "Coin collector (level 110): a chain of 10 rooms with a dead-end room off each."),
)

#: (challenge, level) -> the most commands a generated game's winning policy may take
PLAN_LIMITS: dict[tuple[str, int], int] = {(c, lv): limit for c, lv, limit, _ in _LEVELS}
DEFAULT_PLAN_LIMIT = 200  # levels without an id: only a bound on the generator's check


def plan_limit(challenge: str, level: int) -> int:
    return PLAN_LIMITS.get((challenge, int(level)), DEFAULT_PLAN_LIMIT)


VARIANTS: dict[str, tuple[TextWorldVariant, str]] = {
    f"TextWorld-{CHALLENGES[c][1]}-L{lv}-v0": (
        TextWorldVariant(challenge=c, level=lv, max_turns=limit, max_actions_per_episode=limit), desc
    )
    for c, lv, limit, desc in _LEVELS
}

for _id, (_variant, _desc) in VARIANTS.items():
    register(_id, _ENTRY, _variant, _desc, extra="textworld")

"""Lights Out variants; importing this module registers their ids."""

from dataclasses import dataclass

import agentbench_af
from agentbench_af.api import Variant


@dataclass(frozen=True)
class LightsOutVariant(Variant):
    scramble_presses: int = 0  # 0: a uniformly drawn board; k: k distinct random presses from all-off
    max_turns: int = 5
    max_actions_per_turn: int = 2
    max_actions_per_episode: int = 10

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.scramble_presses <= 9:
            raise ValueError(f"scramble_presses must be in [0, 9], got {self.scramble_presses}")


ENTRY_POINT = "agentbench_lightsout.env:LightsOutEnv"

agentbench_af.register(
    "LightsOut-3x3-v0", ENTRY_POINT, LightsOutVariant(),
    "3x3 Lights Out: pressing a cell toggles it and its neighbours; turn every light off.",
)
agentbench_af.register(
    "LightsOut-3x3-easy-v0", ENTRY_POINT, LightsOutVariant(scramble_presses=2),
    "3x3 Lights Out scrambled by two presses (solvable in at most two).",
)

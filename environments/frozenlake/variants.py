"""FrozenLake variants (ids registered on import)."""

from dataclasses import dataclass

from agentbench_af.api import register
from agentbench_af.api.types import PlanningExpertVariant


@dataclass(frozen=True)
class FrozenLakeVariant(PlanningExpertVariant):
    size: int = 4
    frozen_prob: float = 0.8
    slippery: bool = False
    success_rate: float = 0.8  # probability that a slippery move goes as intended (RAGEN's setting)
    random_start: bool = False  # start and goal on random distinct frozen cells
    max_turns: int = 5
    max_actions_per_turn: int = 2
    max_actions_per_episode: int = 10


_ENTRY = "agentbench_af.environments.frozenlake.env:FrozenLakeEnv"

VARIANTS: dict[str, tuple[FrozenLakeVariant, str]] = {
    "FrozenLake-4x4-v0": (FrozenLakeVariant(), "Random 4x4 FrozenLake map, deterministic moves (paper setting)."),
    "FrozenLake-4x4-slippery-v0": (
        FrozenLakeVariant(slippery=True),
        "Random 4x4 map; a move goes as intended with probability 0.8 (RAGEN).",
    ),
    "FrozenLake-6x6-v0": (
        FrozenLakeVariant(size=6, max_turns=8, max_actions_per_episode=16),
        "Random 6x6 map, deterministic moves.",
    ),
    "FrozenLake-8x8-v0": (
        FrozenLakeVariant(size=8, max_turns=10, max_actions_per_turn=3, max_actions_per_episode=30),
        "Random 8x8 map, deterministic moves.",
    ),
    "FrozenLake-4x4-randstart-v0": (
        FrozenLakeVariant(random_start=True),
        "Random 4x4 map with start and goal on random distinct frozen cells (a real held-out test).",
    ),
}

for _id, (_variant, _desc) in VARIANTS.items():
    register(_id, _ENTRY, _variant, _desc)

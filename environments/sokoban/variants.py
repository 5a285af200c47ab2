"""Sokoban variants (ids registered on import)."""

import math
from dataclasses import dataclass

from agentbench_af.api import register
from agentbench_af.api.types import PlanningExpertVariant


@dataclass(frozen=True)
class SokobanVariant(PlanningExpertVariant):
    size: int = 6  # the room is size x size, wall border included (gym-sokoban's dim_room)
    num_boxes: int = 1
    floor_steps: int = 30  # length of the random walk that carves the floor
    turn_prob: float = 0.35  # probability that the carving walk changes direction
    widen_prob: float = 0.5  # probability that a carving step also opens a side cell
    reverse_steps: int = 10  # effective player moves of the reverse play
    pull_prob: float = 0.8  # probability that a reverse move pulls a box, when one can
    min_solution: int = 3  # fewest actions an optimal solution must need (solved rooms are never drawn)
    max_turns: int = 5
    max_actions_per_turn: int = 2
    max_actions_per_episode: int = 10
    step_reward: float = -0.1  # reward of every valid action, effective or not (RAGEN's step penalty)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.size < 4 or self.num_boxes < 1 or self.reverse_steps < 1:
            raise ValueError("Sokoban needs size >= 4, num_boxes >= 1 and reverse_steps >= 1")
        if self.num_boxes + 2 > (self.size - 2) ** 2:
            raise ValueError(f"{self.num_boxes} boxes do not fit a {self.size}x{self.size} room")
        if not math.isfinite(self.step_reward):
            raise ValueError(f"step_reward must be a finite number, got {self.step_reward!r}")
        if self.min_solution > min(self.reverse_steps, self.max_actions_per_episode):
            raise ValueError("min_solution must fit both reverse_steps and max_actions_per_episode")


_ENTRY = "agentbench_af.environments.sokoban.env:SokobanEnv"

VARIANTS: dict[str, tuple[SokobanVariant, str]] = {
    "Sokoban-6x6-1box-v0": (SokobanVariant(), "Random 6x6 room with 1 box (paper setting)."),
    "Sokoban-6x6-2box-v0": (
        SokobanVariant(num_boxes=2, reverse_steps=16, max_turns=8, max_actions_per_episode=16),
        "Random 6x6 room with 2 boxes.",
    ),
    "Sokoban-8x8-2box-v0": (
        SokobanVariant(
            size=8,
            num_boxes=2,
            floor_steps=45,
            reverse_steps=30,
            min_solution=4,
            max_turns=10,
            max_actions_per_turn=3,
            max_actions_per_episode=30,
        ),
        "Random 8x8 room with 2 boxes.",
    ),
}

for _id, (_variant, _desc) in VARIANTS.items():
    register(_id, _ENTRY, _variant, _desc)

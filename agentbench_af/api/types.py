"""Typed values shared by every environment: variants, step info, action outcomes, expert turns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypedDict

import numpy as np


@dataclass(frozen=True)
class Variant:
    """Limits and seed ranges every variant has; environments subclass it with their own fields.

    Seed ranges are half-open `[start, stop)`. Training and evaluation ranges are disjoint and are
    written into every result.
    """

    max_turns: int = 5
    max_actions_per_turn: int = 2
    max_actions_per_episode: int = 10
    format_penalty: float = -0.1
    train_seeds: tuple[int, int] = (0, 1_000_000)
    eval_seeds: tuple[int, int] = (1_000_000, 1_010_000)

    def __post_init__(self) -> None:
        a, b = self.train_seeds
        c, d = self.eval_seeds
        if not (a < b and c < d) or (a < d and c < b):
            raise ValueError(f"train_seeds {self.train_seeds} and eval_seeds {self.eval_seeds} must be disjoint ranges")
        if self.max_turns < 1 or self.max_actions_per_turn < 1 or self.max_actions_per_episode < 1:
            raise ValueError("turn and action limits must be >= 1")


def check_action_noise(p: float) -> None:
    """Raise ValueError unless an `expert_action_noise` lies in [0, 1]."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"expert_action_noise must be in [0, 1], got {p!r}")


def action_noise_draws(p: float, n: int, choices: int, seed: int | None,
                       turn: int) -> tuple[np.ndarray, np.ndarray]:
    """A noisy expert's draws for `n` actions of one turn: which are replaced (each with probability `p`) and
    the index among `choices` each would take; they depend only on (episode seed, turn)."""
    rng = np.random.default_rng([0 if seed is None else int(seed), int(turn), 0xAC7])
    replace = rng.random(n) < p  # (n,)
    drawn = rng.integers(0, choices, size=n)  # (n,)
    return replace, drawn


@dataclass(frozen=True)
class PlanningExpertVariant(Variant):
    """A variant whose expert sentence can end by naming the moves it gives (`expert_reasoning`), and
    whose expert can take random moves (`expert_action_noise`).

    "plan" ends the sentence with the moves ("..., so I go Down then Right."), so a policy that imitates
    it picks its moves while reasoning; "state" stops before them, so the moves are picked in the answer
    only. With `expert_action_noise` = p, each move the expert gives is, with probability p, replaced by
    a uniformly drawn action word (possibly the same one); the sentence still describes the state
    truthfully, so demonstrations teach exact reasoning and a partly random action choice. The draw
    depends only on (episode seed, turn), so the expert is deterministic. Only the expert reads these
    fields; the game itself is unchanged.
    """

    expert_reasoning: str = "plan"
    expert_action_noise: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.expert_reasoning not in ("plan", "state"):
            raise ValueError(f"expert_reasoning must be 'plan' or 'state', got {self.expert_reasoning!r}")
        check_action_noise(self.expert_action_noise)

    def noisy_moves(self, moves: tuple[str, ...], vocabulary: Sequence[str], seed: int | None,
                    turn: int) -> tuple[str, ...]:
        """`moves` with each replaced by a random word of `vocabulary` with probability expert_action_noise."""
        if self.expert_action_noise == 0.0 or not moves:
            return moves
        replace, drawn = action_noise_draws(self.expert_action_noise, len(moves), len(vocabulary), seed, turn)
        return tuple(vocabulary[int(d)] if r else m for m, r, d in zip(moves, replace, drawn, strict=True))

    def expert_sentence(self, state: str, moves: str) -> str:
        """`state` (no final period) ended as this variant says: with ", so I <moves>." or with "."."""
        return f"{state}, so I {moves}." if self.expert_reasoning == "plan" else f"{state}."


class StepInfo(TypedDict, total=False):
    """The `info` dict of `reset` and `step`. The first four keys are always present after `step`."""

    success: bool
    action_is_valid: bool
    action_is_effective: bool
    num_actions: int
    invalid_reason: str  # "" when the turn was valid
    turn: int
    actions_left: int
    admissible_actions: list[str]
    seed: int


REQUIRED_STEP_KEYS: dict[str, type] = {
    "success": bool,
    "action_is_valid": bool,
    "action_is_effective": bool,
    "num_actions": int,
}


@dataclass(frozen=True)
class ActionOutcome:
    """What one parsed action did. `valid=False` means nothing changed and `message` says why."""

    valid: bool
    reward: float = 0.0
    effective: bool = False
    message: str = ""

    @staticmethod
    def invalid(message: str) -> ActionOutcome:
        return ActionOutcome(valid=False, message=message)


@dataclass(frozen=True)
class ExpertTurn:
    """One expert turn: a short templated reasoning sentence and the actions to take."""

    reasoning: str
    actions: tuple[str, ...] = field(default_factory=tuple)

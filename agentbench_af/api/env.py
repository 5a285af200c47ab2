"""The text-environment base class: Gymnasium's contract over text, with invalid-output handling.

Subclasses implement the game (`_new_game`, `_apply_action`, `_render_state`, ...); this class owns the
turn protocol shared by every environment (docs/environments.md): parsing the `<answer>` span, the action
limits, the format penalty, truncation, the typed `info`, and "invalid output never raises and never
changes the state". Left out: rendering modes other than text, and vectorised stepping (the rollout
engine steps many environments itself).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym
import numpy as np

from agentbench_af.api.spaces import TextSpace
from agentbench_af.api.types import ActionOutcome, ExpertTurn, StepInfo, Variant
from agentbench_af.formats import prompts
from agentbench_af.formats.parse import parse_response

V = TypeVar("V", bound=Variant)


def draw_option(options: dict[str, Any] | None) -> int:
    """`reset`'s `options["draw"]` (0 when absent): a non-negative int, else `ValueError` naming it."""
    draw = (options or {}).get("draw", 0)
    if isinstance(draw, bool) or not isinstance(draw, (int, np.integer)) or draw < 0:
        raise ValueError(f"reset option 'draw' must be a non-negative int, got {draw!r}")
    return int(draw)


class TextEnv(gym.Env[str, str], ABC, Generic[V]):
    """A multi-turn text environment. `step(text)` takes the model's whole response for one turn."""

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}  # an instance variable in gymnasium.Env
    #: one-line description shown by `agentbench-af envs`
    description: ClassVar[str] = ""
    #: the action words (or forms) shown in the system prompt
    action_help: ClassVar[str] = ""

    def __init__(self, variant: V, render_mode: str | None = "ansi") -> None:
        self.variant: V = variant
        self.render_mode = render_mode
        self.observation_space = TextSpace()
        self.action_space = TextSpace()
        self._seed: int | None = None
        self._turn = 0
        self._actions_used = 0
        self._started = False
        self._draw = 0  # reset(options={'draw': k}): which demonstration of the seed (see `draws_vary`)

    # ----------------------------------------------------------------- what subclasses implement
    @abstractmethod
    def _new_game(self, seed: int) -> None:
        """Build the instance for `seed` (fully determined by it)."""

    @abstractmethod
    def _apply_action(self, action: str) -> ActionOutcome:
        """Apply one action string (already trimmed). Unknown actions return `ActionOutcome.invalid`."""

    @abstractmethod
    def _render_state(self) -> str:
        """The current state as text (the observation without feedback lines)."""

    @property
    @abstractmethod
    def is_success(self) -> bool: ...

    @property
    def draws_vary(self) -> bool:
        """Whether `reset(seed=s, options={"draw": k})` plays another game for each k (a random choice beyond
        the seed's, such as WebShop's `relabel_ids` permutation; `sft.demo_draws`). False here: the draw is
        ignored and every draw of a seed is the same game."""
        return False

    @property
    def is_failure(self) -> bool:
        """A terminal state that is not a success (e.g. falling into a hole)."""
        return False

    @abstractmethod
    def expert_turn(self) -> ExpertTurn:
        """The expert's next turn from the current state (at most `max_actions_per_turn` actions)."""

    @classmethod
    @abstractmethod
    def rules(cls, variant: Variant) -> str:
        """Rules, symbols and action words for the system prompt."""

    def system_prompt(self) -> str:
        """The system prompt of this instance: its rules for its variant, the answer format, the action limit."""
        return prompts.system_prompt(self.rules(self.variant), self.variant.max_actions_per_turn)

    def admissible_actions(self) -> list[str] | None:
        """Actions that are valid now, for environments that list them (None: not listed)."""
        return None

    # ----------------------------------------------------------------- Gymnasium contract
    # StepInfo is a TypedDict (a dict at run time), which mypy does not count as the dict[str, Any] of
    # gymnasium.Env's signatures: the two overrides below are otherwise exact
    def reset(  # type: ignore[override]
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, StepInfo]:
        super().reset(seed=seed)
        if seed is None:
            lo, hi = self.variant.train_seeds
            seed = int(self.np_random.integers(lo, hi))
        self._seed = int(seed)
        self._draw = draw_option(options)
        self._turn = 0
        self._actions_used = 0
        self._started = True
        self._new_game(self._seed)
        info: StepInfo = {
            "success": bool(self.is_success),
            "action_is_valid": True,
            "action_is_effective": False,
            "num_actions": 0,
            "invalid_reason": "",
            "turn": 0,
            "actions_left": self.variant.max_actions_per_episode,
            "seed": self._seed,
        }
        self._add_admissible(info)
        return self._observation(feedback=""), info

    def step(self, action: str) -> tuple[str, float, bool, bool, StepInfo]:  # type: ignore[override]
        if not self._started:
            raise RuntimeError("call reset() before step()")
        v = self.variant
        self._turn += 1
        parsed = parse_response(action, max_actions=v.max_actions_per_turn)
        error = parsed.error or ""
        # too many actions or no answer: nothing is applied; otherwise apply up to the first invalid one
        to_apply = list(parsed.actions) if not parsed.error else []
        reward, effective, applied = 0.0, False, 0
        for act in to_apply:
            if self._actions_used >= v.max_actions_per_episode or self._terminal():
                break
            outcome = self._safe_apply(act)
            if not outcome.valid:
                error = outcome.message or f"invalid action: {act[:60]!r}"
                break
            applied += 1
            self._actions_used += 1
            reward += float(outcome.reward)
            effective = effective or outcome.effective
        valid = not error
        if not valid:
            reward += v.format_penalty
        terminated = self._terminal()
        truncated = not terminated and (
            self._turn >= v.max_turns or self._actions_used >= v.max_actions_per_episode
        )
        info: StepInfo = {
            "success": bool(self.is_success),
            "action_is_valid": valid,
            "action_is_effective": bool(effective),
            "num_actions": applied,
            "invalid_reason": error,
            "turn": self._turn,
            "actions_left": v.max_actions_per_episode - self._actions_used,
            "seed": int(self._seed or 0),
        }
        self._add_admissible(info)
        feedback = f"Invalid: {error}" if error else ""
        return self._observation(feedback), float(reward), bool(terminated), bool(truncated), info

    def render(self) -> str:
        return self._render_state()

    # ----------------------------------------------------------------- helpers
    @property
    def seed_used(self) -> int | None:
        return self._seed

    @property
    def turn(self) -> int:
        return self._turn

    @property
    def actions_left(self) -> int:
        return self.variant.max_actions_per_episode - self._actions_used

    def _terminal(self) -> bool:
        return bool(self.is_success or self.is_failure)

    def _safe_apply(self, act: str) -> ActionOutcome:
        if not act.isprintable():
            return ActionOutcome.invalid("the action has control characters")
        return self._apply_action(act)

    def _observation(self, feedback: str) -> str:
        parts = [feedback] if feedback else []
        parts.append(self._render_state())
        adm = self.admissible_actions()
        if adm is not None:
            parts.append("Available actions: " + ", ".join(adm))
        return "\n".join(parts)

    def _add_admissible(self, info: StepInfo) -> None:
        adm = self.admissible_actions()
        if adm is not None:
            info["admissible_actions"] = list(adm)

    def clone_rng(self) -> np.random.Generator:
        """A generator derived from the episode seed, for stochastic dynamics that must replay."""
        return np.random.default_rng(self._seed)

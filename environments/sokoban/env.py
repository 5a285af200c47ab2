"""Sokoban over text: rooms from the reverse-play generator, pushes only, RAGEN's symbols and rewards.

Left out: deadlock detection as an end signal. A room made unsolvable (a box in a corner, say) is not
terminal; the episode goes on until a turn or action limit truncates it.
"""

from __future__ import annotations

from collections.abc import Sized

from agentbench_af.api import ActionOutcome, ExpertTurn, TextEnv, Variant
from agentbench_af.environments.sokoban.generator import generate_puzzle
from agentbench_af.environments.sokoban.room import ACTIONS, Layout, parse_room, render
from agentbench_af.environments.sokoban.solver import solve
from agentbench_af.environments.sokoban.variants import SokobanVariant

_ACTION_IDS = {name.lower(): i for i, name in enumerate(ACTIONS)}
ON_TARGET_REWARD, SOLVED_REWARD = 1.0, 10.0  # the step reward is the variant's `step_reward` (-0.1)
_UNKNOWN = f"use one of {', '.join(ACTIONS)}"


def _plural(noun: str, items: Sized) -> str:
    if len(items) == 1:
        return noun
    return noun + ("es" if noun.endswith("x") else "s")


class SokobanEnv(TextEnv[SokobanVariant]):
    description = "Push every box X onto a target O in a walled room."
    action_help = "Up, Down, Left, Right"

    def __init__(self, variant: SokobanVariant | None = None, render_mode: str | None = "ansi") -> None:
        super().__init__(variant or SokobanVariant(), render_mode)
        self._layout: Layout | None = None
        self._targets: frozenset[int] = frozenset()
        self._player = 0
        self._boxes: set[int] = set()
        self._on_target = 0
        self._plans: dict[tuple[int, tuple[int, ...]], tuple[int, ...]] = {}  # state -> optimal rest

    @classmethod
    def rules(cls, variant: Variant) -> str:
        return (
            "You are solving the Sokoban puzzle. You are the player P and you must push every box X onto a "
            "target O. Moving into a box pushes it one cell in the same direction, unless a wall or another "
            "box is behind it. You cannot pull boxes, and you cannot walk through walls.\n"
            "Symbols: # is a wall, _ is floor, O is a target, X is a box, √ is a box on a target, "
            "P is you, S is you on a target.\n"
            "Actions: Up, Down, Left, Right."
        )

    # ----------------------------------------------------------------- the game
    def _new_game(self, seed: int) -> None:
        puzzle = generate_puzzle(self.variant, seed)
        self._load(puzzle.layout, puzzle.player, puzzle.boxes)
        self._remember(puzzle.player, puzzle.boxes, puzzle.solution)

    def set_room(self, text: str) -> None:
        """Replace the current room by one in text form (`room.parse_room`), after `reset`: for tests and demos.

        Turn and action counters are kept; the expert's remembered plans are dropped.
        """
        self._load(*parse_room(text))

    def _load(self, layout: Layout, player: int, boxes: tuple[int, ...]) -> None:
        self._layout = layout
        self._targets = frozenset(layout.targets)
        self._player = player
        self._boxes = set(boxes)
        self._on_target = len(self._boxes & self._targets)
        self._plans = {}

    def _apply_action(self, action: str) -> ActionOutcome:
        a = _ACTION_IDS.get(action.strip().lower())
        if a is None:
            return ActionOutcome.invalid(f"unknown action {action[:40]!r}; {_UNKNOWN}")
        layout = self._layout
        assert layout is not None
        d = layout.deltas[a]
        q = self._player + d
        step = self.variant.step_reward
        if q not in layout.floor:
            return ActionOutcome(valid=True, reward=step, effective=False)
        boxes = self._boxes
        if q not in boxes:
            self._player = q
            return ActionOutcome(valid=True, reward=step, effective=True)
        b2 = q + d
        if b2 not in layout.floor or b2 in boxes:
            return ActionOutcome(valid=True, reward=step, effective=False)
        boxes.remove(q)
        boxes.add(b2)
        self._player = q
        change = (b2 in self._targets) - (q in self._targets)
        self._on_target += change
        reward = step + ON_TARGET_REWARD * change
        if self._on_target == len(self._targets):
            reward += SOLVED_REWARD
        return ActionOutcome(valid=True, reward=reward, effective=True)

    @property
    def is_success(self) -> bool:
        return bool(self._targets) and self._on_target == len(self._targets)

    def _render_state(self) -> str:
        if self._layout is None:
            return ""
        return render(self._layout, self._player, self._boxes)

    # ----------------------------------------------------------------- the expert
    def _remember(self, player: int, boxes: tuple[int, ...], plan: tuple[int, ...]) -> None:
        """Store the optimal rest of `plan` for every state along it."""
        layout = self._layout
        assert layout is not None
        bx = set(boxes)
        for i, a in enumerate(plan):
            self._plans[(player, tuple(sorted(bx)))] = plan[i:]
            d = layout.deltas[a]
            player += d
            if player in bx:
                bx.remove(player)
                bx.add(player + d)

    def expert_turn(self) -> ExpertTurn:
        """The next actions of an optimal solution from here (searched within the actions left)."""
        layout = self._layout
        assert layout is not None
        state = (self._player, tuple(sorted(self._boxes)))
        plan = self._plans.get(state)
        if plan is None:
            plan = solve(layout, *state, max_actions=max(self.actions_left, 0)) or ()
            self._remember(*state, plan)
        where = f"I am at {self._spots([self._player])}"
        sentence = self.variant.expert_sentence
        if not plan:
            (move,) = self.variant.noisy_moves((self._first_effective(),), ACTIONS, self.seed_used, self.turn)
            reasoning = sentence(
                f"{where}. No solution fits the {self.actions_left} actions left", f"just try {move}"
            )
            return ExpertTurn(reasoning=reasoning, actions=(move,))
        moves = tuple(ACTIONS[a] for a in plan[: self.variant.max_actions_per_turn])
        moves = self.variant.noisy_moves(moves, ACTIONS, self.seed_used, self.turn)
        loose, free = sorted(self._boxes - self._targets), sorted(self._targets - self._boxes)
        reasoning = sentence(
            f"{where}; {_plural('box', loose)} off target: {self._spots(loose)}; "
            f"{_plural('free target', free)}: {self._spots(free)}. An optimal solution needs {len(plan)} more "
            f"{_plural('move', plan)}",
            f"go {' then '.join(moves)}",
        )
        return ExpertTurn(reasoning=reasoning, actions=moves)

    def _spots(self, cells: list[int]) -> str:
        assert self._layout is not None
        return " and ".join(f"row {r + 1} col {c + 1}" for r, c in map(self._layout.row_col, cells))

    def _first_effective(self) -> str:
        """The first action (in Up, Down, Left, Right order) that changes the state; Up if none does."""
        layout = self._layout
        assert layout is not None
        for name, d in zip(ACTIONS, layout.deltas, strict=True):
            q = self._player + d
            if q in layout.floor and (
                q not in self._boxes or (q + d in layout.floor and q + d not in self._boxes)
            ):
                return name
        return ACTIONS[0]

"""3x3 Lights Out over text: pressing a cell toggles it and its orthogonal neighbours; turn all lights off.

The board is a 9-bit integer (bit 3 * row + col is on). Every board is solvable, in at most 9 presses.
"""

from __future__ import annotations

from collections import deque
from functools import cache

import numpy as np

from agentbench_af.api import ActionOutcome, ExpertTurn, TextEnv, Variant
from agentbench_lightsout.variants import LightsOutVariant

SIZE = 3
CELLS = tuple(f"{col}{row}" for row in "123" for col in "abc")  # a1 b1 c1 a2 ... c3, bit order


def press_mask(cell: int) -> int:
    """The bits a press on `cell` toggles: the cell and its orthogonal neighbours."""
    r, c = divmod(cell, SIZE)
    mask = 0
    for dr, dc in ((0, 0), (1, 0), (-1, 0), (0, 1), (0, -1)):
        if 0 <= r + dr < SIZE and 0 <= c + dc < SIZE:
            mask |= 1 << ((r + dr) * SIZE + c + dc)
    return mask


@cache
def solution_moves() -> tuple[int, ...]:
    """For each board, the first press of a shortest solution (-1 for the solved board).

    Breadth-first search from the solved board: presses are their own inverse, so the press that first
    reaches a board from its parent also leads back towards solved."""
    first = [-2] * (1 << (SIZE * SIZE))
    first[0] = -1
    queue = deque([0])
    while queue:
        board = queue.popleft()
        for cell in range(SIZE * SIZE):
            nxt = board ^ press_mask(cell)
            if first[nxt] == -2:
                first[nxt] = cell
                queue.append(nxt)
    return tuple(first)


def shortest_solution(board: int) -> list[int]:
    """The presses of a shortest solution of `board`, in order."""
    moves, first = [], solution_moves()
    while board:
        moves.append(first[board])
        board ^= press_mask(first[board])
    return moves


class LightsOutEnv(TextEnv[LightsOutVariant]):
    description = "Turn every light off; a press toggles a cell and its neighbours."
    action_help = "a cell name such as b2 (columns a-c, rows 1-3)"

    def __init__(self, variant: LightsOutVariant | None = None, render_mode: str | None = "ansi") -> None:
        super().__init__(variant or LightsOutVariant(), render_mode)
        self._board = 0

    @classmethod
    def rules(cls, variant: Variant) -> str:
        return (
            "You are playing Lights Out on a 3x3 board. # is a light that is on, . one that is off. "
            "Pressing a cell toggles it and the cells directly above, below, left and right of it. "
            "Turn every light off.\n"
            "Actions: a cell name, column a-c then row 1-3, e.g. b2."
        )

    def _new_game(self, seed: int) -> None:
        rng = np.random.default_rng(seed)
        k = self.variant.scramble_presses
        if k == 0:
            self._board = int(rng.integers(1, 1 << (SIZE * SIZE)))  # any board but the solved one
        else:
            self._board = 0
            while self._board == 0:
                for cell in rng.choice(SIZE * SIZE, size=k, replace=False):
                    self._board ^= press_mask(int(cell))

    def _apply_action(self, action: str) -> ActionOutcome:
        name = action.strip().lower()
        if name not in CELLS:
            return ActionOutcome.invalid(f"unknown cell {action[:40]!r}; use a1 .. c3")
        self._board ^= press_mask(CELLS.index(name))
        return ActionOutcome(valid=True, reward=1.0 if self._board == 0 else 0.0, effective=True)

    @property
    def is_success(self) -> bool:
        return self._started and self._board == 0

    def _render_state(self) -> str:
        rows = ["  a b c"]
        for r in range(SIZE):
            lights = ("#" if self._board >> (r * SIZE + c) & 1 else "." for c in range(SIZE))
            rows.append(f"{r + 1} " + " ".join(lights))
        return "\n".join(rows)

    def expert_turn(self) -> ExpertTurn:
        path = shortest_solution(self._board)
        presses = tuple(CELLS[cell] for cell in path[: self.variant.max_actions_per_turn])
        lit = bin(self._board).count("1")
        reasoning = (f"{lit} lights are on and the shortest solution needs {len(path)} presses, "
                     f"so I press {' then '.join(presses) or 'nothing'}.")
        return ExpertTurn(reasoning=reasoning, actions=presses)

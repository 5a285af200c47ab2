"""Sudoku 4x4 over text: place digits until the grid matches the puzzle's unique solution.

Rewards (per placement, summed over a turn): `correct_reward` the first time a cell gets its solution
digit (so overwriting and re-placing cannot farm it), `conflict_reward` for a wrong digit that repeats
one in its row, column or box, 0 for a wrong digit that does not, plus `solved_bonus` on the placement
that completes the solution. A placed digit can be overwritten; writing the digit a cell already holds
is valid but changes nothing (reward 0, not effective). Givens cannot be changed (invalid). Left out:
erasing a cell, pencil marks, and a failure state (a wrong grid can always be fixed within the limits).
"""

from __future__ import annotations

from agentbench_af.api import ActionOutcome, ExpertTurn, TextEnv, Variant
from agentbench_af.environments.sudoku.expert import expert_moves, noisy_digits
from agentbench_af.environments.sudoku.generator import generate_puzzle
from agentbench_af.environments.sudoku.grid import CELLS, COL_OF, ROW_OF, SIZE, cell_name
from agentbench_af.environments.sudoku.text import conflicts, parse_placement, render
from agentbench_af.environments.sudoku.variants import SudokuVariant


class SudokuEnv(TextEnv[SudokuVariant]):
    description = "Fill a 4x4 Sudoku so that every row, column and 2x2 box holds 1-4 exactly once."
    action_help = "R,C,N or place N at row R col C (1-based)"

    def __init__(self, variant: SudokuVariant | None = None, render_mode: str | None = "ansi") -> None:
        super().__init__(variant or SudokuVariant(), render_mode)
        self._solution: list[int] = []
        self._board: list[int] = []
        self._given: tuple[bool, ...] = ()
        self._rewarded: list[bool] = []  # cells that already earned correct_reward
        self._text: str | None = None  # the rendered board; None after a change, rebuilt when shown

    @classmethod
    def rules(cls, variant: Variant) -> str:
        symbols = {
            "marked": "Symbols: [N] is a given digit (it cannot be changed), N is a digit you placed, *N* is a "
            "placed digit that repeats a digit in its row, column or box, . is an empty cell.",
            "plain": "Symbols: N is a digit (a given one cannot be changed), . is an empty cell.",
            "keyed": "Symbols: each cell is its letter (a to p in reading order) and its digit N (a given one "
            "cannot be changed) or . when empty.",
        }[getattr(variant, "board", "marked")]
        return (
            "You are solving a 4x4 Sudoku. Fill every empty cell with a digit 1-4 so that each row, each "
            "column and each 2x2 box holds 1, 2, 3 and 4 exactly once.\n"
            f"{symbols} Rows are numbered on the left, columns on top.\n"
            "Actions: R,C,N or 'place N at row R col C' (1-based) puts N in row R, column C; placing on a "
            "cell you filled before replaces its digit."
        )

    def _new_game(self, seed: int) -> None:
        puzzle = generate_puzzle(self.variant.clues, seed)
        self._solution = list(puzzle.solution)
        self._board = list(puzzle.givens)
        self._given = tuple(bool(d) for d in puzzle.givens)
        self._rewarded = [False] * CELLS
        self._text = None

    def _apply_action(self, action: str) -> ActionOutcome:
        parsed = parse_placement(action)
        if parsed is None:
            return ActionOutcome.invalid(
                f"cannot read {action[:40]!r}; write R,C,N or 'place N at row R col C'"
            )
        r, c, n = parsed
        if not (1 <= r <= SIZE and 1 <= c <= SIZE and 1 <= n <= SIZE):
            return ActionOutcome.invalid(f"row, column and number must each be 1-{SIZE}, got {r},{c},{n}")
        i = (r - 1) * SIZE + (c - 1)
        if self._given[i]:
            return ActionOutcome.invalid(
                f"{cell_name(i)} holds the given {self._board[i]}, which cannot change"
            )
        if self._board[i] == n:
            return ActionOutcome(valid=True, reward=0.0, effective=False)
        v = self.variant
        self._board[i] = n
        self._text = None
        if n == self._solution[i]:
            reward = 0.0 if self._rewarded[i] else v.correct_reward
            self._rewarded[i] = True
        else:
            reward = v.conflict_reward if conflicts(self._board, i, n) else 0.0
        if self.is_success:
            reward += v.solved_bonus
        return ActionOutcome(valid=True, reward=reward, effective=True)

    @property
    def is_success(self) -> bool:
        return bool(self._board) and self._board == self._solution

    def _render_state(self) -> str:
        if self._text is None:
            self._text = render(self.variant.board, self._board, self._given)
        return self._text

    def expert_turn(self) -> ExpertTurn:
        moves = expert_moves(self._board, self._solution, self.variant.max_actions_per_turn,
                             self.variant.expert_reasoning, keyed=self.variant.board == "keyed")
        if not moves:
            return ExpertTurn(reasoning="The grid is solved.")
        digits = noisy_digits([n for _, n, _ in moves], self.variant.expert_action_noise, self.seed_used, self.turn)
        actions = tuple(f"{ROW_OF[i] + 1},{COL_OF[i] + 1},{n}" for (i, _, _), n in zip(moves, digits, strict=True))
        return ExpertTurn(reasoning=" ".join(reason for _, _, reason in moves), actions=actions)

    @property
    def board(self) -> tuple[int, ...]:
        """The current digits, row-major, 0 for an empty cell."""
        return tuple(self._board)

    @property
    def solution(self) -> tuple[int, ...]:
        return tuple(self._solution)

    @property
    def givens(self) -> tuple[bool, ...]:
        """Which cells are given."""
        return self._given

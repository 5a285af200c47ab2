"""Sudoku 4x4 variants (ids registered on import): difficulty by the number of given cells."""

from dataclasses import dataclass

from agentbench_af.api import Variant, register
from agentbench_af.api.types import check_action_noise

CELLS = 16
MIN_UNIQUE_CLUES = 4  # no 4x4 Sudoku with fewer givens has a unique solution
EXPERT_REASONINGS = ("singles", "scan", "units", "unit-scan")
BOARDS = ("marked", "plain", "keyed")


@dataclass(frozen=True)
class SudokuVariant(Variant):
    clues: int = 10  # given cells; the other 16 - clues are to be filled
    correct_reward: float = 1.0  # the first time a cell gets its solution digit
    conflict_reward: float = -0.1  # a wrong digit that repeats one in its row, column or box (RAGEN)
    solved_bonus: float = 10.0  # added on the placement that completes the solution
    max_turns: int = 8
    max_actions_per_turn: int = 2
    max_actions_per_episode: int = 16
    # the expert's sentence for a placement: "singles" names the rule ("Only 4 fits at row 1 col 3: its
    # row, column and box hold the other digits."); "scan" lists what the cell's row, column and box hold
    # ("row 1 col 3: row 2 1, col 3, box 2 3 1, so 4."), so the digit follows from digits in the text;
    # "units" fills the last empty cell of a row, column or box first ("row 2 has 3 . 1 4: 2 goes at
    # col 2."), so most placements read one line of the board; "unit-scan" (keyed board only) takes the same full
    # houses but writes every unit it reads on the way with its count of empty cells ("row 1 has a2 b1 c4 d3 so
    # 0 empty. row 2 ..."), so the unit is chosen after it is read
    expert_reasoning: str = "singles"
    # the board's text: "marked" shows givens as [N] and conflicts as *N*; "plain" writes every cell as one
    # character with single spaces between (givens, placed digits and conflicts alike), so a byte-level
    # tokenizer gives each cell one token at a fixed place in its line (for tiny policies); "keyed" writes
    # every cell as its letter a-p (reading order) and its digit ("a4 b. | c. d2"), and the `units` expert
    # then lists a unit's cells the same way ("row 1 has a4 b. c. d2 so ..."), so a policy copies each
    # digit from after the same letter on the board instead of locating it by position (for tiny policies)
    board: str = "marked"
    # with this probability each placement the expert gives writes a uniformly drawn digit (possibly the right one)
    # at its cell, while its sentence stays that of the right digit; its next turn then fixes the cell ("The 2 at
    # row 1 col 3 is wrong; it must be 4."), so demonstrations show turns after an error. Only the expert reads it
    expert_action_noise: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_action_noise(self.expert_action_noise)
        if self.expert_reasoning not in EXPERT_REASONINGS:
            raise ValueError(f"expert_reasoning must be one of {EXPERT_REASONINGS}, got {self.expert_reasoning!r}")
        if self.board not in BOARDS:
            raise ValueError(f"board must be one of {BOARDS}, got {self.board!r}")
        if self.expert_reasoning == "unit-scan" and self.board != "keyed":
            raise ValueError(f"expert_reasoning='unit-scan' spells cells as the keyed board does: set board='keyed' "
                             f"(got board={self.board!r})")
        if not MIN_UNIQUE_CLUES <= self.clues < CELLS:
            raise ValueError(f"clues must be in [{MIN_UNIQUE_CLUES}, {CELLS - 1}], got {self.clues}")
        budget = min(self.max_actions_per_episode, self.max_turns * self.max_actions_per_turn)
        if CELLS - self.clues > budget:
            raise ValueError(
                f"{CELLS - self.clues} empty cells do not fit the action budget of {budget} placements"
            )


_ENTRY = "agentbench_af.environments.sudoku.env:SudokuEnv"

VARIANTS: dict[str, tuple[SudokuVariant, str]] = {
    "Sudoku-4x4-10clues-v0": (SudokuVariant(clues=10), "Random 4x4 Sudoku with 10 givens (paper setting)."),
    "Sudoku-4x4-8clues-v0": (SudokuVariant(clues=8), "Random 4x4 Sudoku with 8 givens."),
    "Sudoku-4x4-6clues-v0": (SudokuVariant(clues=6), "Random 4x4 Sudoku with 6 givens (hardest)."),
}

for _id, (_variant, _desc) in VARIANTS.items():
    register(_id, _ENTRY, _variant, _desc)

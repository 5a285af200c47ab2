"""Puzzle generator: a random full grid, then givens removed in random order while the solution stays unique.

The full grid is drawn uniformly from all 288 valid 4x4 grids. Cells are tried for removal in a random
order; a removal is kept only if the solver still finds exactly one completion. When the removals end
above the clue count (a minimal puzzle with more givens), the generator draws again with the next
sub-seed. Everything derives from `numpy.random.SeedSequence([seed, attempt])`, so a seed names one
puzzle on every machine. Left out: difficulty grading beyond the clue count, and symmetric clue layouts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentbench_af.environments.sudoku.grid import CELLS
from agentbench_af.environments.sudoku.solver import Grid, all_full_grids, count_solutions

MAX_DRAWS = 1000


@dataclass(frozen=True)
class Puzzle:
    givens: Grid  # 0 where the cell is to be filled
    solution: Grid


def remove_clues(solution: Grid, clues: int, order: list[int]) -> Grid | None:
    """Empty cells of `solution` in `order` while the puzzle stays unique; None if it sticks above `clues`."""
    grid = list(solution)
    left = CELLS
    for i in order:
        if left == clues:
            break
        grid[i] = 0
        if count_solutions(grid, 2) == 1:
            left -= 1
        else:
            grid[i] = solution[i]
    return tuple(grid) if left == clues else None


def generate_puzzle(clues: int, seed: int) -> Puzzle:
    """The puzzle for `seed` with exactly `clues` givens and a unique solution."""
    grids = all_full_grids()
    for attempt in range(MAX_DRAWS):
        rng = np.random.default_rng(np.random.SeedSequence([seed, attempt]))
        solution = grids[int(rng.integers(len(grids)))]
        givens = remove_clues(solution, clues, rng.permutation(CELLS).tolist())
        if givens is not None:
            return Puzzle(givens, solution)
    raise RuntimeError(f"no unique 4x4 Sudoku with {clues} clues for seed {seed} in {MAX_DRAWS} draws")

"""Solver: depth-first search over bitmask candidates, the most constrained empty cell first.

A grid is a sequence of 16 ints (row-major, 0 = empty). `solutions` stops at `limit`, so
`count_solutions(g, 2)` is the cheap uniqueness test the generator needs. Left out: human-style
deduction (the expert's reasoning sentence is built in `expert.py`) and grids of other sizes.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from agentbench_af.environments.sudoku.grid import (
    BIT,
    BOX_OF,
    CELLS,
    COL_OF,
    DIGITS_IN,
    FULL,
    POPCOUNT,
    ROW_OF,
)

Grid = tuple[int, ...]
_ALLOWED = frozenset(range(5))  # 0 (empty) and the digits


def solutions(grid: Sequence[int], limit: int | None = None) -> list[Grid]:
    """Up to `limit` completions of `grid` (all when None); [] when its filled cells already clash."""
    if len(grid) != CELLS or not _ALLOWED.issuperset(grid):
        raise ValueError(f"a grid is {CELLS} ints in 0..4, got {list(grid)!r}")
    rows, cols, boxes = [0] * 4, [0] * 4, [0] * 4
    for i, d in enumerate(grid):
        if d:
            b, r, c, x = BIT[d], ROW_OF[i], COL_OF[i], BOX_OF[i]
            if (rows[r] | cols[c] | boxes[x]) & b:
                return []
            rows[r] |= b
            cols[c] |= b
            boxes[x] |= b
    found: list[Grid] = []
    g = list(grid)
    _search(g, [i for i in range(CELLS) if not g[i]], rows, cols, boxes, limit, found)
    return found


def _search(
    g: list[int],
    empties: list[int],
    rows: list[int],
    cols: list[int],
    boxes: list[int],
    limit: int | None,
    found: list[Grid],
) -> bool:
    """Fill `empties` recursively, appending completions to `found`; True once `limit` is reached."""
    if not empties:
        found.append(tuple(g))
        return limit is not None and len(found) >= limit
    best = best_k = -1
    best_mask, best_n = 0, 5
    for k, i in enumerate(empties):
        mask = FULL & ~(rows[ROW_OF[i]] | cols[COL_OF[i]] | boxes[BOX_OF[i]])
        n = POPCOUNT[mask]
        if n < best_n:
            best, best_k, best_mask, best_n = i, k, mask, n
            if n <= 1:
                break
    if best_n == 0:
        return False
    rest = empties[:best_k] + empties[best_k + 1 :]
    r, c, x = ROW_OF[best], COL_OF[best], BOX_OF[best]
    stop = False
    for d in DIGITS_IN[best_mask]:
        b = BIT[d]
        g[best] = d
        rows[r] |= b
        cols[c] |= b
        boxes[x] |= b
        stop = _search(g, rest, rows, cols, boxes, limit, found)
        rows[r] ^= b
        cols[c] ^= b
        boxes[x] ^= b
        if stop:
            break
    g[best] = 0
    return stop


def count_solutions(grid: Sequence[int], limit: int = 2) -> int:
    """The number of completions, counted up to `limit`."""
    return len(solutions(grid, limit))


def solve(grid: Sequence[int]) -> Grid | None:
    """One completion of `grid`, or None."""
    found = solutions(grid, 1)
    return found[0] if found else None


@cache
def all_full_grids() -> tuple[Grid, ...]:
    """Every valid full 4x4 grid (288 of them), in search order."""
    return tuple(solutions([0] * CELLS))

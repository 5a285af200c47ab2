"""The expert: the next placements of the solution, each with a one-line templated reason.

It fixes wrongly placed digits first, then fills empty cells, preferring a cell whose digit is forced
by the correct digits on the board: a naked single (its row, column and box leave one digit) before a
hidden single (the digit fits nowhere else in a row, column or box), before any other cell (the
solution's digit, "the unique solution has N there"). With the `units` reasoning a full house (the last
empty cell of a row, then of a column, then of a box) comes before all of these, in reading order. The
`unit-scan` reasoning (keyed board) takes the same full houses but writes every unit it passes on the way, each
with its count of empty cells, so the unit is chosen after it is read.
Left out: deductions beyond singles.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentbench_af.api.types import action_noise_draws
from agentbench_af.environments.sudoku.grid import (
    BIT,
    BOXES,
    CELLS,
    COL_OF,
    COLS,
    FULL,
    PEERS,
    POPCOUNT,
    ROW_OF,
    ROWS,
    SIZE,
    UNITS_OF,
    cell_name,
)
from agentbench_af.environments.sudoku.text import keyed_cell

Move = tuple[int, int, str]  # (cell, digit, reason)


def _free(known: Sequence[int], i: int) -> int:
    """The candidate mask of cell `i` given the known digits of its peers."""
    used = 0
    for j in PEERS[i]:
        used |= BIT[known[j]]
    return FULL & ~used


def _reason(known: Sequence[int], i: int, n: int) -> tuple[int, str]:
    """(rank, sentence): 0 naked single, 1 hidden single, 2 neither."""
    if POPCOUNT[_free(known, i)] == 1:
        return 0, f"Only {n} fits at {cell_name(i)}: its row, column and box hold the other digits."
    for kind, number, unit in UNITS_OF[i]:
        if not any(j != i and not known[j] and _free(known, j) & BIT[n] for j in unit):
            return 1, f"In {kind} {number}, {n} fits only at {cell_name(i)}."
    return 2, f"The unique solution has {n} at {cell_name(i)}."


def scan_sentence(known: Sequence[int], i: int, n: int) -> str:
    """`row R col C: row .., col .., box .., so N.`: the known digits of the cell's three units (in
    reading order, the cell itself left out), then the digit."""
    held = [" ".join(str(known[j]) for j in cells if j != i and known[j]) or "none" for _, _, cells in UNITS_OF[i]]
    return f"{cell_name(i)}: row {held[0]}, col {held[1]}, box {held[2]}, so {n}."


def _where_in_unit(kind: str, i: int) -> str:
    """Where cell `i` sits in its `kind` of unit: a row names the column, a column the row, a box both."""
    return {"row": f"col {COL_OF[i] + 1}", "col": f"row {ROW_OF[i] + 1}", "box": cell_name(i)}[kind]


def full_house(
    known: Sequence[int], n_of: Sequence[int], keyed: bool = False, exclude: frozenset[int] = frozenset()
) -> tuple[int, str] | None:
    """The first unit (rows top to bottom, then columns, then boxes) with exactly one empty cell, as
    (cell, sentence): `row 2 has 3 . 1 4: 2 goes at col 2.` (the unit's digits in reading order, `.` for
    the empty cell; a column names the row, a box names row and column). `n_of[i]` is cell i's digit.
    `keyed` spells each cell as on the keyed board and ends the list with `so` (a `:` after `.` would
    join it into one token): `row 2 has e3 f. g1 h4 so 2 goes at col 2.`. A unit whose empty cell is in
    `exclude` (already taken this turn) is passed over."""
    for kind, units in (("row", ROWS), ("col", COLS), ("box", BOXES)):
        for number, cells in enumerate(units, start=1):
            empty = [i for i in cells if not known[i]]
            if len(empty) != 1 or empty[0] in exclude:
                continue
            i = empty[0]
            where = _where_in_unit(kind, i)
            if keyed:
                listed = " ".join(keyed_cell(j, known[j]) for j in cells)
                return i, f"{kind} {number} has {listed} so {n_of[i]} goes at {where}."
            digits = " ".join(str(known[j]) if known[j] else "." for j in cells)
            return i, f"{kind} {number} has {digits}: {n_of[i]} goes at {where}."
    return None


def unit_scan(shown: Sequence[int], n_of: Sequence[int], k: int) -> list[Move]:
    """Up to `k` full houses of the board `shown`, found by reading its units in order (rows top to bottom, then
    columns, then boxes) and writing each as the keyed board spells it with its count of empty cells:
    `row 1 has a2 b1 c4 d3 so 0 empty. row 2 has e. f. g1 h. so 3 empty. row 4 has m4 n. o2 p1 so 1 empty and
    3 goes at col 2.` Each move's reason holds the units read since the previous move; units read after the
    last move (the scan ran out) are added to its reason. A unit whose one empty cell an earlier move of this
    turn took reads `so 1 empty, taken.` Returns [] when no unit has one empty cell."""
    moves: list[Move] = []
    pieces: list[str] = []
    for kind, units in (("row", ROWS), ("col", COLS), ("box", BOXES)):
        for number, cells in enumerate(units, start=1):
            empty = [i for i in cells if not shown[i]]
            said = f"{kind} {number} has {' '.join(keyed_cell(j, shown[j]) for j in cells)} so {len(empty)} empty"
            if len(empty) == 1 and any(empty[0] == i for i, _, _ in moves):
                pieces.append(f"{said}, taken.")
            elif len(empty) == 1:
                i = empty[0]
                where = _where_in_unit(kind, i)
                pieces.append(f"{said} and {n_of[i]} goes at {where}.")
                moves.append((i, n_of[i], " ".join(pieces)))
                pieces = []
                if len(moves) == k:
                    return moves
            else:
                pieces.append(f"{said}.")
    if moves and pieces:  # the scan ran out after the last move: what it read belongs to that move's reason
        i, n, reason = moves[-1]
        moves[-1] = (i, n, " ".join([reason, *pieces]))
    return moves


def expert_moves(
    board: Sequence[int], solution: Sequence[int], k: int, reasoning: str = "singles", keyed: bool = False
) -> list[Move]:
    """Up to `k` placements that bring `board` closer to `solution`, wrong cells first. `reasoning`:
    `singles` (the rule's sentence), `scan` (`scan_sentence` over the digits known before the cell,
    earlier moves included), `units` (a `full_house` first, then as `singles`) or `unit-scan` (`unit_scan`'s
    full houses of the board as it stands before the turn, keyed; as keyed `units` when it has none). With `keyed` a `units`
    sentence spells its cells as the keyed board does and lists the board as it stands before the turn,
    so every digit it names can be read off the board: a turn's second placement must then be a full
    house of that board too, else the turn has one placement."""
    moves: list[Move] = [
        (i, solution[i], f"The {board[i]} at {cell_name(i)} is wrong; it must be {solution[i]}.")
        for i in range(CELLS)
        if board[i] and board[i] != solution[i]
    ][:k]
    known = [d if d == s else 0 for d, s in zip(board, solution, strict=True)]
    for i, n, _ in moves:
        known[i] = n
    shown = list(known)  # the correct digits on the board before this turn's placements
    if reasoning == "unit-scan" and len(moves) < k:
        scanned = unit_scan(shown, solution, k - len(moves))
        if scanned:
            return moves + scanned
        reasoning = "units"  # no full house on the board: what the keyed `units` expert does then
    while len(moves) < k:
        if reasoning == "units":
            # cells taken this turn are filled in `known`, so `exclude` matters only for `shown`
            house = full_house(shown if keyed else known, solution, keyed, frozenset(i for i, _, _ in moves))
            if house is not None:
                i, sentence = house
                known[i] = solution[i]
                moves.append((i, solution[i], sentence))
                continue
            if keyed and moves:  # a further cell would rest on digits the board does not show yet
                break
        best: tuple[int, int, str] | None = None
        for i in range(CELLS):
            if board[i] or known[i]:
                continue
            rank, sentence = _reason(known, i, solution[i])
            if best is None or rank < best[0]:
                best = (rank, i, sentence)
                if rank == 0:
                    break
        if best is None:
            break
        _, i, sentence = best
        sentence = scan_sentence(known, i, solution[i]) if reasoning == "scan" else sentence
        known[i] = solution[i]
        moves.append((i, solution[i], sentence))
    return moves


def noisy_digits(digits: Sequence[int], p: float, seed: int | None, turn: int) -> list[int]:
    """`digits`, each replaced with probability `p` by a uniformly drawn digit 1-`SIZE` (possibly the same); the
    draws depend only on (episode seed, turn), as the other experts' noise does."""
    if p == 0.0 or not digits:
        return list(digits)
    replace, drawn = action_noise_draws(p, len(digits), SIZE, seed, turn)
    return [int(d) + 1 if r else n for n, r, d in zip(digits, replace, drawn, strict=True)]

"""The expert: the next placements of the solution, each with a one-line templated reason.

It fixes wrongly placed digits first, then fills empty cells, preferring a cell whose digit is forced
by the correct digits on the board: a naked single (its row, column and box leave one digit) before a
hidden single (the digit fits nowhere else in a row, column or box), before any other cell (the
solution's digit, "the unique solution has N there"). Left out: deductions beyond singles.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentbench_af.environments.sudoku.grid import BIT, CELLS, FULL, PEERS, POPCOUNT, UNITS_OF, cell_name

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


def expert_moves(board: Sequence[int], solution: Sequence[int], k: int, scan: bool = False) -> list[Move]:
    """Up to `k` placements that bring `board` closer to `solution`, wrong cells first; with `scan`, a
    filled cell's sentence is `scan_sentence` over the digits known before it (earlier moves included)."""
    moves: list[Move] = [
        (i, solution[i], f"The {board[i]} at {cell_name(i)} is wrong; it must be {solution[i]}.")
        for i in range(CELLS)
        if board[i] and board[i] != solution[i]
    ][:k]
    known = [d if d == s else 0 for d, s in zip(board, solution, strict=True)]
    for i, n, _ in moves:
        known[i] = n
    while len(moves) < k:
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
        sentence = scan_sentence(known, i, solution[i]) if scan else sentence
        known[i] = solution[i]
        moves.append((i, solution[i], sentence))
    return moves

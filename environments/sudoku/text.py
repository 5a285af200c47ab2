"""The text side of Sudoku: reading placement actions and drawing the board.

Actions: `R,C,N` (optionally in parentheses) or `place N at row R col C` (`column` also accepted),
1-based, case-insensitive, spaces anywhere between the parts. Only ASCII digits count, so unicode
digits and noise are unreadable, never misread. Left out: erasing a cell (overwrite it instead) and
several placements in one action (use `||` between actions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from operator import itemgetter

from agentbench_af.environments.sudoku.grid import PEERS, SIZE

_NUM = r"([0-9]{1,6})"
_TRIPLE_RE = re.compile(rf"\s*{_NUM}\s*,\s*{_NUM}\s*,\s*{_NUM}\s*", re.ASCII)
_PLACE_RE = re.compile(
    rf"place\s*{_NUM}\s*at\s*row\s*{_NUM}\s*,?\s*col(?:umn)?\s*{_NUM}", re.ASCII | re.IGNORECASE
)

HEADER = "   1   2     3   4"
SEPARATOR = "  --------+--------"


def _board_template(header: str, separator: str) -> str:
    """A board as one format string: the header, then per row its index, two cells, a box bar, two cells
    (the separator line after row 2)."""
    rows = [f"{r} {{}} {{}} | {{}} {{}}" + ("\n" + separator if r == 2 else "") for r in range(1, SIZE + 1)]
    return "\n".join([header, *rows])


_TEMPLATE = _board_template(HEADER, SEPARATOR)  # the marked board (its last cell unpadded)
_PEER_VALUES = tuple(itemgetter(*peers) for peers in PEERS)  # board -> the digits of a cell's peers
# tokens by digit (0 = empty); the last column drops the padding a line would end with
_GIVEN = ("", *(f"[{d}]" for d in range(1, SIZE + 1)))
_CONFLICT = ("", *(f"*{d}*" for d in range(1, SIZE + 1)))
_PLACED = (" . ", *(f" {d} " for d in range(1, SIZE + 1)))
_PLACED_LAST = tuple(t.rstrip() for t in _PLACED)


def parse_placement(action: str) -> tuple[int, int, int] | None:
    """(row, col, number) as written (1-based, not range-checked), or None when unreadable."""
    inner = action[1:-1] if action.startswith("(") and action.endswith(")") else action
    m = _TRIPLE_RE.fullmatch(inner)
    if m:
        r, c, n = m.groups()
    else:
        m = _PLACE_RE.fullmatch(action)
        if not m:
            return None
        n, r, c = m.groups()
    return int(r), int(c), int(n)


def conflicts(board: Sequence[int], i: int, digit: int) -> bool:
    """Whether `digit` at cell `i` repeats a digit in its row, column or box."""
    return digit in _PEER_VALUES[i](board)


_PLAIN_TEMPLATE = _board_template("  1 2   3 4", "  ----+----")


def render_plain(board: Sequence[int]) -> str:
    """One character per cell (a digit, `.` empty), single spaces between: every cell is one token of a
    byte-level tokenizer at the same place in its line. Givens, placed digits and conflicts look alike."""
    return _PLAIN_TEMPLATE.format(*(str(d) if d else "." for d in board))


#: the letter naming each cell in `render_keyed`, row-major: a-d is row 1, e-h row 2, ...
CELL_KEYS = "abcdefghijklmnop"
_KEYED_TEMPLATE = _board_template("  1  2    3  4", "  ------+------")


def keyed_cell(i: int, digit: int) -> str:
    """Cell `i` as its letter and its digit (`.` empty): `f3`, `g.`."""
    return f"{CELL_KEYS[i]}{digit or '.'}"


def render_keyed(board: Sequence[int]) -> str:
    """Every cell as its own letter (a-p, reading order) and its digit or `.`: a byte-level tokenizer
    splits ` f3` into ` f` and `3`, so a text that repeats the letter finds the digit right after the
    same letter on the board (what a two-layer model learns to copy). Givens and placed digits look alike."""
    return _KEYED_TEMPLATE.format(*(keyed_cell(i, d) for i, d in enumerate(board)))


def render_board(board: Sequence[int], given: Sequence[bool]) -> str:
    """Rows with indices: `[N]` given, `N` placed, `*N*` placed but breaking a rule, `.` empty."""
    tokens = []
    for i, d in enumerate(board):
        if given[i]:
            tokens.append(_GIVEN[d])
        elif d and d in _PEER_VALUES[i](board):
            tokens.append(_CONFLICT[d])
        else:
            tokens.append(_PLACED_LAST[d] if i % SIZE == SIZE - 1 else _PLACED[d])
    return _TEMPLATE.format(*tokens)


def render(style: str, board: Sequence[int], given: Sequence[bool]) -> str:
    """The board in a variant's `board` style: `marked`, `plain` or `keyed`."""
    if style == "plain":
        return render_plain(board)
    if style == "keyed":
        return render_keyed(board)
    return render_board(board, given)

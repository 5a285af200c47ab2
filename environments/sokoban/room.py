"""The static part of a Sokoban room (walls, floor, targets) and its text form.

Cells are flat indices `row * size + col` into a square `size x size` grid whose border is wall.
`Layout.push_distance` gives, per floor cell, the fewest pushes that bring a box from there onto some
target ignoring the player and the other boxes; cells missing from it are dead (a box there can never
reach a target). Left out: non-square rooms and pull moves (forward play only pushes).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import cached_property

ACTIONS = ("Up", "Down", "Left", "Right")  # action ids 0..3

WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET = "#", "_", "O", "X", "√", "P", "S"


@dataclass(frozen=True)
class Layout:
    size: int
    floor: frozenset[int]  # every cell that is not wall (targets included)
    targets: tuple[int, ...]  # sorted

    @property
    def deltas(self) -> tuple[int, int, int, int]:
        """Index offsets of Up, Down, Left, Right."""
        return (-self.size, self.size, -1, 1)

    def row_col(self, cell: int) -> tuple[int, int]:
        return divmod(cell, self.size)

    @cached_property
    def push_distance(self) -> dict[int, int]:
        """Fewest pushes from each live cell to the nearest target (reverse pulls from the targets)."""
        floor, deltas = self.floor, self.deltas
        dist = dict.fromkeys(self.targets, 0)
        queue = deque(self.targets)
        while queue:
            cell = queue.popleft()
            for d in deltas:
                # a box at cell+d is pushed onto `cell` by a player standing at cell+2d
                prev, stand = cell + d, cell + 2 * d
                if prev in floor and stand in floor and prev not in dist:
                    dist[prev] = dist[cell] + 1
                    queue.append(prev)
        return dist

    @cached_property
    def base_cells(self) -> tuple[str, ...]:
        """One symbol per cell with no box or player drawn: wall, floor or target."""
        targets = set(self.targets)
        return tuple(
            (TARGET if i in targets else FLOOR) if i in self.floor else WALL for i in range(self.size**2)
        )


def render(layout: Layout, player: int, boxes: set[int] | tuple[int, ...]) -> str:
    """The room as text: one row per line, cells separated by a space."""
    cells = list(layout.base_cells)
    for b in boxes:
        cells[b] = BOX_ON_TARGET if cells[b] == TARGET else BOX
    cells[player] = PLAYER_ON_TARGET if cells[player] == TARGET else PLAYER
    n = layout.size
    return "\n".join(" ".join(cells[r * n : (r + 1) * n]) for r in range(n))


def parse_room(text: str) -> tuple[Layout, int, tuple[int, ...]]:
    """A room from its text form (spaces optional): (layout, player, sorted boxes). For tests and docs."""
    rows = [line.replace(" ", "") for line in text.strip().splitlines()]
    size = len(rows)
    if any(len(r) != size for r in rows):
        raise ValueError(f"a room must be square, got rows of lengths {[len(r) for r in rows]}")
    border = "".join(rows[0] + rows[-1] + "".join(r[0] + r[-1] for r in rows))
    if set(border) != {WALL}:
        raise ValueError("the border of a room must be wall")
    floor, targets, boxes, players = set(), [], [], []
    for i, ch in enumerate("".join(rows)):
        if ch not in (WALL, FLOOR, TARGET, BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET):
            raise ValueError(f"unknown room symbol {ch!r}")
        if ch != WALL:
            floor.add(i)
        if ch in (TARGET, BOX_ON_TARGET, PLAYER_ON_TARGET):
            targets.append(i)
        if ch in (BOX, BOX_ON_TARGET):
            boxes.append(i)
        if ch in (PLAYER, PLAYER_ON_TARGET):
            players.append(i)
    if len(players) != 1 or len(boxes) != len(targets) or not boxes:
        raise ValueError("a room needs one player and as many boxes as targets (at least one)")
    return Layout(size, frozenset(floor), tuple(sorted(targets))), players[0], tuple(sorted(boxes))

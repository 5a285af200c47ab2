"""Optimal Sokoban solving: A* over (player, boxes) states, counting every action (moves and pushes).

The heuristic is the sum over boxes of `Layout.push_distance` (each action pushes at most one box one
cell, so it never overestimates, and it changes by at most 1 per action, so it is consistent): the
first goal taken from the queue is an optimal solution. Boxes pushed onto dead cells are pruned.
Left out: deadlocks between several boxes (freeze and corral deadlocks) and transposition by player
reachability (macro pushes); the rooms here are small enough without them.
"""

from __future__ import annotations

import heapq

from agentbench_af.environments.sokoban.room import Layout

State = tuple[int, tuple[int, ...]]  # (player cell, sorted box cells)


def solve(
    layout: Layout, player: int, boxes: tuple[int, ...], max_actions: int | None = None
) -> tuple[int, ...] | None:
    """An optimal action-id sequence (0..3 = Up, Down, Left, Right) solving the room, or None.

    `max_actions` bounds the search: None is returned when no solution fits in that many actions.
    `()` means the boxes are already on the targets.
    """
    boxes = tuple(sorted(boxes))
    goal = layout.targets
    if boxes == goal:
        return ()
    dist = layout.push_distance
    if any(b not in dist for b in boxes):
        return None
    limit = max_actions if max_actions is not None else 1 << 30
    floor, deltas = layout.floor, layout.deltas
    start: State = (player, boxes)
    h0 = sum(dist[b] for b in boxes)
    if h0 > limit:
        return None
    parent: dict[State, tuple[State, int] | None] = {start: None}
    best_g = {start: 0}
    queue: list[tuple[int, int, State, int]] = [(h0, 0, start, h0)]  # (f, -g, state, h)
    while queue:
        _, neg_g, state, h = heapq.heappop(queue)
        g = -neg_g
        if g > best_g[state]:
            continue  # a stale entry
        p, bx = state
        if bx == goal:
            return _path(parent, state)
        g1 = g + 1
        for a, d in enumerate(deltas):
            q = p + d
            if q not in floor:
                continue
            h1 = h
            nbx = bx
            if q in bx:
                b2 = q + d
                if b2 not in dist or b2 in bx:
                    continue
                nbx = tuple(sorted(b2 if b == q else b for b in bx)) if len(bx) > 1 else (b2,)
                h1 = h - dist[q] + dist[b2]
            if g1 + h1 > limit:
                continue
            nxt = (q, nbx)
            if best_g.get(nxt, limit + 1) <= g1:
                continue
            best_g[nxt] = g1
            parent[nxt] = (state, a)
            heapq.heappush(queue, (g1 + h1, -g1, nxt, h1))
    return None


def _path(parent: dict[State, tuple[State, int] | None], state: State) -> tuple[int, ...]:
    actions: list[int] = []
    link = parent[state]
    while link is not None:
        state, a = link
        actions.append(a)
        link = parent[state]
    return tuple(reversed(actions))


def apply_actions(
    layout: Layout, player: int, boxes: tuple[int, ...], actions: tuple[int, ...]
) -> tuple[int, tuple[int, ...]]:
    """The (player, sorted boxes) after `actions`; blocked moves leave the state as it is."""
    bx = set(boxes)
    for a in actions:
        d = layout.deltas[a]
        q = player + d
        if q not in layout.floor:
            continue
        if q in bx:
            if q + d not in layout.floor or q + d in bx:
                continue
            bx.remove(q)
            bx.add(q + d)
        player = q
    return player, tuple(sorted(bx))

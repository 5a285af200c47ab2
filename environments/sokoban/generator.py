"""Sokoban rooms by reverse play from a solved state, deterministic per seed.

One draw: carve a floor by a random walk inside the wall border (the room topology), put the boxes on
randomly chosen targets and the player on another floor cell, then walk the player backwards for
`reverse_steps` moves, taking a move that pulls a box (when there is one) with probability `pull_prob`,
and keep the state along the walk whose boxes are most pushes away from the targets. Reversed, the
walk is a solution, so every draw is solvable; the solver then finds the optimal solution, and the draw
is kept only if it needs between `min_solution` and the variant's action budget. Draws that fail
(too little floor, boxes back on their targets, too short or too long) are redrawn with the next
sub-seed. Left out: gym-sokoban's exhaustive reverse search for the most scattered boxes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from agentbench_af.environments.sokoban.room import Layout
from agentbench_af.environments.sokoban.solver import solve
from agentbench_af.environments.sokoban.variants import SokobanVariant

MAX_DRAWS = 1000
_STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))


@dataclass(frozen=True)
class Puzzle:
    layout: Layout
    player: int
    boxes: tuple[int, ...]  # sorted
    solution: tuple[int, ...]  # an optimal solution (action ids)


@lru_cache(maxsize=16)
def _interior_steps(size: int) -> tuple[tuple[int, ...], ...]:
    """For each cell, the cells one step Up, Down, Left, Right, clamped to the inside of the border."""
    lo, hi = 1, size - 2
    return tuple(
        tuple(min(max(r + dr, lo), hi) * size + min(max(c + dc, lo), hi) for dr, dc in _STEPS)
        for r, c in (divmod(cell, size) for cell in range(size * size))
    )


def carve_floor(rng: random.Random, size: int, steps: int, turn_prob: float, widen_prob: float) -> set[int]:
    """Floor cells of a connected room: a random walk in the interior, sometimes carving a side cell too."""
    step = _interior_steps(size)
    rand = rng.random
    cell = (1 + int(rand() * (size - 2))) * size + 1 + int(rand() * (size - 2))
    d = int(rand() * 4)
    floor = {cell}
    for _ in range(steps):
        if rand() < turn_prob:
            d = int(rand() * 4)
        cell = step[cell][d]
        floor.add(cell)
        if rand() < widen_prob:
            floor.add(step[cell][int(rand() * 4)])
    return floor


def reverse_play(
    rng: random.Random, layout: Layout, player: int, boxes: set[int], steps: int, pull_prob: float
) -> tuple[int, tuple[int, ...]]:
    """Walk the player backwards `steps` moves (fewer if it is walled in), pulling boxes; (player, sorted boxes).

    Returns the state along the walk whose boxes are most pushes away from the targets (the latest
    such state on ties), so that a walk which wanders back does not waste the draw.
    """
    floor, deltas, dist = layout.floor, layout.deltas, layout.push_distance
    rand = rng.random
    best, best_score = (player, tuple(sorted(boxes))), 0
    score = 0
    for _ in range(steps):
        free = [d for d in deltas if player + d in floor and player + d not in boxes]
        if not free:
            break
        pulls = [d for d in free if player - d in boxes]
        pull = bool(pulls) and rand() < pull_prob
        options = pulls if pull else free
        d = options[int(rand() * len(options))]
        q, behind = player + d, player - d
        if pull:
            boxes.remove(behind)
            boxes.add(player)
            score += dist[player] - dist[behind]
        player = q
        if score >= best_score and score > 0:
            best, best_score = (player, tuple(sorted(boxes))), score
    return best


def generate_puzzle(variant: SokobanVariant, seed: int) -> Puzzle:
    """The room for `seed`: solvable in `min_solution`..`max_actions_per_episode` actions, not yet solved."""
    n, k = variant.size, variant.num_boxes
    budget = variant.max_actions_per_episode
    for attempt in range(MAX_DRAWS):
        sub_seed = int(np.random.SeedSequence([seed, attempt]).generate_state(1)[0])
        rng = random.Random(sub_seed)
        floor = carve_floor(rng, n, variant.floor_steps, variant.turn_prob, variant.widen_prob)
        if len(floor) < k + 2:
            continue
        cells = sorted(floor)
        targets = sorted(rng.sample(cells, k))
        layout = Layout(n, frozenset(floor), tuple(targets))
        player = rng.choice([c for c in cells if c not in targets])
        player, start = reverse_play(
            rng, layout, player, set(targets), variant.reverse_steps, variant.pull_prob
        )
        if start == layout.targets:
            continue
        solution = solve(layout, player, start, max_actions=budget)
        if solution is not None and max(variant.min_solution, 1) <= len(solution):
            return Puzzle(layout, player, start, solution)
    raise RuntimeError(f"no Sokoban room for seed {seed} in {MAX_DRAWS} draws ({variant})")

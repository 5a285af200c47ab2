"""Which environment seeds a batch of rollouts plays: distinct seeds of the variant's training range.

    seeds = draw_train_seeds(env, count, np.random.default_rng(step_seed))   # sorted, distinct

Used for the prompts of an RL step, the episodes of the SFT warm start and the diagnostic's groups.
A range no larger than `count` gives all of its seeds. `refill_seeds` orders the seeds a step may draw
after its first ones (dynamic sampling, `rollout.dynamic`). Left out: the evaluation range (`evaluate`
plays the first seeds of `variant.eval_seeds` in order).
"""

from __future__ import annotations

import numpy as np

from agentbench_af.api.env import TextEnv


def draw_train_seeds(env: TextEnv, count: int, rng: np.random.Generator) -> list[int]:
    """`count` distinct seeds drawn with `rng` from `env.variant.train_seeds`, sorted."""
    lo, hi = env.variant.train_seeds
    if hi - lo <= count:
        return list(range(lo, hi))
    return sorted(int(s) for s in rng.choice(np.arange(lo, hi), size=count, replace=False))


def refill_seeds(env: TextEnv, taken: list[int], limit: int, rng: np.random.Generator,
                 rank: int = 0, world_size: int = 1) -> list[int]:
    """Up to `limit` seeds of the training range not in `taken`, in an order drawn with `rng`, of which this
    rank gets every `world_size`-th from position `rank` on (the ranks' lists are disjoint; one process gets
    them all)."""
    lo, hi = env.variant.train_seeds
    free = np.setdiff1d(np.arange(lo, hi), np.asarray(taken, dtype=np.int64))
    order = free[rng.permutation(free.size)[:limit]]
    return [int(s) for s in order[rank::world_size]]


def part_seed(seed: int, index: int) -> int:
    """torch's seed for part `index` of a job seeded with `seed` and played in kept parts (a diagnostic's chunks,
    a zero-shot cell's blocks): `seed` itself for the first, so that one part is the unsplit job."""
    return seed if index == 0 else int(np.random.SeedSequence([seed, index]).generate_state(1)[0])

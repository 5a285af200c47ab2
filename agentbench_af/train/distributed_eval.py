"""Evaluation in a data-parallel run: the evaluation seeds split over ranks, the counts summed.

Each rank plays a contiguous block of the first `eval.episodes` evaluation seeds (the blocks differ in
size by at most one) with its own copy of the policy; the successes, rewards, valid and effective turns
and turn counts are summed over ranks, so every rank returns the `EvalResult` of the whole seed set.
Greedy evaluation is a function of the seed, up to the batch's floating-point differences (a rank
batches fewer episodes together than one process does). The step-0 result shared between runs of one
warm start (`warm_eval`) is read by rank 0 and broadcast, or computed by all ranks and stored by rank 0.
Left out: evaluating on rank 0 alone (the other ranks would idle for the whole evaluation).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from agentbench_af.evaluate.evaluate import EvalResult, eval_seeds, evaluate_policy
from agentbench_af.io import atomic_write_json
from agentbench_af.rollout.types import Trajectory
from agentbench_af.train.distributed import Ranks, broadcast_object, gather_objects


def seed_block(seeds: list[int], ranks: Ranks) -> list[int]:
    """This rank's contiguous block of `seeds`; blocks differ in size by at most one (some may be empty)."""
    return [int(s) for s in np.array_split(np.asarray(seeds, dtype=np.int64), ranks.world_size)[ranks.rank]]


def eval_counts(trajs: list[Trajectory]) -> dict[str, float]:
    turns = [t for tr in trajs for t in tr.turns]
    return {"episodes": len(trajs), "successes": sum(tr.success for tr in trajs),
            "reward": sum(tr.total_reward for tr in trajs), "turns": len(turns),
            "valid": sum(t.valid for t in turns), "effective": sum(t.effective for t in turns)}


def merge_counts(parts: list[dict[str, float]]) -> EvalResult:
    total = {k: sum(p[k] for p in parts) for k in parts[0]}
    n, turns = max(total["episodes"], 1), max(total["turns"], 1)
    return EvalResult(success=total["successes"] / n, mean_reward=total["reward"] / n,
                      valid_rate=total["valid"] / turns, effective_rate=total["effective"] / turns,
                      mean_turns=total["turns"] / n, episodes=int(total["episodes"]))


def evaluate_on_ranks(engine, tokenizer, chat, env_id: str, episodes: int, temperature: float, rollout,
                      env_kwargs: dict | None, ranks: Ranks) -> EvalResult:
    """`evaluate_policy` over all ranks (each plays its block of seeds); every rank gets the result."""
    if not ranks.active:
        return evaluate_policy(engine, tokenizer, chat, env_id, episodes, temperature, rollout, env_kwargs)[0]
    mine = seed_block(eval_seeds(env_id, episodes, env_kwargs), ranks)
    trajs = evaluate_policy(engine, tokenizer, chat, env_id, episodes, temperature, rollout, env_kwargs,
                            seeds=mine)[1] if mine else []
    return merge_counts(gather_objects(eval_counts(trajs), ranks))


def evaluation_row(engine, tokenizer, chat, cfg, ranks: Ranks, step: int, seed: int) -> dict:
    """The curve row of step `step`: the evaluation at `eval.temperature` (seeded by `seed`), plus the
    greedy one as `greedy_*` keys at step 0 and after the last update when `eval.also_greedy` is set."""
    torch.manual_seed(seed)
    result = evaluate_on_ranks(engine, tokenizer, chat, cfg.env.id, cfg.eval.episodes, cfg.eval.temperature,
                               cfg.rollout, cfg.env.overrides, ranks)
    row = {"step": step, **result.to_dict()}
    if cfg.eval.also_greedy and step in (0, cfg.rl.steps):
        greedy = evaluate_on_ranks(engine, tokenizer, chat, cfg.env.id, cfg.eval.episodes, 0.0, cfg.rollout,
                                   cfg.env.overrides, ranks)
        row.update({f"greedy_{k}": v for k, v in greedy.to_dict().items() if k != "episodes"})
    return row


def shared_eval_on_ranks(warm_dir: Path, key: str, compute: Callable[[], dict], ranks: Ranks) -> dict:
    """`warm_eval.shared_warm_eval` for a data-parallel run: rank 0 reads the stored result and
    broadcasts it; without one, every rank computes (a collective) and rank 0 stores it. Stored apart
    from one-process results (`<key>-world<N>.json`): batching per rank can move greedy outcomes."""
    path = Path(warm_dir) / "evals" / f"{key}-world{ranks.world_size}.json"
    stored = None
    if ranks.is_main:
        try:
            stored = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            stored = None
    stored = broadcast_object(stored, ranks)
    if stored is not None:
        return stored
    result = compute()
    if ranks.is_main:
        atomic_write_json(path, result)
    return result

"""Evaluation in a data-parallel run: the evaluation seeds split over ranks, the counts summed.

Each rank plays a contiguous block of the first `eval.episodes` evaluation seeds (the blocks differ in
size by at most one) with its own copy of the policy; its `EvalCounts` are summed over ranks (in rank
order), so every rank returns the `EvalResult` of the whole seed set.
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
from tqdm.auto import tqdm

from agentbench_af.evaluate.evaluate import EvalCounts, EvalResult, eval_seeds, evaluate_policy
from agentbench_af.io import atomic_write_json
from agentbench_af.train.distributed.ranks import Ranks, broadcast_object, gather_objects


def seed_block(seeds: list[int], ranks: Ranks) -> list[int]:
    """This rank's contiguous block of `seeds`; blocks differ in size by at most one (some may be empty)."""
    return [int(s) for s in np.array_split(np.asarray(seeds, dtype=np.int64), ranks.world_size)[ranks.rank]]


def evaluate_on_ranks(engine, tokenizer, chat, env_id: str, episodes: int, temperature: float, rollout,
                      env_kwargs: dict | None, ranks: Ranks, show_progress: bool = False) -> EvalResult:
    """`evaluate_policy` over all ranks (each plays its block of seeds; one process plays them all), its
    counts summed over ranks; every rank gets the result. `show_progress`: a bar of this rank's turns."""
    mine = seed_block(eval_seeds(env_id, episodes, env_kwargs), ranks)
    how = "greedy" if temperature == 0 else f"T = {temperature:g}"
    with tqdm(desc=f"eval {env_id} ({how}, {len(mine)} episodes)", unit="turn", disable=not show_progress,
              leave=False) as bar:
        trajs = evaluate_policy(engine, tokenizer, chat, env_id, episodes, temperature, rollout, env_kwargs,
                                seeds=mine, progress=bar.update)[1] if mine else []
    return sum(gather_objects(EvalCounts.of(trajs), ranks), EvalCounts()).result()


PassStore = Callable[[str, Callable[[], EvalResult]], EvalResult]  # (pass name, compute) -> result


def play_now(name: str, compute: Callable[[], EvalResult]) -> EvalResult:
    return compute()


def evaluation_row(engine, tokenizer, chat, cfg, ranks: Ranks, step: int, seed: int,
                   show_progress: bool = False, passes: PassStore = play_now) -> dict:
    """The curve row of step `step`: the evaluation at `eval.temperature` (seeded by `seed`), plus the
    greedy one as `greedy_*` keys at step 0 and after the last update when `eval.also_greedy` is set.
    `show_progress`: a progress bar of the turns played (a SmolLM2 evaluation takes an hour on a CPU);
    `passes(name, compute)`: where each pass comes from (default: played now; `warm_eval.EvalPasses.get`
    keeps finished passes of a warm start's evaluation so that a killed run does not play them again)."""
    torch.manual_seed(seed)
    result = passes(f"T{cfg.eval.temperature:g}", lambda: evaluate_on_ranks(
        engine, tokenizer, chat, cfg.env.id, cfg.eval.episodes, cfg.eval.temperature, cfg.rollout,
        cfg.env.overrides, ranks, show_progress))
    row = {"step": step, **result.to_dict()}
    if cfg.eval.also_greedy and step in (0, cfg.rl.steps):
        greedy = passes("greedy", lambda: evaluate_on_ranks(
            engine, tokenizer, chat, cfg.env.id, cfg.eval.episodes, 0.0, cfg.rollout, cfg.env.overrides, ranks,
            show_progress))
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

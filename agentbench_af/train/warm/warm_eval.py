"""The warm-start evaluation, computed once per (warm start, evaluation protocol) and shared by runs.

Every method of a sweep branches from one shared warm start and evaluates it at step 0 with the same
seeds (the evaluation is reseeded from the run seed and the step), so the step-0 result is the same
for all of them. The first run to get there stores it beside the warm start, in
`<warm_dir>/evals/<key>.json`; the others read it. The key is a digest of everything that decides the
result: environment id and overrides, evaluation episodes and temperature, the rollout settings, run
seed, device and dtype. Two workers computing it at once both write the same file atomically.
Left out: sharing later evaluations (they depend on the method).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from agentbench_af.io import atomic_write_json
from agentbench_af.train.config import TrainConfig


def warm_eval_key(cfg: TrainConfig, dtype: str) -> str:
    """A 16-hex-digit digest of the settings that decide the step-0 evaluation of a warm start."""
    data = {
        "env": {"id": cfg.env.id, "overrides": cfg.env.overrides},
        "eval": {"episodes": cfg.eval.episodes, "temperature": cfg.eval.temperature,
                 **({"also_greedy": True} if cfg.eval.also_greedy else {})},  # keys of older results unchanged
        # how training batches are drawn does not change the evaluation (and keys of older results stay)
        "rollout": {k: v for k, v in asdict(cfg.rollout).items() if not k.startswith("dynamic_sampling")},
        "seed": cfg.run.seed,
        "device": cfg.run.device,
        "dtype": dtype,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def shared_warm_eval(warm_dir: Path, key: str, compute: Callable[[], dict]) -> dict:
    """The stored step-0 evaluation for `key`, or `compute()` stored atomically and returned."""
    path = Path(warm_dir) / "evals" / f"{key}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):  # not stored yet, or unreadable: compute it and (over)write it
        result = compute()
    atomic_write_json(path, result)
    return result

"""The warm-start evaluation, computed once per (warm start, evaluation protocol) and shared by runs.

Every method of a sweep branches from one shared warm start and evaluates it at step 0 with the same
seeds (the evaluation is reseeded from the run seed and the step), so the step-0 result is the same
for all of them. The first run to get there stores it beside the warm start, in
`<warm_dir>/evals/<key>.json`; the others read it. The key is a digest of everything that decides the
result: environment id and overrides, evaluation episodes and temperature, the rollout settings, run
seed, device and dtype. Two workers computing it at once both write the same file atomically.
A SmolLM2 evaluation plays for an hour per pass on a CPU, so each finished pass (the one at
`eval.temperature`, then the greedy one) is also kept, in `<warm_dir>/evals/passes/<key>-<pass>.json`,
until the whole result is stored: a killed run resumes at the pass it was playing (`EvalPasses`).
Left out: sharing later evaluations (they depend on the method); keeping part of a pass (its episodes
are played together, turn by turn, so a pass has no finished part before its end).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from agentbench_af.config import HASH_DROP_AT_DEFAULT
from agentbench_af.evaluate.evaluate import EvalResult
from agentbench_af.io import kept_json
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train.config import TrainConfig

#: rollout fields added after keys were first written (config.HASH_DROP_AT_DEFAULT): left out at their default
_ADDED_ROLLOUT = {p.removeprefix("rollout.") for p in HASH_DROP_AT_DEFAULT if p.startswith("rollout.")}
_ROLLOUT_DEFAULTS = asdict(RolloutConfig())


def warm_eval_key(cfg: TrainConfig, dtype: str) -> str:
    """A 16-hex-digit digest of the settings that decide the step-0 evaluation of a warm start."""
    data = {
        "env": {"id": cfg.env.id, "overrides": cfg.env.overrides},
        "eval": {"episodes": cfg.eval.episodes, "temperature": cfg.eval.temperature,
                 **({"also_greedy": True} if cfg.eval.also_greedy else {})},  # keys of older results unchanged
        # how training batches are drawn does not change the evaluation (and keys of older results stay)
        "rollout": {k: v for k, v in asdict(cfg.rollout).items() if not k.startswith("dynamic_sampling")
                    and not (k in _ADDED_ROLLOUT and v == _ROLLOUT_DEFAULTS[k])},
        "seed": cfg.run.seed,
        "device": cfg.run.device,
        "dtype": dtype,
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def shared_warm_eval(warm_dir: Path, key: str, compute: Callable[[], dict]) -> dict:
    """The stored step-0 evaluation for `key`, or (not stored yet, or unreadable) `compute()` stored atomically."""
    return kept_json(Path(warm_dir) / "evals" / f"{key}.json", compute)[0]


class EvalPasses:
    """The finished passes of one warm start's step-0 evaluation (`key`), each kept in its own file.

    `get(name, compute)` returns the kept result of pass `name`, or computes, keeps and returns it;
    `clear()` removes this key's files once the whole result is stored. The greedy pass draws no random
    numbers, so reading a kept T = 1 pass and playing only the greedy one gives what one call gives.
    """

    def __init__(self, warm_dir: Path, key: str, announce: Callable[[str], object] = print) -> None:
        self.folder, self.key, self.announce = Path(warm_dir) / "evals" / "passes", key, announce

    def path(self, name: str) -> Path:
        return self.folder / f"{self.key}-{name}.json"

    def get(self, name: str, compute: Callable[[], EvalResult]) -> EvalResult:
        result, kept = kept_json(self.path(name), lambda: compute().to_dict(), lambda data: EvalResult(**data))
        if kept:
            self.announce(f"warm-start evaluation: the {name} pass was finished by an earlier call; read from {self.path(name)}")
        return result

    def clear(self) -> None:
        for path in self.folder.glob(f"{self.key}-*.json"):
            path.unlink(missing_ok=True)


def warm_start_eval(warm_dir: Path, key: str, evaluate: Callable[[Callable], dict],
                    announce: Callable[[str], object] = print) -> dict:
    """`shared_warm_eval` of `evaluate(passes)` (an evaluation row whose passes come from `passes(name,
    compute)`), each finished pass kept in an `EvalPasses` until the row is stored."""
    passes = EvalPasses(warm_dir, key, announce)
    row = shared_warm_eval(warm_dir, key, lambda: evaluate(passes.get))
    passes.clear()
    return row

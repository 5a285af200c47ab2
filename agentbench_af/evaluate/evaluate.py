"""Final-step success: the success rate on a fixed evaluation seed set, with its protocol recorded.

The evaluation seeds are the first `episodes` seeds of the environment variant's evaluation range,
disjoint from its training range, so every method and run is scored on the same instances. A result is
computed from `EvalCounts`, sums over episodes and turns that add up over any split of the seeds (a
data-parallel run sums its ranks' counts: `train.distributed.evaluation`).
Left out: best-of-n or pass@k metrics (the project reports final-step success only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields

import agentbench_af
from agentbench_af.formats.chat import ChatFormat
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import GenerationEngine
from agentbench_af.rollout.types import RolloutConfig, Trajectory


@dataclass(frozen=True)
class EvalResult:
    success: float
    mean_reward: float
    valid_rate: float  # mean over turns
    effective_rate: float  # mean over turns
    mean_turns: float
    episodes: int

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def eval_seeds(env_id: str, episodes: int, env_kwargs: dict | None = None) -> list[int]:
    env = agentbench_af.make(env_id, **(env_kwargs or {}))
    lo, hi = env.variant.eval_seeds
    if episodes > hi - lo:
        raise ValueError(f"{env_id} has only {hi - lo} evaluation seeds; asked for {episodes}")
    return list(range(lo, lo + episodes))


@dataclass(frozen=True)
class EvalCounts:
    """Sums over a set of evaluation episodes; `+` merges disjoint sets, `result()` gives the rates."""

    episodes: int = 0
    successes: int = 0
    reward: float = 0.0  # summed episode rewards
    turns: int = 0
    valid: int = 0  # turns with a valid action
    effective: int = 0  # turns whose action changed the state

    @classmethod
    def of(cls, trajs: list[Trajectory]) -> EvalCounts:
        turns = [t for tr in trajs for t in tr.turns]
        return cls(len(trajs), sum(tr.success for tr in trajs), sum(tr.total_reward for tr in trajs), len(turns),
                   sum(t.valid for t in turns), sum(t.effective for t in turns))

    def __add__(self, other: EvalCounts) -> EvalCounts:
        return EvalCounts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    def result(self) -> EvalResult:
        n, turns = max(self.episodes, 1), max(self.turns, 1)
        return EvalResult(success=self.successes / n, mean_reward=self.reward / n, valid_rate=self.valid / turns,
                          effective_rate=self.effective / turns, mean_turns=self.turns / n, episodes=self.episodes)


def summarise(trajs: list[Trajectory]) -> EvalResult:
    return EvalCounts.of(trajs).result()


def evaluate_policy(
    engine: GenerationEngine,
    tokenizer,
    chat: ChatFormat,
    env_id: str,
    episodes: int,
    temperature: float,
    rollout: RolloutConfig,
    env_kwargs: dict | None = None,
    seeds: list[int] | None = None,
    progress: Callable[[int], object] | None = None,
) -> tuple[EvalResult, list[Trajectory]]:
    """One episode per evaluation seed at `temperature` (0: greedy); `seeds`: a subset of the first
    `episodes` evaluation seeds (a data-parallel rank's share), default all of them; `progress(n)` after
    each turn with the turns just taken (a progress bar)."""
    import dataclasses

    cfg = dataclasses.replace(rollout, group_size=1, temperature=temperature)
    seeds = eval_seeds(env_id, episodes, env_kwargs) if seeds is None else seeds
    trajs = collect_rollouts(engine, tokenizer, chat, env_id, seeds, cfg, env_kwargs=env_kwargs, progress=progress)
    return summarise(trajs), trajs

"""A run's bookkeeping: its progress (the part of a checkpoint that is not tensors), the metrics row of a
step, the evaluation protocol, and the final `RunRecord`.

Left out: anything that decides what is trained (that is the loop's) and where files go (`run_folder`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentbench_af.config import config_hash, to_dict
from agentbench_af.formats.roles import ROLE_NAMES
from agentbench_af.models.packaged import packaged_model_source
from agentbench_af.results.fingerprint import environment_fingerprint
from agentbench_af.results.record import RunRecord, git_commit, package_versions
from agentbench_af.results.snapshot import BottleneckSnapshot, bottleneck_snapshot
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.train.bookkeeping.health import health_metrics
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.warm.warm_start import WarmStart


@dataclass
class Progress:
    """What the loop accumulates across steps; saved in checkpoints as plain data."""

    curve: list[dict[str, Any]] = field(default_factory=list)  # evaluations: step 0, every eval.every, last
    tokens_by_role: dict[str, int] = field(default_factory=dict)
    wall_time_s: float = 0.0
    cpu_time_s: float = 0.0  # this process's CPU seconds, all threads (resumes add theirs)
    warm_start_success: float | None = None
    warm_start_time_s: float = 0.0
    bottleneck_warm_start: dict[str, Any] | None = None  # the first batch's snapshot (warm-start policy)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Progress:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def add_step(self, row: dict[str, Any], seconds: float, cpu_seconds: float = 0.0) -> None:
        for role, n in row["tokens_by_role"].items():
            self.tokens_by_role[role] = self.tokens_by_role.get(role, 0) + n
        if "eval" in row:
            self.curve.append(row["eval"])
        self.wall_time_s += seconds
        self.cpu_time_s += cpu_seconds


def role_counts(batch: RolloutBatch) -> dict[str, int]:
    roles = batch.roles[batch.response_mask]  # (n,)
    return {ROLE_NAMES[r]: int((roles == r).sum()) for r in ROLE_NAMES if r != 0}


def step_row(done: int, batch: RolloutBatch, trajs: list, time_rollout_s: float, time_step_s: float, lr: float,
             update_metrics: dict[str, float]) -> dict[str, Any]:
    """The metrics.jsonl row of the step that completed `done` updates (its evaluation is added by the loop)."""
    return {
        "step": done,
        "rollout_success": float(batch.traj_success.float().mean()),
        "rollout_return": float(batch.traj_return.mean()),
        "rollout_valid_rate": float(np.mean([t.valid for tr in trajs for t in tr.turns] or [0.0])),
        "response_tokens": int(batch.response_mask.sum()),
        "tokens_by_role": role_counts(batch),
        "time_rollout_s": time_rollout_s,
        "time_step_s": time_step_s,
        "lr": lr,
        **update_metrics,
        **health_metrics(batch, trajs),
    }


def diagnostic_snapshot(cfg: TrainConfig, lm, device, batch: RolloutBatch, step: int) -> BottleneckSnapshot:
    """The diagnostic of a scored batch at the current policy (headline gradients included)."""
    return bottleneck_snapshot(batch, step, lm=lm, temperature=cfg.rollout.temperature, device=device,
                               format_role=cfg.credit.format_role, settings=to_dict(cfg.diagnostic))


def protocol(cfg: TrainConfig, env, warm: WarmStart | None = None) -> dict[str, Any]:
    """The evaluation protocol tables compare runs by; `sft_steps` is the warm start's actual budget."""
    lo, _ = env.variant.eval_seeds
    sft_steps = warm.sft_steps if warm is not None and warm.sft_steps is not None else cfg.sft.steps
    return {
        "eval_episodes": cfg.eval.episodes,
        "eval_temperature": cfg.eval.temperature,
        "eval_seeds": [lo, lo + cfg.eval.episodes],
        "train_seeds": list(env.variant.train_seeds),
        "rl_steps": cfg.rl.steps,
        "prompts_per_step": cfg.rl.prompts_per_step,
        "group_size": cfg.rollout.group_size,
        "rollout_temperature": cfg.rollout.temperature,
        "context_mode": cfg.rollout.context_mode,
        "max_new_tokens": cfg.rollout.max_new_tokens,
        "max_turns": getattr(env.variant, "max_turns", None),
        "sft_steps": sft_steps,
        "catalogue": getattr(env, "catalogue_name", None),
    }


def run_record(cfg: TrainConfig, num_params: int, env, warm: WarmStart, progress: Progress, final: dict[str, Any],
               bottleneck: dict[str, Any] | None, world_size: int = 1) -> RunRecord:
    return RunRecord(
        env_id=cfg.env.id, method=cfg.method, model=cfg.model.path or cfg.model.name, model_params=num_params,
        seed=cfg.run.seed, config_hash=config_hash(cfg), config=to_dict(cfg), protocol=protocol(cfg, env, warm),
        final_success=final["success"], final_metrics={k: v for k, v in final.items() if k != "step"},
        warm_start_success=progress.warm_start_success, curve=progress.curve, tokens_by_role=progress.tokens_by_role,
        wall_time_s=progress.wall_time_s, cpu_time_s=progress.cpu_time_s, bottleneck=bottleneck, warm_start=warm.to_record(),
        git_commit=git_commit(), versions=package_versions(),
        fingerprint={**environment_fingerprint(cfg.run.device), **packaged_model_source(cfg)},
        parallel={"world_size": world_size, "strategy": cfg.run.parallel if world_size > 1 else None},
    )

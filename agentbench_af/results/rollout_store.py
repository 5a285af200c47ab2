"""Saved rollout samples: a few groups of a step's `RolloutBatch` (ids, roles, log-probs, rewards),
stored compactly as a tensor file (`tensor_files`: read with `weights_only=True`, so a planted file cannot
run code) so diagnostics and debugging need no re-run.
Left out: text (decode the ids with the run's tokenizer, saved in its warm-start folder)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from agentbench_af.results.tensor_files import UnsafeFileError, load_tensor_file, save_tensor_file
from agentbench_af.rollout.batch import RolloutBatch


def select_groups(batch: RolloutBatch, max_groups: int) -> RolloutBatch:
    """The samples and trajectories of the first `max_groups` groups, renumbered from 0."""
    keep_traj = (batch.traj_group < max_groups).nonzero().squeeze(-1)  # (N',)
    remap = torch.full((batch.num_trajectories,), -1, dtype=torch.long)
    remap[keep_traj] = torch.arange(len(keep_traj))
    rows = (remap[batch.sample_traj] >= 0).nonzero().squeeze(-1)  # (B',)
    sub = batch.select(rows)
    return dataclasses.replace(
        sub,
        sample_traj=remap[sub.sample_traj],
        traj_group=batch.traj_group[keep_traj],
        traj_return=batch.traj_return[keep_traj],
        traj_success=batch.traj_success[keep_traj],
        turn_obs_key=None if batch.turn_obs_key is None else batch.turn_obs_key[keep_traj],
    ).crop()


def save_rollouts(batch: RolloutBatch, path: str | Path, step: int) -> Path:
    payload = {"step": step, **{f.name: getattr(batch, f.name) for f in dataclasses.fields(batch)}}
    payload["roles"] = payload["roles"].to(torch.int8)
    return save_tensor_file(payload, path)


def load_rollouts(path: str | Path) -> tuple[int, RolloutBatch]:
    payload = load_tensor_file(path)
    if not isinstance(payload, dict) or "step" not in payload:
        raise UnsafeFileError(f"cannot read {path}: not a rollout file written by agentbench-af")
    step = int(payload.pop("step"))
    names = {f.name for f in dataclasses.fields(RolloutBatch)}
    return step, RolloutBatch(**{k: v for k, v in payload.items() if k in names})

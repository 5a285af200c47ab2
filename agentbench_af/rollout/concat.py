"""`concat_batches`: one `RolloutBatch` from several, stacked in order.

Rows are padded on the right to the widest, trajectory ids and group ids offset so that they stay
distinct, observation keys padded with -1. Used for a data-parallel step's shares (in rank order) and for
a diagnostic sampled in chunks of groups.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import torch

from agentbench_af.rollout.batch import RolloutBatch

PAD_VALUES = {"turn_index": -1}  # every other (B, T) tensor pads with 0 / False
PER_SAMPLE_1D = ("sample_traj", "sample_order")
PER_TRAJECTORY = ("traj_group", "traj_return", "traj_success")


def _pad_columns(x: torch.Tensor, width: int, value: int) -> torch.Tensor:
    """(n, w) -> (n, width), new columns filled with `value` (any dtype, bool included)."""
    out = torch.full((x.shape[0], width), value, dtype=x.dtype)
    out[:, :x.shape[1]] = x
    return out


def concat_batches(batches: list[RolloutBatch], pad_token_id: int = 0) -> RolloutBatch:
    """The batches stacked in order (input ids pad with `pad_token_id`)."""
    if len(batches) == 1:
        return batches[0]
    width = max(int(b.input_ids.shape[1]) for b in batches)
    out: dict[str, Any] = {}  # tensors, and None for an optional field
    traj_offsets: list[int] = []
    group_offsets: list[int] = []
    t = g = 0
    for b in batches:
        traj_offsets.append(t)
        group_offsets.append(g)
        t += b.num_trajectories
        g += int(b.traj_group.max()) + 1 if b.num_trajectories else 0
    for f in fields(RolloutBatch):
        values = [getattr(b, f.name) for b in batches]
        if any(v is None for v in values):
            out[f.name] = None
        elif f.name == "sample_traj":
            out[f.name] = torch.cat([v + o for v, o in zip(values, traj_offsets, strict=True)])
        elif f.name == "traj_group":
            out[f.name] = torch.cat([v + o for v, o in zip(values, group_offsets, strict=True)])
        elif f.name in PER_SAMPLE_1D or f.name in PER_TRAJECTORY:
            out[f.name] = torch.cat(values)
        elif f.name == "turn_obs_key":
            k = max(int(v.shape[1]) for v in values)
            out[f.name] = torch.cat([_pad_columns(v, k, -1) for v in values])
        else:  # (B, T) per-token tensors
            pad = pad_token_id if f.name == "input_ids" else PAD_VALUES.get(f.name, 0)
            out[f.name] = torch.cat([_pad_columns(v, width, pad) for v in values])
    return RolloutBatch(**out)

"""`RolloutBatch`: the typed tensor value that flows from the rollout engine to credit assignment.

One row ("sample") is one token sequence the policy produced its tokens under: a whole trajectory in
`full` context mode, or one turn in `window` mode. Positions are token-aligned: `old_logprobs[b, t]`
is log p(input_ids[b, t] | input_ids[b, :t]) for generated positions and 0 elsewhere.
Left out: nothing model-specific (no text, no tokenizer); text lives in `Trajectory` records.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import torch


@dataclass
class RolloutBatch:
    """Tensors for B samples padded to T tokens (right padding)."""

    input_ids: torch.Tensor  # (B, T) long
    attention_mask: torch.Tensor  # (B, T) bool: real tokens
    response_mask: torch.Tensor  # (B, T) bool: tokens the policy generated (the loss positions)
    roles: torch.Tensor  # (B, T) int8: `formats.roles.Role` values; PROMPT wherever response_mask is False
    old_logprobs: torch.Tensor  # (B, T) float: rollout-policy log-prob of each generated token
    entropy: torch.Tensor  # (B, T) float: rollout-policy entropy at each generated position
    token_rewards: torch.Tensor  # (B, T) float: a turn's env reward on that turn's last generated token
    turn_index: torch.Tensor  # (B, T) long: turn number (0-based) of each generated token, -1 elsewhere
    sample_traj: torch.Tensor  # (B,) long: trajectory id of each sample (0..N_traj-1)
    sample_order: torch.Tensor  # (B,) long: order of the sample within its trajectory (0 in full mode)
    traj_group: torch.Tensor  # (N_traj,) long: group id (one prompt/seed, G rollouts) of each trajectory
    traj_return: torch.Tensor  # (N_traj,) float: undiscounted episode reward sum
    traj_success: torch.Tensor  # (N_traj,) bool: success at the final step
    ref_logprobs: torch.Tensor | None = None  # (B, T) float: frozen reference model, when used
    values: torch.Tensor | None = None  # (B, T) float: critic values at generated positions (gae)
    turn_obs_key: torch.Tensor | None = None  # (N_traj, max_turns) long: hash of each turn's observation, -1 pad

    @property
    def batch_size(self) -> int:
        return int(self.input_ids.shape[0])

    @property
    def num_trajectories(self) -> int:
        return int(self.traj_group.shape[0])

    def sample_group(self) -> torch.Tensor:
        """(B,) group id of each sample."""
        return self.traj_group[self.sample_traj]

    def to(self, device: torch.device | str) -> RolloutBatch:
        moved: dict[str, Any] = {  # tensors and the optional fields' None
            f.name: (getattr(self, f.name).to(device) if isinstance(getattr(self, f.name), torch.Tensor) else None)
            for f in fields(self)
        }
        return RolloutBatch(**moved)

    def select(self, rows: torch.Tensor) -> RolloutBatch:
        """Rows `rows` of every (B, ...) tensor; trajectory-level tensors are kept whole."""
        per_sample = {
            "input_ids", "attention_mask", "response_mask", "roles", "old_logprobs", "entropy",
            "token_rewards", "turn_index", "sample_traj", "sample_order", "ref_logprobs", "values",
        }
        updates = {}
        for name in per_sample:
            value = getattr(self, name)
            if value is not None:
                updates[name] = value[rows]
        return replace(self, **updates)

    def crop(self) -> RolloutBatch:
        """Drop trailing columns that are padding in every row."""
        width = int(self.attention_mask.sum(-1).max()) if self.batch_size else 0
        if width == self.input_ids.shape[1]:
            return self
        updates = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape[0] == self.batch_size and f.name != "turn_obs_key":
                updates[f.name] = value[:, :width]
        return replace(self, **updates)

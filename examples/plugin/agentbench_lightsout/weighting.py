"""The `last-action` token weighting: 1 on each turn's last action token, 0 on every other token."""

import torch

from agentbench_af.credit import CreditConfig, action_mask, register_weighting
from agentbench_af.rollout.batch import RolloutBatch


@register_weighting("last-action")
def last_action_token(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    act = action_mask(batch, cfg.format_role)  # (B, T) bool: action tokens of the responses
    weights = torch.zeros(act.shape, device=act.device)  # (B, T)
    row, col = act.nonzero(as_tuple=True)  # (M,)
    if row.numel() == 0:
        return weights
    turns = int(batch.turn_index.max()) + 1
    key = row * turns + batch.turn_index[row, col]  # (M,) one id per (sample row, turn)
    last = torch.full((int(key.max()) + 1,), -1, dtype=torch.long, device=act.device)
    last = last.scatter_reduce(0, key, col, reduce="amax")  # (rows * turns,) last action column
    keep = col == last[key]  # (M,)
    weights[row[keep], col[keep]] = 1.0
    return weights

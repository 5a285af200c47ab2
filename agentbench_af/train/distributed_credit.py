"""Credit assignment on one rank's share of a data-parallel batch, equal to the one-process credit.

Group statistics (grpo, rloo, gigpo-step) and per-trajectory ActFocus weights need nothing from other
ranks, since a prompt's rollouts stay on one rank. Two built-ins read the whole batch and get their batch
statistic from all ranks here: gae's whitening (the mean and variance over every generated token of the
global batch) and top-entropy (the ceil(fraction * M) highest-entropy tokens of the global batch, ties
broken by global row-major position: rank 0's rows first).
Left out: third-party estimators and weightings that read batch-wide statistics (they see the rank's share).
"""

from __future__ import annotations

import dataclasses
import math

import torch

from agentbench_af.credit import AdvantageOutput, CreditConfig, compute_advantages, compute_token_weights
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.train.distributed import Ranks, all_reduce, gather_objects


def global_whiten(values: torch.Tensor, mask: torch.Tensor, ranks: Ranks, eps: float = 1e-8) -> torch.Tensor:
    """(B, T) values whitened over the masked entries of every rank: (x - mean) / sqrt(var + eps), var
    Bessel-corrected, float64 statistics; zero off the mask, and everywhere when fewer than 2 entries."""
    x = values[mask].double()  # (M,)
    stats = all_reduce(torch.stack([x.new_tensor(float(x.numel())), x.sum(), (x * x).sum()]), ranks)  # (3,)
    n, total, squares = (float(v) for v in stats)
    out = torch.zeros_like(values)
    if n < 2:
        return out
    mean = total / n
    var = max(squares - n * mean * mean, 0.0) / (n - 1)
    out[mask] = ((x - mean) / math.sqrt(var + eps)).to(values.dtype)
    return out


def rank_advantages(batch: RolloutBatch, cfg: CreditConfig, ranks: Ranks) -> AdvantageOutput:
    """`compute_advantages` on this rank's share; gae whitens with the global statistics."""
    if not (ranks.active and cfg.estimator == "gae" and cfg.gae_whiten):
        return compute_advantages(batch, cfg)
    raw = compute_advantages(batch, dataclasses.replace(cfg, gae_whiten=False))
    return AdvantageOutput(global_whiten(raw.advantages, batch.response_mask, ranks), raw.returns)


def rank_token_weights(batch: RolloutBatch, cfg: CreditConfig, ranks: Ranks) -> torch.Tensor:
    """`compute_token_weights` on this rank's share; top-entropy selects over the global batch."""
    if not (ranks.active and cfg.weighting == "top-entropy"):
        return compute_token_weights(batch, cfg)
    mask = batch.response_mask
    weights = torch.zeros(mask.shape, device=mask.device)  # (B, T)
    row, col = mask.nonzero(as_tuple=True)  # (M,), row-major
    mine = batch.entropy[row, col].float().cpu()  # (M,)
    every = gather_objects(mine, ranks)  # world x (M_r,)
    total = sum(e.numel() for e in every)
    if total == 0:
        return weights
    keep = min(total, max(1, math.ceil(cfg.top_entropy_fraction * total - 1e-9)))
    order = torch.argsort(torch.cat(every), descending=True, stable=True)[:keep]  # (k,) global positions
    offset = sum(e.numel() for e in every[:ranks.rank])
    local = order[(order >= offset) & (order < offset + mine.numel())] - offset  # (k_r,)
    weights[row[local], col[local]] = 1.0
    return weights

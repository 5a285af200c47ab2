"""Vectorised grouped operations shared by the estimators and weightings (scatter-based, no Python loops).

Left out: ragged-tensor libraries (torch_scatter, nested tensors); plain `scatter_reduce` / `index_add_`
cover the sizes here on CPU and GPU.
"""

from __future__ import annotations

import torch

from agentbench_af.rollout.batch import RolloutBatch

EPS = 1e-6  # added to group stds before dividing


def compact_ids(ids: torch.Tensor) -> tuple[torch.Tensor, int]:
    """Arbitrary (N,) integer ids -> (N,) ids in 0..n_groups-1, and n_groups."""
    if ids.numel() == 0:
        return ids.long(), 0
    unique, inverse = torch.unique(ids, return_inverse=True)
    return inverse, int(unique.numel())


def group_sum(values: torch.Tensor, group: torch.Tensor, n_groups: int) -> torch.Tensor:
    """(N,) values, (N,) group ids in 0..n_groups-1 -> (n_groups,) sums."""
    return torch.zeros(n_groups, dtype=values.dtype, device=values.device).index_add_(0, group, values)


def group_all_equal(values: torch.Tensor, group: torch.Tensor, n_groups: int) -> torch.Tensor:
    """(N,) values, (N,) group ids in 0..n_groups-1 -> (n_groups,) bool: every value of the group is equal."""
    lo = torch.full((n_groups,), float("inf"), dtype=values.dtype, device=values.device)
    hi = torch.full((n_groups,), float("-inf"), dtype=values.dtype, device=values.device)
    lo = lo.scatter_reduce(0, group, values, reduce="amin", include_self=True)  # (G,)
    hi = hi.scatter_reduce(0, group, values, reduce="amax", include_self=True)  # (G,)
    return lo == hi


def normalise_in_groups(values: torch.Tensor, ids: torch.Tensor, by_std: bool) -> torch.Tensor:
    """(x - group mean) / (group std + EPS) per element (std with Bessel's correction, as verl and TRL).

    by_std=False only centres. Statistics are taken in float64 and the result returned in float32.
    Elements alone in their group, and groups whose values are all equal, get exactly 0: a mean that is
    one rounding step off (2.4 is not exact in binary) would otherwise give every element of such a
    group the same nonzero advantage, divided by a std of ~1e-16.
    """
    group, n = compact_ids(ids)
    x = values.double()  # (N,)
    count = group_sum(torch.ones_like(x), group, n)  # (G,)
    mean = group_sum(x, group, n) / count.clamp(min=1)  # (G,)
    centred = x - mean[group]  # (N,)
    if by_std:
        var = group_sum(centred**2, group, n) / (count - 1).clamp(min=1)  # (G,)
        centred = centred / (var.sqrt()[group] + EPS)
    informative = (count > 1) & ~group_all_equal(x, group, n)  # (G,)
    return torch.where(informative[group], centred, torch.zeros_like(centred)).float()  # (N,)


def broadcast_trajectory(batch: RolloutBatch, per_traj: torch.Tensor) -> torch.Tensor:
    """(N_traj,) values -> (B, T) with each sample's trajectory value on its generated tokens, 0 elsewhere."""
    per_sample = per_traj.float()[batch.sample_traj]  # (B,)
    mask = batch.response_mask
    return torch.where(
        mask, per_sample[:, None].expand_as(mask), torch.zeros((), device=mask.device)
    )  # (B, T)


def trajectory_token_order(
    batch: RolloutBatch,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The generated tokens of every trajectory in generation order.

    Returns (row, col, traj, rank), each (M,) for the M generated tokens, sorted by (trajectory,
    sample_order, position); `rank` is the token's index within its trajectory's generated tokens.
    """
    mask = batch.response_mask
    row, col = mask.nonzero(as_tuple=True)  # (M,), row-major
    if row.numel() == 0:
        empty = row.new_zeros(0)
        return empty, empty, empty, empty
    traj = batch.sample_traj[row]  # (M,)
    order = batch.sample_order[row]  # (M,)
    width = mask.shape[1]
    n_orders = int(order.max()) + 1
    key = (traj * n_orders + order) * width + col  # (M,)
    perm = torch.argsort(key, stable=True)
    row, col, traj = row[perm], col[perm], traj[perm]
    counts = torch.bincount(traj, minlength=batch.num_trajectories)  # (N_traj,)
    starts = torch.cumsum(counts, 0) - counts  # (N_traj,)
    rank = torch.arange(row.numel(), device=row.device) - starts[traj]  # (M,)
    return row, col, traj, rank


def grouped_softmax(scores: torch.Tensor, group: torch.Tensor, n_groups: int) -> torch.Tensor:
    """(M,) scores, (M,) group ids in 0..n_groups-1 -> (M,) softmax of the scores within each group."""
    if scores.numel() == 0:
        return scores
    fill = torch.full((n_groups,), float("-inf"), dtype=scores.dtype, device=scores.device)
    peak = fill.scatter_reduce(0, group, scores, reduce="amax", include_self=False)  # (G,)
    expd = torch.exp(scores - peak[group])  # (M,)
    total = torch.zeros(n_groups, dtype=scores.dtype, device=scores.device).scatter_add(
        0, group, expd
    )  # (G,)
    return expd / total[group]

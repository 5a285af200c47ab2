"""Per-step health metrics of an RL step: what a falling success curve is read from.

Pure functions of a scored `RolloutBatch` and its trajectories, merged into the step's metrics row
(`train.bookkeeping.record.step_row`) under `health/`:
- `entropy_<role>`: mean rollout-policy entropy (nats) over the generated tokens of each role;
- `kl_warm`, `kl_warm_<role>`: mean of log pi_old - log pi_warm over the sampled tokens, the k1 estimate
  of KL(pi_old || pi_warm) (Schulman, "Approximating KL divergence", 2020), when the batch carries the
  warm start's log-probs (`ref_logprobs`: the run has a reference model, e.g. `loss.kl_coef > 0`);
- `zero_adv_groups`: share of groups whose returns are all equal (group-relative advantage 0 everywhere);
  `no_success_groups`: share of groups without a successful trajectory;
- `invalid_rate`: share of invalid turns; `tokens_per_turn`: mean generated tokens per turn;
- `z_invalid`: mean within-group z-score of the return over trajectories with at least one invalid turn,
  in groups with spread (a positive value: the reward pays invalid turns relative to their group).
- `weight_mean`, `weight_zero_share` (from the update, `token_weight_metrics`): the mean token weight of the
  run's weighting over the generated tokens, and the share of those tokens it gives weight 0 (STAPO's
  silenced tokens, CARL's excluded turns, action-only's reasoning).
Metrics whose inputs are absent (no reference log-probs, no role tokens, no invalid trajectory in a
group with spread) are left out of the dict rather than written as a placeholder. Under data
parallelism they are this rank's share's (`distributed.reduce_row` keeps rank 0's); the two weight metrics
travel with the update's metrics, which `reduce_metrics` averages over ranks.
"""

from __future__ import annotations

import torch

from agentbench_af.formats.roles import ROLE_NAMES
from agentbench_af.rollout.batch import RolloutBatch

_EQUAL = 1e-6  # returns closer than this count as equal (float32 sums of tenths)


def role_means(values: torch.Tensor, batch: RolloutBatch, prefix: str) -> dict[str, float]:
    """Mean of `values` (B, T) over the generated tokens of each role that has any, as `<prefix>_<role>`."""
    out = {}
    for role, name in ROLE_NAMES.items():
        sel = batch.response_mask & (batch.roles == role)  # (B, T)
        if role != 0 and bool(sel.any()):
            out[f"{prefix}_{name}"] = float(values[sel].float().mean())
    return out


def kl_to_warm(batch: RolloutBatch) -> dict[str, float]:
    """k1 estimate of KL(pi_old || pi_warm) on the sampled tokens, overall and per role (needs ref_logprobs)."""
    if batch.ref_logprobs is None or not bool(batch.response_mask.any()):
        return {}
    diff = batch.old_logprobs - batch.ref_logprobs  # (B, T)
    return {"kl_warm": float(diff[batch.response_mask].float().mean()), **role_means(diff, batch, "kl_warm")}


def group_stats(returns: torch.Tensor, groups: torch.Tensor, success: torch.Tensor) -> dict[str, float]:
    """Shares of groups with all returns equal and with no success; `returns`, `groups`, `success`: (N,)."""
    ids = torch.unique(groups)
    if ids.numel() == 0:
        return {}
    equal = [float(returns[groups == g].max() - returns[groups == g].min()) <= _EQUAL for g in ids]
    failed = [not bool(success[groups == g].any()) for g in ids]
    return {"zero_adv_groups": sum(equal) / len(ids), "no_success_groups": sum(failed) / len(ids)}


def z_of_flagged(returns: torch.Tensor, groups: torch.Tensor, flagged: torch.Tensor) -> float | None:
    """Mean within-group z-score ((r - group mean) / group std, population std) of the flagged trajectories,
    over groups with spread; None when no flagged trajectory is in such a group. All inputs (N,)."""
    zs: list[float] = []
    for g in torch.unique(groups):
        r = returns[groups == g].double()  # (n,)
        std = float(r.std(unbiased=False))
        if std <= _EQUAL:
            continue
        z = (r - r.mean()) / std  # (n,)
        zs.extend(float(v) for v in z[flagged[groups == g]])
    return sum(zs) / len(zs) if zs else None


def token_weight_metrics(weights: torch.Tensor, batch: RolloutBatch) -> dict[str, float]:
    """`health/weight_mean` and `health/weight_zero_share` of the token weights `weights` (B, T) over the
    generated tokens of `batch` (this rank's rows); empty when there are none."""
    w = weights[batch.response_mask].float()  # (M,)
    if w.numel() == 0:
        return {}
    return {"health/weight_mean": float(w.mean()), "health/weight_zero_share": float((w == 0).float().mean())}


def health_metrics(batch: RolloutBatch, trajs: list) -> dict[str, float]:
    """The step's health metrics (see the module docstring), keys prefixed `health/`."""
    turns = [t for tr in trajs for t in tr.turns]
    out: dict[str, float] = {**role_means(batch.entropy, batch, "entropy"), **kl_to_warm(batch),
                             **group_stats(batch.traj_return, batch.traj_group, batch.traj_success)}
    if turns:
        out["invalid_rate"] = sum(not t.valid for t in turns) / len(turns)
        out["tokens_per_turn"] = sum(len(t.response_ids) for t in turns) / len(turns)
    flagged = torch.as_tensor([any(not t.valid for t in tr.turns) for tr in trajs], dtype=torch.bool)
    z = z_of_flagged(batch.traj_return, batch.traj_group, flagged) if len(trajs) == batch.num_trajectories else None
    if z is not None:
        out["z_invalid"] = z
    return {f"health/{k}": v for k, v in out.items()}

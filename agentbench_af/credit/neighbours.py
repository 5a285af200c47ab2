"""The ActFocus neighbourhood's token-level methods as token weightings (`method = <base>+<name>`).

Each weight multiplies the per-token policy loss (B, T), stop-gradient; where a paper scales the advantage
by a positive factor c, the weight c is the same thing (-min(r cA, clip(r) cA) = c * -min(rA, clip(r) A)
for c > 0). Weights are computed once per batch from the rollout policy, so pi = pi_old here. Batch
statistics go through `batch_reduce()` (global under data parallelism). Methods that read advantages
compute them with the run's estimator (`compute_advantages`, the same numbers the loss receives).

- steer (STEER, arXiv 2510.10150; its released `compute_token_weights`, as the issue quotes it):
  Omega = |A / pi_old * pi (1 - pi) (log pi + H)| = |A (1 - p)(log p + H)| at pi = pi_old, mapped
  linearly and inversely from [min Omega, max Omega] over the batch onto [1.2, 0.8] (the largest Omega
  gets 0.8). Guessed: a batch whose Omega are all equal gets 1. Its runs used clip 0.2 / 0.28, dual clip
  10, G = 8: set loss.clip_eps_high = 0.28, loss.dual_clip = 10, rollout.group_size = 8.
- ar (Advantage Reweighting, arXiv 2505.12929, from its released scripts): A * (alpha p + 1 - alpha),
  p the token's old probability, alpha = credit.ar_alpha = 0.3. The paper's other half, Lopti (update
  the tokens with p_old < 0.5 first, then the rest), needs two optimizer steps per minibatch and is not
  a weighting: left out.
- stapo (STAPO, arXiv 2602.15620): silence (weight 0) spurious tokens, those with positive advantage,
  low probability (p_old < credit.stapo_prob = 0.01) and low entropy (among the credit.stapo_entropy_fraction
  = 5 % lowest-entropy tokens of the batch); the thresholds are the examples a summary of the paper gives
  (tau_p = 0.01, tau_h the 5th entropy percentile), not read from released code.
- aepo (AEPO, arXiv 2510.14545), its entropy-aware advantage only: A * (1 + beta z), z the token's
  entropy standardised over the batch's tokens, beta = credit.aepo_beta = 0.2 (both read from a public
  verl port, not the authors' code); the weight is clamped at 0 (z < -1 / beta would flip the sign).
  Its other half, the stop-gradient inside the high-entropy clipping term, is the policy loss
  `loss.policy=aepo` (`credit.policy_losses`).
- carl (CARL, arXiv 2512.04949), a reading of the abstract: entropy is the proxy of an action's
  criticality; a turn's criticality is the mean entropy of its generated tokens; the credit.carl_fraction
  (guessed 0.2) most critical turns of the batch keep weight 1 on their tokens, the others are excluded
  (0). Its "action-level reward" for the kept actions is not recoverable from public text: the kept turns
  take the run's estimator's advantage.
- gtpo and grpo-s (GTPO / GRPO-S, arXiv 2508.04349), a reading of the abstract, which defines the
  entropy ratio H_i / sum_k H_k over a group, and says GTPO "rewards high-entropy tokens in correct
  sequences while suppressing them in incorrect ones" and GRPO-S "rewards correct sequences with higher
  average entropy while penalizing incorrect paths". Read as advantage weights, within each group:
  tokens of a trajectory with A > 0 weigh 1 + beta (H / mean H - 1), the mean over the generated tokens
  of the group's A > 0 trajectories; with A < 0, 1 + beta ((1/H) / mean (1/H) - 1) over its A < 0
  trajectories (a confident wrong token is penalised more); A = 0: 1. gtpo uses each token's entropy,
  grpo-s each trajectory's mean token entropy (one weight per trajectory). beta = credit.gtpo_beta (0.1,
  guessed); the inverse entropy of the negative branch and the mean-1 normalisation are guesses; the
  paper's reward-shaping form (added to the reward, then group-normalised) is not recovered. Weights are
  clamped at 0; entropies below 1e-6 count as 1e-6.
"""

from __future__ import annotations

import torch

from agentbench_af.credit.compute import compute_advantages
from agentbench_af.credit.config import CreditConfig
from agentbench_af.credit.groups import compact_ids, group_sum
from agentbench_af.credit.reduce import batch_reduce, top_fraction, whiten
from agentbench_af.credit.registry import Needs, estimator_spec, register_weighting, resolve_needs
from agentbench_af.rollout.batch import RolloutBatch


def _estimator_needs(cfg: CreditConfig) -> Needs:
    """A weighting that reads advantages needs what the run's estimator needs."""
    return resolve_needs(estimator_spec(cfg.estimator).needs, cfg)


def _advantages(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    return compute_advantages(batch, cfg).advantages  # (B, T)


@register_weighting("steer", needs=_estimator_needs, source="STEER, arXiv 2510.10150")
def steer(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    mask = batch.response_mask
    logp = batch.old_logprobs.double()  # (B, T)
    omega = (_advantages(batch, cfg).double() * (1.0 - logp.exp()) * (logp + batch.entropy.double())).abs()  # (B, T)
    reduce = batch_reduce()
    mine = omega[mask]  # (M,)
    lo = float(reduce.min(mine.min() if mine.numel() else mine.new_tensor(float("inf"))))
    hi = float(reduce.max(mine.max() if mine.numel() else mine.new_tensor(float("-inf"))))
    span = hi - lo
    weights = torch.ones_like(omega) if not span > 0 else 1.2 - 0.4 * (omega - lo) / span  # (B, T)
    return torch.where(mask, weights, torch.zeros_like(weights)).float()


@register_weighting("ar", source="Advantage Reweighting, arXiv 2505.12929")
def ar(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    weights = cfg.ar_alpha * batch.old_logprobs.float().exp() + (1.0 - cfg.ar_alpha)  # (B, T)
    return torch.where(batch.response_mask, weights, torch.zeros_like(weights))


@register_weighting("stapo", needs=_estimator_needs, source="STAPO, arXiv 2602.15620")
def stapo(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    mask = batch.response_mask
    row, col = mask.nonzero(as_tuple=True)  # (M,)
    low_entropy = top_fraction(-batch.entropy[row, col].float(), cfg.stapo_entropy_fraction)  # (M,)
    spurious = low_entropy & (_advantages(batch, cfg)[row, col] > 0) & (batch.old_logprobs[row, col].exp() < cfg.stapo_prob)
    weights = mask.float()  # (B, T)
    weights[row[spurious], col[spurious]] = 0.0
    return weights


@register_weighting("aepo", source="AEPO, arXiv 2510.14545 (entropy-aware advantage)")
def aepo(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    mask = batch.response_mask
    weights = torch.zeros(mask.shape, device=mask.device)  # (B, T)
    z = whiten(batch.entropy[mask].float())  # (M,) over every rank's tokens
    weights[mask] = (1.0 + cfg.aepo_beta * z).clamp(min=0.0)
    return weights


def turn_ids(batch: RolloutBatch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """The generated tokens (row, col) with a turn, and each one's step: (trajectory, turn) as a compact id
    in order of (trajectory, turn); returns (row, col, step, n_steps)."""
    row, col = (batch.response_mask & (batch.turn_index >= 0)).nonzero(as_tuple=True)  # (M,)
    turns = int(batch.turn_index.max()) + 1 if row.numel() else 1
    step, n = compact_ids(batch.sample_traj[row] * turns + batch.turn_index[row, col])  # (M,), sorted ids
    return row, col, step, n


def step_entropy(batch: RolloutBatch, step: torch.Tensor, n: int, row: torch.Tensor, col: torch.Tensor) -> torch.Tensor:
    """(S,) mean entropy of each step's generated tokens."""
    ent = batch.entropy[row, col].double()  # (M,)
    return group_sum(ent, step, n) / group_sum(torch.ones_like(ent), step, n).clamp(min=1)


@register_weighting("carl", source="CARL, arXiv 2512.04949 (a reading of the abstract)")
def carl(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    weights = torch.zeros(batch.response_mask.shape, device=batch.response_mask.device)  # (B, T)
    row, col, step, n = turn_ids(batch)
    kept = top_fraction(step_entropy(batch, step, n, row, col), cfg.carl_fraction)  # (S,)
    keep = kept[step]  # (M,)
    weights[row[keep], col[keep]] = 1.0
    return weights


def _entropy_share(value: torch.Tensor, sign: torch.Tensor, group: torch.Tensor, n_groups: int,
                   beta: float) -> torch.Tensor:
    """(M,) entropies, (M,) advantage signs, (M,) group ids -> (M,) weights 1 + beta (x / mean x - 1), x = H
    for A > 0 and 1 / H for A < 0, the mean over the group's entries of the same sign; 1 where A = 0."""
    h = value.double().clamp(min=1e-6)  # (M,)
    weights = torch.ones_like(h)
    for s, x in ((1, h), (-1, 1.0 / h)):
        on = sign == s  # (M,)
        key = group * 2 + (s > 0)  # (M,)
        total = group_sum(torch.where(on, x, torch.zeros_like(x)), key, 2 * n_groups)  # (2G,)
        count = group_sum(on.double(), key, 2 * n_groups).clamp(min=1)  # (2G,)
        share = x / (total / count)[key]  # (M,)
        weights = torch.where(on, (1.0 + beta * (share - 1.0)).clamp(min=0.0), weights)
    return weights.float()


@register_weighting("gtpo", needs=_estimator_needs, source="GTPO, arXiv 2508.04349 (a reading of the abstract)")
def gtpo(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    mask = batch.response_mask
    row, col = mask.nonzero(as_tuple=True)  # (M,)
    group, n = compact_ids(batch.traj_group[batch.sample_traj[row]])  # (M,)
    sign = torch.sign(_advantages(batch, cfg)[row, col])  # (M,)
    weights = torch.zeros(mask.shape, device=mask.device)  # (B, T)
    weights[row, col] = _entropy_share(batch.entropy[row, col], sign, group, n, cfg.gtpo_beta)
    return weights


@register_weighting("grpo-s", needs=_estimator_needs, source="GRPO-S, arXiv 2508.04349 (a reading of the abstract)")
def grpo_s(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    mask = batch.response_mask
    row, col = mask.nonzero(as_tuple=True)  # (M,)
    traj = batch.sample_traj[row]  # (M,)
    n_traj = batch.num_trajectories
    ent = batch.entropy[row, col].double()  # (M,)
    mean_h = group_sum(ent, traj, n_traj) / group_sum(torch.ones_like(ent), traj, n_traj).clamp(min=1)  # (N,)
    adv = torch.zeros(n_traj, dtype=torch.float64, device=mask.device)  # (N,) a trajectory's advantage sign
    adv[traj] = torch.sign(_advantages(batch, cfg)[row, col].double())
    group, n = compact_ids(batch.traj_group)  # (N,)
    has = torch.zeros(n_traj, dtype=torch.bool, device=mask.device)
    has[traj] = True  # trajectories with generated tokens
    per_traj = torch.ones(n_traj, device=mask.device)  # (N,)
    per_traj[has] = _entropy_share(mean_h[has], adv[has], group[has], n, cfg.gtpo_beta)
    weights = torch.zeros(mask.shape, device=mask.device)  # (B, T)
    weights[row, col] = per_traj[traj]
    return weights

"""Built-in token weightings (docs/method.md): `fn(batch, cfg) -> (B, T)`, stop-gradient, 0 off the response mask.

ActFocus family (one formula, `actfocus_weights`):
    w_t = alpha                                                      reasoning / format tokens
    w_t = clip((1 - lam) + lam * n_a * softmax_{a in A}(e_a / tau)[t], 0, w_max)   action tokens
with A the action tokens of t's trajectory (scope trajectory: over all of its samples) or of its
(trajectory, turn) (scope turn), n_a = |A|; format tokens count as action when format_role = action.
`actfocus` uses cfg.alpha and cfg.energy_lambda; `actfocus-entropy` the same with energy_source = entropy;
`actfocus-reasoning-only` fixes lam = 0;
`action-only` fixes alpha = 0 and lam = 0. With preserve_mass, each trajectory's weights are rescaled to
sum to its number of generated tokens (a trajectory whose weights are all 0 stays 0).
`uniform`: 1 on every generated token. `top-entropy` ("Beyond the 80/20 Rule", arXiv 2506.01939):
1 on the ceil(fraction * M) highest-entropy generated tokens of the whole batch (per batch, as the
paper; every rank's tokens under data parallelism, `reduce.top_fraction`; ties broken by batch position,
row-major, rank 0 first), 0 on the rest.
Left out: weights that depend on the advantage sign, and any re-normalisation by the loss (the loss
denominator counts tokens, so downweighting is not normalised away).
"""

from __future__ import annotations

import dataclasses

import torch

from agentbench_af.credit.config import CreditConfig
from agentbench_af.credit.energy import token_energy
from agentbench_af.credit.groups import compact_ids, group_sum, grouped_softmax
from agentbench_af.credit.reduce import top_fraction
from agentbench_af.credit.registry import Needs, register_weighting
from agentbench_af.credit.roles import credit_roles
from agentbench_af.formats.roles import Role
from agentbench_af.rollout.batch import RolloutBatch


def action_mask(batch: RolloutBatch, format_role: str) -> torch.Tensor:
    """(B, T) bool: generated tokens treated as action tokens (format tokens too when format_role = action)."""
    return (credit_roles(batch.roles, format_role) == int(Role.ACTION)) & batch.response_mask


def _scope_ids(batch: RolloutBatch, row: torch.Tensor, col: torch.Tensor, scope: str) -> torch.Tensor:
    """(M,) id of the action-token set A of each (row, col) token."""
    traj = batch.sample_traj[row]  # (M,)
    if scope == "trajectory":
        return traj
    turn = batch.turn_index[row, col] + 1  # (M,) 0 for tokens without a turn
    return traj * (int(batch.turn_index.max()) + 2) + turn


def preserve_trajectory_mass(batch: RolloutBatch, weights: torch.Tensor) -> torch.Tensor:
    """Rescale each trajectory's (B, T) weights to sum to its number of generated tokens."""
    n = batch.num_trajectories
    traj = batch.sample_traj  # (B,)
    total = group_sum(weights.sum(-1), traj, n)  # (N,)
    tokens = group_sum(batch.response_mask.sum(-1).to(weights.dtype), traj, n)  # (N,)
    scale = torch.where(total > 0, tokens / total.clamp(min=1e-12), torch.ones_like(total))  # (N,)
    return weights * scale[traj][:, None]


def actfocus_weights(batch: RolloutBatch, cfg: CreditConfig, alpha: float, lam: float) -> torch.Tensor:
    """The ActFocus formula with explicit alpha and lam; the other knobs come from cfg."""
    mask = batch.response_mask
    weights = mask.float() * float(alpha)  # (B, T)
    row, col = action_mask(batch, cfg.format_role).nonzero(as_tuple=True)  # (M,)
    if row.numel():
        if lam == 0.0:  # no energy term: skip the energy (and its source's requirements)
            action = torch.full((row.numel(),), min(1.0, cfg.w_max), device=weights.device)  # (M,)
        else:
            group, n_sets = compact_ids(_scope_ids(batch, row, col, cfg.scope))  # (M,)
            energy = token_energy(batch, cfg.energy_source)[row, col]  # (M,)
            prob = grouped_softmax(energy / cfg.tau, group, n_sets)  # (M,)
            n_a = torch.bincount(group, minlength=n_sets).to(prob.dtype)[group]  # (M,)
            action = ((1.0 - lam) + lam * n_a * prob).clamp(0.0, cfg.w_max)  # (M,)
        weights[row, col] = action.to(weights.dtype)
    if cfg.preserve_mass:
        weights = preserve_trajectory_mass(batch, weights)
    return weights.detach()


def energy_needs(cfg: CreditConfig) -> Needs:
    """ActFocus reads a reference model when its energy term is on and its source is `ref`."""
    return Needs(reference=cfg.energy_source == "ref" and cfg.energy_lambda != 0.0)


@register_weighting("uniform", source="every generated token weighs 1 (the plain base method)")
def uniform(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    return batch.response_mask.float()  # (B, T)


@register_weighting("actfocus", needs=energy_needs, source="ActFocus, this project (docs/method.md)")
def actfocus(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    return actfocus_weights(batch, cfg, cfg.alpha, cfg.energy_lambda)


@register_weighting("actfocus-entropy", source="ActFocus with entropy energy (docs/method.md)")
def actfocus_entropy(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    """ActFocus with the energy read from the rollout's sampling entropy, whatever `credit.energy_source`
    says: the ablation named as a method, so tables keep it apart from `actfocus`."""
    return actfocus_weights(batch, dataclasses.replace(cfg, energy_source="entropy"), cfg.alpha, cfg.energy_lambda)


@register_weighting("actfocus-reasoning-only", source="ActFocus ablation: lam = 0 (docs/method.md)")
def actfocus_reasoning_only(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    return actfocus_weights(batch, cfg, cfg.alpha, 0.0)


@register_weighting("action-only", source="ActFocus ablation: alpha = lam = 0 (docs/method.md)")
def action_only(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    return actfocus_weights(batch, cfg, 0.0, 0.0)


@register_weighting("top-entropy", source="Beyond the 80/20 Rule, arXiv 2506.01939")
def top_entropy(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    mask = batch.response_mask
    weights = torch.zeros(mask.shape, device=mask.device)  # (B, T)
    row, col = mask.nonzero(as_tuple=True)  # (M,), row-major
    keep = top_fraction(batch.entropy[row, col].float(), cfg.top_entropy_fraction)  # (M,) over the whole batch
    weights[row[keep], col[keep]] = 1.0
    return weights

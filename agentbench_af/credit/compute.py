"""The dispatchers: run the configured estimator and weighting, check their shapes, zero them off the mask.

Also `credit_needs(cfg)`: what the configured pair needs (a critic, a reference model, step groups),
read from their registrations, so the harness never names a method.
"""

from __future__ import annotations

import torch

from agentbench_af.credit.config import CreditConfig
from agentbench_af.credit.registry import (
    AdvantageOutput,
    Needs,
    estimator_spec,
    resolve_needs,
    weighting_spec,
)
from agentbench_af.rollout.batch import RolloutBatch


def credit_needs(cfg: CreditConfig) -> Needs:
    """The union of what `cfg.estimator` and `cfg.weighting` declare they need."""
    return (resolve_needs(estimator_spec(cfg.estimator).needs, cfg)
            | resolve_needs(weighting_spec(cfg.weighting).needs, cfg))


def _check_needs(batch: RolloutBatch, cfg: CreditConfig, needs: Needs, who: str) -> None:
    wanted = (("values", needs.critic, "a critic"), ("ref_logprobs", needs.reference, "a reference model"),
              ("turn_obs_key", needs.step_groups, "observation keys per turn"))
    for field, needed, what in wanted:
        if needed and getattr(batch, field) is None:
            raise ValueError(f"{who} declares it needs {what}, but batch.{field} is None")


def compute_advantages(batch: RolloutBatch, cfg: CreditConfig) -> AdvantageOutput:
    """Run `cfg.estimator`; the result is zeroed outside the response mask."""
    spec = estimator_spec(cfg.estimator)
    _check_needs(batch, cfg, resolve_needs(spec.needs, cfg), f"estimator {cfg.estimator!r}")
    out = spec.fn(batch, cfg)
    shape = tuple(batch.response_mask.shape)
    if tuple(out.advantages.shape) != shape:
        raise ValueError(
            f"estimator {cfg.estimator!r} returned shape {tuple(out.advantages.shape)}, expected {shape}"
        )
    mask = batch.response_mask
    advantages = torch.where(mask, out.advantages, torch.zeros_like(out.advantages)).detach()  # (B, T)
    returns = (
        None
        if out.returns is None
        else torch.where(mask, out.returns, torch.zeros_like(out.returns)).detach()
    )
    return AdvantageOutput(advantages, returns)


def compute_token_weights(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor:
    """Run `cfg.weighting`; (B, T) stop-gradient weights, zero outside the response mask."""
    spec = weighting_spec(cfg.weighting)
    _check_needs(batch, cfg, resolve_needs(spec.needs, cfg), f"weighting {cfg.weighting!r}")
    weights = spec.fn(batch, cfg)  # (B, T)
    shape = tuple(batch.response_mask.shape)
    if tuple(weights.shape) != shape:
        raise ValueError(
            f"weighting {cfg.weighting!r} returned shape {tuple(weights.shape)}, expected {shape}"
        )
    return torch.where(batch.response_mask, weights, torch.zeros_like(weights)).detach()

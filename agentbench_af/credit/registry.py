"""Name -> function registries for advantage estimators and token weightings; the dispatchers are lookups.

A new method is one decorated function:

    @register_advantage("my-estimator")
    def my_estimator(batch: RolloutBatch, cfg: CreditConfig) -> AdvantageOutput: ...

    @register_weighting("my-weights")
    def my_weights(batch: RolloutBatch, cfg: CreditConfig) -> torch.Tensor: ...  # (B, T)

Left out: per-method config classes (every knob lives in `CreditConfig`) and plugin discovery through
entry points (importing the module that holds the function registers it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from agentbench_af.rollout.batch import RolloutBatch

if TYPE_CHECKING:
    from agentbench_af.credit.config import CreditConfig


@dataclass(frozen=True)
class AdvantageOutput:
    advantages: torch.Tensor  # (B, T): zero outside response_mask
    returns: torch.Tensor | None = None  # (B, T): value targets (estimators with a critic), else None


AdvantageFn = Callable[[RolloutBatch, "CreditConfig"], AdvantageOutput]
WeightFn = Callable[[RolloutBatch, "CreditConfig"], torch.Tensor]

ADVANTAGE_ESTIMATORS: dict[str, AdvantageFn] = {}
TOKEN_WEIGHTINGS: dict[str, WeightFn] = {}


def _register(table: dict, kind: str, name: str) -> Callable:
    def decorator(fn: Callable) -> Callable:
        if name in table and table[name] is not fn:
            raise ValueError(f"{kind} {name!r} is already registered")
        table[name] = fn
        return fn

    return decorator


def register_advantage(name: str) -> Callable[[AdvantageFn], AdvantageFn]:
    return _register(ADVANTAGE_ESTIMATORS, "advantage estimator", name)


def register_weighting(name: str) -> Callable[[WeightFn], WeightFn]:
    return _register(TOKEN_WEIGHTINGS, "token weighting", name)


def get_advantage_estimator(name: str) -> AdvantageFn:
    if name not in ADVANTAGE_ESTIMATORS:
        raise ValueError(
            f"unknown advantage estimator {name!r}; registered: {', '.join(sorted(ADVANTAGE_ESTIMATORS))}"
        )
    return ADVANTAGE_ESTIMATORS[name]


def get_token_weighting(name: str) -> WeightFn:
    if name not in TOKEN_WEIGHTINGS:
        raise ValueError(
            f"unknown token weighting {name!r}; registered: {', '.join(sorted(TOKEN_WEIGHTINGS))}"
        )
    return TOKEN_WEIGHTINGS[name]


def compute_advantages(batch: RolloutBatch, cfg: CreditConfig) -> AdvantageOutput:
    """Run `cfg.estimator`; the result is zeroed outside the response mask."""
    out = get_advantage_estimator(cfg.estimator)(batch, cfg)
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
    weights = get_token_weighting(cfg.weighting)(batch, cfg)  # (B, T)
    shape = tuple(batch.response_mask.shape)
    if tuple(weights.shape) != shape:
        raise ValueError(
            f"weighting {cfg.weighting!r} returned shape {tuple(weights.shape)}, expected {shape}"
        )
    return torch.where(batch.response_mask, weights, torch.zeros_like(weights)).detach()

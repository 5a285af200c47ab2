"""PPO/GRPO loss pieces: per-token terms, their aggregation, and the metrics, as separate functions.

    per_token = clipped_surrogate(logprobs, old_logprobs, advantages, cfg)   # (B, T)
    loss = agg_loss(weights * per_token, mask, cfg.agg)                     # = policy_loss(...), ppo-clip

`policy_loss` runs the policy loss `loss.policy` names (the registry in `agentbench_af.credit`: ppo-clip,
the default, dr-grpo, gspo, cispo, sapo, clip-cov, kl-cov, aepo, or a plugin's) and aggregates its
per-token loss with `loss.agg`; a loss registered with `needs_entropy` also gets the forward's entropies. A policy loss that takes a batch statistic gets it over every rank when the update
runs data-parallel (the caller passes the global `denominator`), and on its own rows otherwise.

Token weights (ActFocus) multiply the policy surrogate only, never the value loss, the KL or the entropy
term. `agg_loss` denominators count tokens (or sequences), never weights, so downweighting is not
normalised away. Log-ratios are clamped to +-20 before `exp` so padded positions cannot overflow.
Left out: KL-in-reward penalties (kl_k3 is a loss term here), adaptive KL control, and the value
head's own normalisation of returns.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
import torch.distributed as dist

from agentbench_af.config import check_choices
from agentbench_af.credit.policy_losses import clip_surrogate
from agentbench_af.credit.policy_losses import log_ratio as _log_ratio
from agentbench_af.credit.reduce import LOCAL, BatchReduce
from agentbench_af.credit.registry import PolicyLossOutput, policy_loss_spec

AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum")


@dataclass(frozen=True)
class LossConfig:
    """Loss knobs (`agentbench-af config loss --explain` prints each field's doc)."""

    #: lower clip range of the ratio (PPO/GRPO's symmetric 0.2)
    clip_eps_low: float = 0.2
    #: upper clip range of the ratio; DAPO's clip-higher is 0.28. gspo reads both as its sequence-ratio clip
    #: (its paper: 3e-4 / 4e-4), cispo this one as its IS-weight cap 1 + eps
    clip_eps_high: float = 0.2
    #: dual clip c > 1 bounds the loss of negative-advantage tokens at c * |A| (Ye et al. 2020); null: off
    dual_clip: float | None = None
    #: how per-token losses become one number (`agg_loss`)
    agg: Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"] = "token-mean"
    #: weight of the value loss (a critic only)
    value_coef: float = 0.5
    #: PPO value clip range; null: off
    value_clip: float | None = 0.2
    #: weight of the k3 KL term to the warm start (> 0 loads a frozen reference model)
    kl_coef: float = 0.0
    #: weight of the entropy bonus
    entropy_coef: float = 0.0
    #: the policy's (and the critic's) gradient-norm clip
    max_grad_norm: float = 1.0
    #: the registered policy loss (`agentbench-af methods`): ppo-clip, dr-grpo, gspo, cispo, sapo, clip-cov, kl-cov,
    #: aepo
    policy: str = "ppo-clip"
    #: dr-grpo's constant normaliser: the generation budget in tokens
    dr_grpo_tokens: int = 1024
    #: sapo's gate temperature for positive advantages
    sapo_tau_pos: float = 1.0
    #: sapo's gate temperature for negative advantages
    sapo_tau_neg: float = 1.05
    #: clip-cov: the share of tokens detached
    clip_cov_ratio: float = 2e-4
    #: clip-cov: the lower end of the covariance window the detached tokens are drawn from
    cov_clip_low: float = 1.0
    #: clip-cov: the upper end of that window
    cov_clip_high: float = 5.0
    #: kl-cov: the share of tokens penalised (the highest covariance)
    kl_cov_ratio: float = 2e-4
    #: kl-cov: the coefficient of its |log ratio| penalty
    kl_cov_coef: float = 1.0

    def __post_init__(self) -> None:
        check_choices(self, "loss")
        for name in (
            "clip_eps_low",
            "clip_eps_high",
            "value_coef",
            "kl_coef",
            "entropy_coef",
            "max_grad_norm",
        ):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"loss.{name} must be a finite number >= 0, got {value!r}")
        if self.clip_eps_low >= 1.0:
            raise ValueError(f"loss.clip_eps_low must be < 1, got {self.clip_eps_low}")
        if self.max_grad_norm <= 0:
            raise ValueError(f"loss.max_grad_norm must be > 0, got {self.max_grad_norm}")
        if self.dual_clip is not None and not self.dual_clip > 1.0:
            raise ValueError(f"loss.dual_clip must be > 1 or null, got {self.dual_clip}")
        if self.value_clip is not None and not self.value_clip > 0.0:
            raise ValueError(f"loss.value_clip must be > 0 or null, got {self.value_clip}")
        for name in ("sapo_tau_pos", "sapo_tau_neg", "clip_cov_ratio", "kl_cov_ratio"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"loss.{name} must be a finite number > 0, got {value!r}")
        for name in ("cov_clip_low", "cov_clip_high", "kl_cov_coef"):
            if not (isinstance(getattr(self, name), (int, float)) and math.isfinite(getattr(self, name))):
                raise ValueError(f"loss.{name} must be a finite number, got {getattr(self, name)!r}")
        if not self.cov_clip_low < self.cov_clip_high:
            raise ValueError(f"loss.cov_clip_low ({self.cov_clip_low}) must be below loss.cov_clip_high ({self.cov_clip_high})")
        if isinstance(self.dr_grpo_tokens, bool) or not isinstance(self.dr_grpo_tokens, int) or self.dr_grpo_tokens < 1:
            raise ValueError(f"loss.dr_grpo_tokens must be an integer >= 1, got {self.dr_grpo_tokens!r}")
        spec = policy_loss_spec(self.policy)  # ValueError listing the registered names
        if spec.agg is not None and self.agg != spec.agg:
            raise ValueError(f"loss.policy={self.policy} aggregates with {spec.agg}; set loss.agg={spec.agg} (got {self.agg})")


def clipped_surrogate(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    eps_low: float | LossConfig = 0.2,
    eps_high: float | None = None,
    dual_clip: float | None = None,
) -> torch.Tensor:
    """Per-token PPO loss -min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A), (B, T).

    Pass either the numbers (eps_high defaults to eps_low) or a LossConfig as `eps_low`, which supplies
    eps_low, eps_high and dual_clip. With dual_clip c, negative-advantage tokens lose at most -c * A.
    """
    if isinstance(eps_low, LossConfig):
        cfg = eps_low
        eps_low, eps_high, dual_clip = cfg.clip_eps_low, cfg.clip_eps_high, cfg.dual_clip
    eps_high = eps_low if eps_high is None else eps_high
    ratio = torch.exp(_log_ratio(logprobs, old_logprobs))  # (B, T)
    return clip_surrogate(ratio, advantages, eps_low, eps_high, dual_clip)


def agg_count(mask: torch.Tensor, mode: str) -> torch.Tensor:
    """(,) float32: what `agg_loss` divides `mask`'s values by without a `denominator` (masked tokens for
    token-mean, rows with a masked token otherwise, at least 1); a micro-batch passes its minibatch's."""
    mask = mask.bool()
    count = mask.sum() if mode == "token-mean" else (mask.sum(-1) > 0).sum()
    return count.clamp(min=1).to(torch.float32)


def agg_loss(per_token: torch.Tensor, mask: torch.Tensor, mode: str,
             denominator: torch.Tensor | float | None = None) -> torch.Tensor:
    """Aggregate (B, T) per-token values over mask to a scalar.

    token-mean: sum / number of masked tokens. seq-mean-token-mean: mean over sequences of each
    sequence's token mean. seq-mean-token-sum: mean over sequences of each sequence's token sum.
    Sequences are the rows with at least one masked token; an empty mask gives 0.
    `denominator` replaces the count divided by (tokens for token-mean, sequences otherwise): data-parallel
    ranks pass the global count over the world size (`train.distributed.ranks.UpdateSync`).
    """
    mask = mask.bool()
    values = torch.where(mask, per_token, torch.zeros_like(per_token))  # (B, T): NaN-safe masking
    tokens = mask.sum(-1)  # (B,)
    rows = (tokens > 0).sum().clamp(min=1) if denominator is None else denominator
    if mode == "token-mean":
        return values.sum() / (tokens.sum().clamp(min=1) if denominator is None else denominator)
    if mode == "seq-mean-token-mean":
        return (values.sum(-1) / tokens.clamp(min=1)).sum() / rows
    if mode == "seq-mean-token-sum":
        return values.sum(-1).sum() / rows
    raise ValueError(f"unknown loss aggregation {mode!r}; expected one of {', '.join(AGG_MODES)}")


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    mask: torch.Tensor,
    cfg: LossConfig,
    denominator: torch.Tensor | float | None = None,
    entropy: torch.Tensor | None = None,
) -> torch.Tensor:
    """agg_t(loss.policy's per-token loss, weighted by w_t): the policy-gradient loss (weights are
    detached here; `denominator`: see `agg_loss`; given, the policy loss's batch statistics are taken
    over every rank; `entropy` (B, T): each token's entropy under the current policy, passed on (detached)
    to a policy loss registered with `needs_entropy`)."""
    return policy_loss_terms(logprobs, old_logprobs, advantages, weights, mask, cfg, denominator, entropy)[0]


def loss_reduce(denominator: torch.Tensor | float | None) -> BatchReduce:
    """The batch reduction of a policy loss: over every rank when the caller passes global denominators
    (a data-parallel update: `train.distributed.ranks.UpdateSync`) in a process group of several ranks, else
    the identity."""
    if denominator is None or not dist.is_initialized() or dist.get_world_size() < 2:
        return LOCAL
    from agentbench_af.train.distributed.credit import RanksReduce  # noqa: PLC0415
    from agentbench_af.train.distributed.ranks import Ranks  # noqa: PLC0415  (the one-process path needs none)

    return RanksReduce(Ranks(dist.get_rank(), dist.get_world_size()))


def policy_loss_terms(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    mask: torch.Tensor,
    cfg: LossConfig,
    denominator: torch.Tensor | float | None = None,
    entropy: torch.Tensor | None = None,
    reduce: BatchReduce | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """`policy_loss` and the policy loss's own metrics (`reduce`: the policy loss's batch reduction, by
    default `loss_reduce(denominator)`)."""
    spec = policy_loss_spec(cfg.policy)
    args = (logprobs, old_logprobs, advantages, weights.detach(), mask, cfg,
            loss_reduce(denominator) if reduce is None else reduce)
    if spec.needs_entropy:
        if entropy is None:
            raise ValueError(f"policy loss {cfg.policy!r} needs each token's entropy; pass entropy=")
        out = spec.fn(*args, entropy=entropy.detach())
    else:
        out = spec.fn(*args)
    if not isinstance(out, PolicyLossOutput) or tuple(out.per_token.shape) != tuple(mask.shape):
        got = tuple(out.per_token.shape) if isinstance(out, PolicyLossOutput) else type(out).__name__
        raise ValueError(f"policy loss {cfg.policy!r} returned {got}, expected a PolicyLossOutput of shape {tuple(mask.shape)}")
    return agg_loss(out.per_token, mask, cfg.agg, denominator), out.metrics


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    cfg: LossConfig,
    denominator: torch.Tensor | float | None = None,
) -> torch.Tensor:
    """PPO clipped value loss, 0.5 * max((V - R)^2, (V_clip - R)^2), aggregated with cfg.agg (unweighted;
    `denominator`: see `agg_loss`)."""
    unclipped = (values - returns) ** 2  # (B, T)
    if cfg.value_clip is None:
        per_token = 0.5 * unclipped
    else:
        clipped_values = old_values + (values - old_values).clamp(-cfg.value_clip, cfg.value_clip)  # (B, T)
        per_token = 0.5 * torch.maximum(unclipped, (clipped_values - returns) ** 2)
    return agg_loss(per_token, mask, cfg.agg, denominator)


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token k3 estimate of KL(pi || ref): exp(ref - lp) - (ref - lp) - 1 >= 0, (B, T)."""
    log_ratio = _log_ratio(ref_logprobs, logprobs)  # (B, T)
    return torch.exp(log_ratio) - log_ratio - 1.0


def entropy_bonus(entropy: torch.Tensor, mask: torch.Tensor, mode: str,
                  denominator: torch.Tensor | float | None = None) -> torch.Tensor:
    """Aggregated policy entropy (subtract entropy_coef times this from the loss)."""
    return agg_loss(entropy, mask, mode, denominator)


@torch.no_grad()
def policy_metrics(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, mask: torch.Tensor, cfg: LossConfig
) -> dict[str, float]:
    """clip_frac (tokens whose ratio is outside the clip range), approx_kl (k3 estimate of
    KL(old || new) over generated tokens) and ratio_max, as floats."""
    mask = mask.bool()
    if not bool(mask.any()):
        return {"clip_frac": 0.0, "approx_kl": 0.0, "ratio_max": 1.0}
    log_ratio = _log_ratio(logprobs, old_logprobs)[mask]  # (M,)
    ratio = torch.exp(log_ratio)  # (M,)
    outside = (ratio < 1.0 - cfg.clip_eps_low) | (ratio > 1.0 + cfg.clip_eps_high)  # (M,)
    return {
        "clip_frac": float(outside.float().mean()),
        "approx_kl": float((ratio - 1.0 - log_ratio).mean()),
        "ratio_max": float(ratio.max()),
    }

"""Built-in policy losses (`loss.policy`): `fn(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce)`
-> `PolicyLossOutput`, the weighted per-token loss (B, T) that `train.update.loss.policy_loss` aggregates with
`loss.agg`, and the loss's own metrics. `cfg` is the run's `LossConfig`; `reduce` the batch reduction (the
identity on one process, over every rank under data parallelism).

- ppo-clip (default): -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A), dual clip optional (Schulman et
  al. 2017, arXiv 1707.06347; Ye et al. 2020).
- dr-grpo (Dr. GRPO, arXiv 2503.20783): the ppo-clip term summed over each sequence and divided by a
  constant, `loss.dr_grpo_tokens` (TRL divides by max_completion_length): requires `loss.agg =
  seq-mean-token-sum`. The other half of Dr. GRPO, no std scaling, is `credit.grpo_norm_by_std = false`.
- gspo (arXiv 2507.18071): the sequence-level ratio s = exp(mean_t log r_t) over each row's generated
  tokens, clipped like ppo-clip (the paper clips at 3e-4 / 4e-4; here `loss.clip_eps_*`). The token form
  GSPO-token (s_t = sg(s) r_t / sg(r_t)) carries the token weights; its value and, for a sequence-constant
  advantage, its gradient are GSPO's.
- cispo (MiniMax-M1, arXiv 2506.13585): -sg(min(r, 1 + eps_high)) A log p: the clipped IS weight is
  stop-gradient and every token keeps a gradient. No lower bound, as the paper ("we did not impose a
  lower bound"); TRL caps r at epsilon_high itself, here at 1 + loss.clip_eps_high.
- sapo (arXiv 2511.20347): -f(r) A with the soft gate f(r) = sigmoid(tau (r - 1)) 4 / tau (gradient
  4 sigma (1 - sigma) r grad log p, equal to the plain policy gradient at r = 1), tau = loss.sapo_tau_pos
  (1.0) for A > 0 and loss.sapo_tau_neg (1.05) for A < 0 (the paper's defaults); no hard clip.
- clip-cov, kl-cov (arXiv 2505.22617, read from its released code as it stands in verl): per-token
  Cov = (A - mean A)(log p - mean log p). clip-cov: of the tokens not already clipped by ppo-clip whose
  Cov lies in (loss.cov_clip_low, loss.cov_clip_high) = (1, 5), max(1, int(2e-4 N)) drawn at random get
  loss 0 (detached). kl-cov: the unclipped r A term, plus loss.kl_cov_coef (1) |log r| on the
  max(1, int(2e-4 N)) tokens of largest Cov. Here the means, N and the selection are over the whole
  minibatch the loss sees, across every rank (verl: per micro-batch, per rank); with rl.minibatches = 1
  that is the whole batch. The random draw of clip-cov is seeded by the global candidate count and
  made over the candidates sorted by Cov, so every rank (and one process) draws the same tokens; verl
  draws from the global torch RNG. On-policy (log r = 0 up to rounding) the gradient of kl-cov's |log r|
  is the sign of that rounding, as in verl: the penalty acts once the policy has moved.
- aepo (AEPO's policy-update half, arXiv 2510.14545): ppo-clip, except on high-entropy tokens whose
  ratio has left the clip range on the side the advantage pushes (A > 0 and r > 1 + eps_high, or A < 0
  and r < 1 - eps_low): there the clipped term carries a stop-gradient, -A c r / sg(r) with c the bound
  it crossed, so its value is ppo-clip's (-A c) and its gradient -A c grad log p is kept, rescaled from
  r to c, instead of cut to 0. Taken from the paper's abstract ("a stop-gradient operation into the
  high-entropy clipping term to preserve and properly rescale gradients on high-entropy tokens") and the
  gradient-preserving clip of GPPO (arXiv 2508.07629) it builds on. Guessed: which tokens are "high-entropy"
  (here: entropy under the current policy above the mean over every rank's generated tokens of the
  minibatch) and that both bounds are treated alike. Its other half, the entropy-aware advantage, is the
  `aepo` weighting (`method = <base>+aepo`); its rollout half (entropy-balanced branching) is not a loss.
  Registered with `needs_entropy`: it receives `entropy` (B, T).
Log-ratios are clamped to +-20 before `exp`, so padded positions cannot overflow.
"""

from __future__ import annotations

import torch

from agentbench_af.credit.reduce import BatchReduce
from agentbench_af.credit.registry import PolicyLossOutput, register_policy_loss

LOG_RATIO_CLAMP = 20.0


def log_ratio(logprobs: torch.Tensor, old_logprobs: torch.Tensor) -> torch.Tensor:
    return (logprobs - old_logprobs).clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)  # (B, T)


def clip_surrogate(ratio: torch.Tensor, advantages: torch.Tensor, eps_low: float, eps_high: float,
                   dual_clip: float | None = None) -> torch.Tensor:
    """Per-token -min(r A, clip(r, 1 - eps_low, 1 + eps_high) A), (B, T); with dual_clip c, negative-
    advantage tokens lose at most -c * A."""
    unclipped = -advantages * ratio  # (B, T)
    clipped = -advantages * ratio.clamp(1.0 - eps_low, 1.0 + eps_high)  # (B, T)
    loss = torch.maximum(unclipped, clipped)  # (B, T)
    if dual_clip is not None:
        loss = torch.where(advantages < 0, torch.minimum(loss, -dual_clip * advantages), loss)
    return loss


def _ppo(logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, cfg) -> torch.Tensor:
    ratio = torch.exp(log_ratio(logprobs, old_logprobs))  # (B, T)
    return clip_surrogate(ratio, advantages, cfg.clip_eps_low, cfg.clip_eps_high, cfg.dual_clip)


@register_policy_loss("ppo-clip", source="PPO clipped surrogate, arXiv 1707.06347")
def ppo_clip(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce: BatchReduce) -> PolicyLossOutput:
    return PolicyLossOutput(weights * _ppo(logprobs, old_logprobs, advantages, cfg), {})


@register_policy_loss("dr-grpo", agg="seq-mean-token-sum", source="Dr. GRPO, arXiv 2503.20783")
def dr_grpo(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce: BatchReduce) -> PolicyLossOutput:
    return PolicyLossOutput(weights * _ppo(logprobs, old_logprobs, advantages, cfg) / cfg.dr_grpo_tokens, {})


@register_policy_loss("gspo", source="GSPO, arXiv 2507.18071")
def gspo(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce: BatchReduce) -> PolicyLossOutput:
    m = mask.to(logprobs.dtype)  # (B, T)
    lr = log_ratio(logprobs, old_logprobs) * m  # (B, T)
    seq = lr.sum(-1) / m.sum(-1).clamp(min=1)  # (B,) mean log-ratio of each row
    token_log = seq.detach()[:, None] + logprobs - logprobs.detach()  # (B, T): value seq, gradient of log p_t
    ratio = torch.exp(token_log.clamp(-LOG_RATIO_CLAMP, LOG_RATIO_CLAMP))  # (B, T)
    per_token = clip_surrogate(ratio, advantages, cfg.clip_eps_low, cfg.clip_eps_high, cfg.dual_clip)
    return PolicyLossOutput(weights * per_token, {})


@register_policy_loss("cispo", source="CISPO (MiniMax-M1), arXiv 2506.13585")
def cispo(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce: BatchReduce) -> PolicyLossOutput:
    ratio = torch.exp(log_ratio(logprobs, old_logprobs))  # (B, T)
    is_weight = ratio.clamp(max=1.0 + cfg.clip_eps_high).detach()  # (B, T)
    return PolicyLossOutput(weights * -(is_weight * advantages * logprobs), {})


@register_policy_loss("sapo", source="SAPO, arXiv 2511.20347")
def sapo(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce: BatchReduce) -> PolicyLossOutput:
    ratio = torch.exp(log_ratio(logprobs, old_logprobs))  # (B, T)
    tau = torch.where(advantages > 0, torch.full_like(ratio, cfg.sapo_tau_pos),
                      torch.full_like(ratio, cfg.sapo_tau_neg))  # (B, T)
    gate = torch.sigmoid(tau * (ratio - 1.0)) * 4.0 / tau  # (B, T)
    return PolicyLossOutput(weights * -(gate * advantages), {})


def token_covariance(logprobs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
                     reduce: BatchReduce) -> tuple[torch.Tensor, float]:
    """(B, T) detached (A - mean A)(log p - mean log p), the means over every rank's masked tokens, and
    the global number of masked tokens N."""
    a, lp = advantages.detach().double()[mask], logprobs.detach().double()[mask]  # (M,)
    n, a_sum, lp_sum = (float(v) for v in reduce.sum(torch.stack([a.new_tensor(float(a.numel())), a.sum(), lp.sum()])))
    cov = torch.zeros(mask.shape, dtype=torch.float64, device=mask.device)  # (B, T)
    if n > 0:
        cov[mask] = (a - a_sum / n) * (lp - lp_sum / n)
    return cov, n


def _global_pick(values: torch.Tensor, k: int, reduce: BatchReduce, seed: int | None) -> torch.Tensor:
    """(M,) this rank's candidates' values -> (M,) bool: k of every rank's candidates, the largest values
    (seed None) or k drawn at random over the candidates sorted by value (seeded: the same on every rank)."""
    every, offset = reduce.cat(values)  # (M_all,)
    order = torch.argsort(every, descending=True, stable=True)  # (M_all,)
    if seed is not None:
        order = order[torch.randperm(every.numel(), generator=torch.Generator().manual_seed(seed))]
    chosen = order[:k]  # (k,) positions in every rank's candidates
    pick = torch.zeros(values.shape, dtype=torch.bool, device=values.device)
    mine = chosen[(chosen >= offset) & (chosen < offset + values.numel())] - offset
    pick[mine.to(values.device)] = True
    return pick


@register_policy_loss("clip-cov", source="Clip-Cov, arXiv 2505.22617 (verl clip_cov)")
def clip_cov(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce: BatchReduce) -> PolicyLossOutput:
    mask = mask.bool()
    ratio = torch.exp(log_ratio(logprobs, old_logprobs))  # (B, T)
    unclipped = -advantages * ratio  # (B, T)
    clipped = -advantages * ratio.clamp(1.0 - cfg.clip_eps_low, 1.0 + cfg.clip_eps_high)  # (B, T)
    cov, n = token_covariance(logprobs, advantages, mask, reduce)  # (B, T)
    candidate = mask & ~(clipped > unclipped) & (cov > cfg.cov_clip_low) & (cov < cfg.cov_clip_high)  # (B, T)
    n_cand = int(reduce.sum(candidate.sum().double().reshape(1))[0])
    k = min(max(1, int(cfg.clip_cov_ratio * n)), n_cand)
    keep = torch.ones_like(ratio)  # (B, T)
    if k > 0:
        row, col = candidate.nonzero(as_tuple=True)  # (C,)
        pick = _global_pick(cov[row, col], k, reduce, seed=n_cand)  # (C,)
        keep[row[pick], col[pick]] = 0.0
    per_token = torch.maximum(unclipped, clipped) * keep  # (B, T)
    return PolicyLossOutput(weights * per_token, {"cov_detached": float(k) / max(n, 1.0)})


@register_policy_loss("kl-cov", source="KL-Cov, arXiv 2505.22617 (verl kl_cov)")
def kl_cov(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce: BatchReduce) -> PolicyLossOutput:
    mask = mask.bool()
    lr = log_ratio(logprobs, old_logprobs)  # (B, T)
    per_token = -advantages * torch.exp(lr)  # (B, T)
    cov, n = token_covariance(logprobs, advantages, mask, reduce)  # (B, T)
    k = max(1, int(cfg.kl_cov_ratio * n)) if n > 0 else 0
    if k > 0:
        row, col = mask.nonzero(as_tuple=True)  # (M,)
        pick = _global_pick(cov[row, col], k, reduce, seed=None)  # (M,)
        penalty = torch.zeros_like(per_token)  # (B, T)
        penalty[row[pick], col[pick]] = 1.0
        per_token = per_token + penalty * cfg.kl_cov_coef * lr.abs()
    return PolicyLossOutput(weights * per_token, {"cov_penalised": float(k) / max(n, 1.0)})


@register_policy_loss("aepo", needs_entropy=True, source="AEPO, arXiv 2510.14545 (entropy-balanced clipping)")
def aepo(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce: BatchReduce, *,
         entropy: torch.Tensor) -> PolicyLossOutput:
    mask = mask.bool()
    ratio = torch.exp(log_ratio(logprobs, old_logprobs))  # (B, T)
    per_token = clip_surrogate(ratio, advantages, cfg.clip_eps_low, cfg.clip_eps_high, cfg.dual_clip)  # (B, T)
    ent = entropy.detach().double()  # (B, T)
    n, total = (float(v) for v in reduce.sum(torch.stack([ent.new_tensor(float(mask.sum())), ent[mask].sum()])))
    high = mask & (ent > total / max(n, 1.0))  # (B, T): above the minibatch's mean entropy
    upper = (advantages > 0) & (ratio > 1.0 + cfg.clip_eps_high)  # (B, T)
    lower = (advantages < 0) & (ratio < 1.0 - cfg.clip_eps_low)  # (B, T)
    bound = torch.where(upper, torch.full_like(ratio, 1.0 + cfg.clip_eps_high),
                        torch.full_like(ratio, 1.0 - cfg.clip_eps_low))  # (B, T)
    kept = high & (upper | lower)  # (B, T)
    per_token = torch.where(kept, -advantages * bound * ratio / ratio.detach(), per_token)
    return PolicyLossOutput(weights * per_token, {"aepo_kept_grad": float(kept.sum()) / max(float(mask.sum()), 1.0)})

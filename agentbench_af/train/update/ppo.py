"""One PPO/GRPO policy update over a scored batch: epochs x minibatches of the weighted clipped loss.

`ppo_update` takes the modules, the optimizer, the scored batch, its credit (advantages, returns and
token weights for the whole batch, sliced per minibatch) and the `UpdateSettings`. Each minibatch is one
`forward` (log-probs, entropies, values) and one `minibatch_step` (loss, backward, clipping, optimizer
step); every loss term is a `train.update.loss` function (`policy_loss`, `value_loss`, `kl_k3`,
`entropy_bonus`), and the weights multiply the policy surrogate only. `train.update.step.update` also uses
`forward` and `train_minibatch` directly when the update's forward doubles as the scoring pass. With
`rl.token_passes=lopti` a minibatch takes two optimizer steps (`train_minibatch`), the low-probability
tokens first.
With `rl.micro_batch_rows` a minibatch larger than that is one `accumulated_step`: gradient accumulation
over micro-batches of at most that many rows (forward, loss with the minibatch's denominator, backward
each), then one optimizer step: the same step up to float rounding, in the memory of a micro-batch.
Left out: gradient accumulation across minibatches (one optimizer step per minibatch, as in PPO),
micro-batches under data parallelism and with Lopti's passes (refused), and mixed-precision loss scaling.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import torch

from agentbench_af.credit.reduce import BatchReduce, RefusedReduce
from agentbench_af.models.forward import token_stats
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.train.distributed.data_parallel import TrainModules
from agentbench_af.train.distributed.ranks import UpdateSync
from agentbench_af.train.update import loss as L


class Credit(NamedTuple):
    """The credit of a batch (or of a minibatch's rows)."""

    advantages: torch.Tensor  # (B, T)
    returns: torch.Tensor | None  # (B, T), for the value loss
    weights: torch.Tensor  # (B, T)

    def rows(self, chunk: torch.Tensor, width: int, device: torch.device) -> Credit:
        """Rows `chunk` (b,), the first `width` columns, on `device`."""
        def cut(t: torch.Tensor) -> torch.Tensor:
            return t[chunk, :width].to(device)  # (b, t)

        return Credit(cut(self.advantages), None if self.returns is None else cut(self.returns), cut(self.weights))


@dataclass(frozen=True)
class UpdateSettings:
    """Everything `ppo_update` reads besides the modules, the optimizer, the batch and its credit.
    `detach_critic`: the value head's loss does not reach the policy's trunk (`rl.critic`). `sync` (data
    parallelism): the modules are DDP/FSDP2-wrapped, the batch is this rank's share, every loss term
    divides by the global count over the world size, and every rank takes exactly `minibatches`
    optimizer steps."""

    loss: L.LossConfig
    device: torch.device
    epochs: int = 1
    minibatches: int = 1
    temperature: float = 1.0  # of the sampling distribution (> 0)
    autocast_dtype: torch.dtype | None = None
    detach_critic: bool = False
    sync: UpdateSync | None = None
    lopti_threshold: float | None = None  # Lopti's two passes per minibatch (`rl.token_passes=lopti`); None: one
    micro_batch_rows: int = 0  # gradient accumulation: rows per forward and backward in a minibatch; 0: all


class Forward(NamedTuple):
    """One minibatch's forward through the trained modules."""

    logprobs: torch.Tensor  # (b, t), with gradient
    entropy: torch.Tensor | None  # (b, t); with gradient only when the loss has an entropy bonus
    values: torch.Tensor | None  # (b, t) from the value head or the separate critic, with gradient


def train_mode(modules: TrainModules) -> None:
    modules.lm.train()
    if modules.critic is not None:
        modules.critic.train()


def forward(modules: TrainModules, mb: RolloutBatch, s: UpdateSettings) -> Forward:
    """Log-probs, entropies and values of minibatch `mb` (on `s.device`) under the training numerics."""
    with torch.autocast(s.device.type, dtype=s.autocast_dtype, enabled=s.autocast_dtype is not None):
        logprobs, entropy, values = token_stats(
            modules.lm, mb.input_ids, mb.attention_mask, s.temperature, value_head=modules.value_head,
            detach_value_input=s.detach_critic, entropy_grad=s.loss.entropy_coef > 0,
            response_mask=mb.response_mask,
        )
        if modules.critic is not None:
            values = modules.critic(mb.input_ids, mb.attention_mask)  # (b, t)
    return Forward(logprobs, entropy, values)



class Parameters(NamedTuple):
    """The trained parameters, read before any forward (an FSDP2 forward swaps unsharded ones in)."""

    policy: list[torch.nn.Parameter]
    critic: list[torch.nn.Parameter]  # the value head's or the separate critic's; [] without a critic

    @classmethod
    def of(cls, modules: TrainModules) -> Parameters:
        critic = modules.value_head if modules.value_head is not None else modules.critic
        return cls([p for p in modules.lm.parameters() if p.requires_grad],
                   list(critic.parameters()) if critic is not None else [])


def minibatch_step(modules: TrainModules, params: Parameters, optimizer: torch.optim.Optimizer, mb: RolloutBatch,
                   fwd: Forward, credit: Credit, s: UpdateSettings) -> dict[str, float]:
    """Loss of one minibatch (its rows' `credit`, old log-probs in `mb`), backward, gradient clipping (the
    policy's and the critic's separately, each to `loss.max_grad_norm`, so that a large value loss cannot
    shrink the policy's step) and one optimizer step; returns the minibatch's metrics."""
    denom = s.sync.denominator(mb.response_mask, s.loss.agg) if s.sync is not None else None
    total, terms, own = _loss(modules, mb, fwd, credit, s.loss, denom)
    optimizer.zero_grad(set_to_none=True)
    total.backward()
    logs = {**terms, **own, **_step(params, optimizer, s.loss)}
    return {**logs, **_forward_metrics(fwd.logprobs, fwd.entropy, mb, s.loss)}


def accumulated_step(modules: TrainModules, params: Parameters, optimizer: torch.optim.Optimizer, mb: RolloutBatch,
                     credit: Credit, s: UpdateSettings) -> dict[str, float]:
    """`minibatch_step` in micro-batches of `s.micro_batch_rows` rows (gradient accumulation): each
    micro-batch's forward, its loss aggregated with the whole minibatch's denominator (the number of its
    tokens or rows, so the micro-batches' losses add up to the minibatch's) and backward; then clipping and
    one optimizer step. A policy loss that takes a batch statistic (Clip-Cov, KL-Cov, AEPO) would see one
    micro-batch's: it raises `ValueError`. Metrics: the loss terms summed over micro-batches, the ratio
    metrics and entropy over the whole minibatch, the policy loss's own metrics averaged over micro-batches
    weighted by their tokens."""
    if s.sync is not None:
        raise ValueError("rl.micro_batch_rows is for one process: under data parallelism use more ranks instead")
    cfg, mask = s.loss, mb.response_mask  # (b, t)
    denom = L.agg_count(mask, cfg.agg)  # (,): what agg_loss divides by over the whole minibatch
    refused = RefusedReduce(f"loss.policy={cfg.policy} takes a batch statistic, which a micro-batch of "
                            f"rl.micro_batch_rows={s.micro_batch_rows} would take over its own rows only: "
                            f"set rl.micro_batch_rows=0")
    logprobs = torch.zeros_like(mb.old_logprobs)  # (b, t): each micro-batch's detached log-probs
    entropy: torch.Tensor | None = None  # (b, t) once a forward gives entropies
    terms: dict[str, float] = {}
    own: dict[str, float] = {}
    optimizer.zero_grad(set_to_none=True)
    for rows in torch.arange(mb.batch_size).split(s.micro_batch_rows):
        micro = mb.select(rows).crop()
        width = micro.input_ids.shape[1]
        fwd = forward(modules, micro, s)
        part = credit.rows(rows, width, s.device)  # (m, w) each
        total, micro_terms, micro_own = _loss(modules, micro, fwd, part, cfg, denom, refused)
        total.backward()
        share = float(micro.response_mask.sum()) / max(float(mask.sum()), 1.0)
        for key, value in micro_terms.items():
            terms[key] = terms.get(key, 0.0) + value
        for key, value in micro_own.items():
            own[key] = own.get(key, 0.0) + share * value
        logprobs[rows, :width] = fwd.logprobs.detach()
        if fwd.entropy is not None:
            entropy = torch.zeros_like(logprobs) if entropy is None else entropy
            entropy[rows, :width] = fwd.entropy.detach()
    logs = {**terms, **own, **_step(params, optimizer, cfg)}
    return {**logs, **_forward_metrics(logprobs, entropy, mb, cfg)}


def _loss(modules: TrainModules, mb: RolloutBatch, fwd: Forward, credit: Credit, cfg: L.LossConfig,
          denom: torch.Tensor | None, reduce: BatchReduce | None = None,
          ) -> tuple[torch.Tensor, dict[str, float], dict[str, float]]:
    """The loss of minibatch (or micro-batch) `mb`: (total with gradient, its terms, the policy loss's own
    metrics). `denom`: what each term's aggregation divides by (None: `mb`'s own count)."""
    mask = mb.response_mask  # (b, t)
    critic = modules.value_head if modules.value_head is not None else modules.critic
    total, own = L.policy_loss_terms(fwd.logprobs, mb.old_logprobs, credit.advantages, credit.weights, mask,
                                     cfg, denom, entropy=fwd.entropy, reduce=reduce)
    terms = {"pg_loss": float(total.detach())}
    if critic is not None and credit.returns is not None:
        assert fwd.values is not None  # a forward with a critic has values
        old_values = mb.values if mb.values is not None else fwd.values.detach()
        vl = L.value_loss(fwd.values, old_values, credit.returns, mask, cfg, denom)
        total = total + cfg.value_coef * vl
        terms["value_loss"] = float(vl.detach())
    if cfg.kl_coef > 0:
        if mb.ref_logprobs is None:
            raise ValueError("loss.kl_coef > 0 needs reference log-probs in the batch")
        kl = L.agg_loss(L.kl_k3(fwd.logprobs, mb.ref_logprobs), mask, cfg.agg, denom)
        total = total + cfg.kl_coef * kl
        terms["kl_ref"] = float(kl.detach())
    if cfg.entropy_coef > 0 and fwd.entropy is not None:
        total = total - cfg.entropy_coef * L.entropy_bonus(fwd.entropy, mask, cfg.agg, denom)
    return total, terms, {key: float(value) for key, value in own.items()}


def _step(params: Parameters, optimizer: torch.optim.Optimizer, cfg: L.LossConfig) -> dict[str, float]:
    """Clip the accumulated gradients (the policy's and the critic's separately) and take the optimizer step."""
    logs = {"grad_norm": float(torch.nn.utils.clip_grad_norm_(params.policy, cfg.max_grad_norm))}
    if params.critic:
        logs["critic_grad_norm"] = float(torch.nn.utils.clip_grad_norm_(params.critic, cfg.max_grad_norm))
    optimizer.step()
    return logs


def _forward_metrics(logprobs: torch.Tensor, entropy: torch.Tensor | None, mb: RolloutBatch,
                     cfg: L.LossConfig) -> dict[str, float]:
    """The ratio metrics (and mean entropy) of the minibatch's forward, (b, t) tensors."""
    mask = mb.response_mask
    logs = {key: float(value) for key, value in L.policy_metrics(logprobs.detach(), mb.old_logprobs, mask, cfg).items()}
    if entropy is not None:
        logs["entropy"] = float((entropy.detach() * mask).sum() / mask.sum().clamp(min=1))
    return logs


def train_minibatch(modules: TrainModules, params: Parameters, optimizer: torch.optim.Optimizer, mb: RolloutBatch,
                    fwd: Forward, credit: Credit, s: UpdateSettings) -> list[dict[str, float]]:
    """The optimizer steps of one minibatch (`fwd`: its forward before any of them): one `minibatch_step`, or
    under `s.lopti_threshold` Lopti's two (arXiv 2505.12929): a step whose loss covers only the generated
    tokens with p_old < threshold, then a fresh forward and a step on the others (p_old >= threshold). Each
    pass is `minibatch_step` on the minibatch with its response mask cut to the pass's tokens, so every term
    of a token (policy, value, KL, entropy) acts in that token's pass, aggregated over the pass's tokens. A
    pass with no token on any rank is skipped (no forward, no optimizer step), the same on every rank.
    Each pass's metrics also carry `lopti_low_share`, the share of the minibatch's tokens in the first."""
    if s.lopti_threshold is None:
        return [minibatch_step(modules, params, optimizer, mb, fwd, credit, s)]
    mask = mb.response_mask  # (b, t)
    low = mask & (mb.old_logprobs.exp() < s.lopti_threshold)  # (b, t)
    share = float(low.sum()) / max(float(mask.sum()), 1.0)
    steps: list[dict[str, float]] = []
    for part in (low, mask & ~low):
        if _global_tokens(part, s) == 0:
            continue
        if steps:  # the first pass moved the policy: score the minibatch again
            fwd = forward(modules, mb, s)
        logs = minibatch_step(modules, params, optimizer, replace(mb, response_mask=part), fwd, credit, s)
        steps.append({**logs, "lopti_low_share": share})
    return steps


def _global_tokens(mask: torch.Tensor, s: UpdateSettings) -> int:
    """The number of set entries of `mask` over every rank (this rank's without `s.sync`)."""
    count = mask.sum().reshape(1).to(torch.float64)
    return int(s.sync.total(count)[0]) if s.sync is not None else int(count[0])


def mean_metrics(steps: list[dict[str, float]]) -> dict[str, float]:
    """The mean over minibatch steps of each metric (over the steps that report it)."""
    keys = dict.fromkeys(k for step in steps for k in step)
    return {k: float(sum(v) / max(len(v), 1)) for k in keys if (v := [step[k] for step in steps if k in step])}


def minibatch_rows(batch_size: int, s: UpdateSettings, generator: torch.Generator) -> list[torch.Tensor]:
    """One epoch's minibatches: a random permutation of the rows (drawn from `generator`) cut into
    `s.minibatches` chunks (fewer when the batch has fewer rows; exactly that many under `s.sync`)."""
    order = torch.randperm(batch_size, generator=generator)  # (B,)
    if s.sync is not None:
        return s.sync.split(order, s.minibatches)
    return list(torch.chunk(order, max(1, min(s.minibatches, batch_size))))


def ppo_update(modules: TrainModules, optimizer: torch.optim.Optimizer, batch: RolloutBatch, credit: Credit,
               s: UpdateSettings, generator: torch.Generator) -> dict[str, float]:
    """`s.epochs` x minibatches of `minibatch_step` on the scored `batch` (old log-probs, values and
    reference log-probs filled); returns the mean metrics over minibatches (this rank's, under `s.sync`:
    `train.distributed.ranks.reduce_metrics` averages them). The critic is `modules.value_head` on the policy's
    last hidden state or `modules.critic`, a separate network (input_ids, attention_mask) -> (B, T) values
    (`train.update.critic.SeparateCritic`)."""
    if modules.value_head is not None and modules.critic is not None:
        raise ValueError("ppo_update takes a value head on the policy or a separate critic, not both")
    params = Parameters.of(modules)
    train_mode(modules)
    steps = []
    for _ in range(s.epochs):
        for chunk in minibatch_rows(batch.batch_size, s, generator):
            mb = batch.select(chunk).crop().to(s.device)
            rows = credit.rows(chunk, mb.input_ids.shape[1], s.device)
            if s.micro_batch_rows and mb.batch_size > s.micro_batch_rows:
                steps.append(accumulated_step(modules, params, optimizer, mb, rows, s))
            else:
                steps.extend(train_minibatch(modules, params, optimizer, mb, forward(modules, mb, s), rows, s))
    return mean_metrics(steps)

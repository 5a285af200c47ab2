"""The RL update of one step: `update(learner, collected batch, config, context) -> (scored batch, metrics)`.

Scoring recomputes the batch's old log-probs (and entropies, values, reference log-probs) with a
no-grad forward of the trained model, so that the PPO ratio compares two forwards with the same
numerics; credit (`credit_for`) then runs once on the scored batch, over every rank's rows, and
`ppo_update` trains on it.

When the update's first forward is at the policy that sampled the batch (`fuses_scoring`: one epoch, one
minibatch; Lopti's second pass then runs a forward of its own), that forward is the scoring pass: the forward's detached log-probs (and
entropies) are the old ones (the ratio is 1 at every token), the separate pass is skipped, and credit
runs between that forward and the loss, on the batch it scored, so estimators and token weights that
read old log-probs (ActFocus with `energy_source: old`) see the same numbers as with the pass.
The pass is kept when
- there are several epochs or minibatches (every step after the first is off-policy);
- there is a reference model (its log-probs are a forward of another model) or a critic (GAE reads
  the values before the update);
- the caller does not vouch that the batch was sampled by `TransformersEngine` from the trained module at
  its current weights (`StepContext.on_policy`: the module itself or its refreshed bf16 copy; vLLM holds
  weights of its own);
- the run is data-parallel (credit and the loss need every rank's rows);
- the update runs in micro-batches (`rl.micro_batch_rows`: the pass is then as many no-grad forwards).
Left out: skipping the pass for the first minibatch of several (later minibatches would still need it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from agentbench_af.models.forward import score_batch
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.train.bookkeeping.health import token_weight_metrics
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.distributed.credit import rank_advantages, rank_token_weights
from agentbench_af.train.distributed.ranks import SINGLE, Ranks, UpdateSync
from agentbench_af.train.update.learner import Learner
from agentbench_af.train.update.ppo import (
    Credit,
    Parameters,
    UpdateSettings,
    forward,
    mean_metrics,
    minibatch_rows,
    ppo_update,
    train_minibatch,
    train_mode,
)


@dataclass(frozen=True)
class StepContext:
    """What one step's update needs besides the learner, the batch and the config. `on_policy`: the batch
    was sampled by `TransformersEngine` on the trained module at its current weights (`samples_on_policy`),
    so the update's forward may score it."""

    generator: torch.Generator  # the minibatch order
    device: torch.device
    autocast: torch.dtype | None = None
    ranks: Ranks = SINGLE
    on_policy: bool = False


def samples_on_policy(engine: object, learner: Learner) -> bool:
    """Whether `engine` samples from the module the update trains, at its current weights: the module itself, or
    the bf16 copy `rollout.sampler_dtype` makes, refreshed from it at every call. Either way the old log-probs
    are the training forward's (the shortcut's or the scoring pass's), never the sampler's."""
    return isinstance(engine, TransformersEngine) and engine.model is learner.policy.lm


def fuses_scoring(cfg: TrainConfig, learner: Learner, ctx: StepContext) -> bool:
    """Whether the update's forward replaces the scoring pass exactly (see the module docstring)."""
    return (ctx.on_policy and not ctx.ranks.active and cfg.rl.epochs == 1 and cfg.rl.minibatches == 1
            and learner.ref_lm is None and learner.value_head is None and learner.critic is None
            and not cfg.rl.micro_batch_rows)


def update_settings(cfg: TrainConfig, ctx: StepContext) -> UpdateSettings:
    return UpdateSettings(cfg.loss, ctx.device, cfg.rl.epochs, cfg.rl.minibatches, max(cfg.rollout.temperature, 1e-6),
                          ctx.autocast, cfg.rl.critic == "detached", UpdateSync(ctx.ranks) if ctx.ranks.active else None,
                          cfg.rl.lopti_threshold if cfg.rl.token_passes == "lopti" else None, cfg.rl.micro_batch_rows)


def score(learner: Learner, batch: RolloutBatch, cfg: TrainConfig, device: torch.device) -> RolloutBatch:
    """The scoring pass: a copy of `batch` with old log-probs, entropies, values and reference log-probs
    from no-grad forwards of the learner's (unwrapped) modules."""
    return score_batch(learner.policy.lm, batch, cfg.rollout.temperature, device, learner.value_head,
                       learner.ref_lm, learner.critic, max_rows=cfg.rl.micro_batch_rows or None)


def credit_for(batch: RolloutBatch, cfg: TrainConfig, ranks: Ranks = SINGLE) -> Credit:
    """Advantages, returns and token weights of a scored batch (this rank's rows, batch statistics over
    every rank's)."""
    advantage = rank_advantages(batch, cfg.credit, ranks)
    return Credit(advantage.advantages, advantage.returns, rank_token_weights(batch, cfg.credit, ranks))


def _scored_by(batch: RolloutBatch, rows: torch.Tensor, logprobs: torch.Tensor, entropy: torch.Tensor | None,
               mask: torch.Tensor) -> RolloutBatch:
    """A copy of `batch` whose old log-probs (and entropies) are a forward's over rows `rows` (every row,
    in the forward's order; (b, t) tensors cropped to t columns, `mask` their response mask)."""
    width = logprobs.shape[1]

    def scatter(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        full = torch.zeros_like(like)  # (B, T)
        full[rows.to(like.device), :width] = (values.detach() * mask).to(full.device, full.dtype)
        return full

    updates = {"old_logprobs": scatter(logprobs, batch.old_logprobs)}
    if entropy is not None:
        updates["entropy"] = scatter(entropy, batch.entropy)
    return replace(batch, **updates)


def update(learner: Learner, batch: RolloutBatch, cfg: TrainConfig,
           ctx: StepContext) -> tuple[RolloutBatch, dict[str, float]]:
    """Score `batch` (as collected), assign credit and run the update on the learner's trained modules;
    returns the scored batch (a new value; `batch` is left as it was) and this rank's update metrics."""
    s = update_settings(cfg, ctx)
    if not fuses_scoring(cfg, learner, ctx):
        scored = score(learner, batch, cfg, ctx.device)
        credit = credit_for(scored, cfg, ctx.ranks)
        metrics = ppo_update(learner.trained, learner.optimizer, scored, credit, s, ctx.generator)
        return scored, {**metrics, **token_weight_metrics(credit.weights, scored)}
    # one epoch of one minibatch: every row, in the order ppo_update would draw
    params = Parameters.of(learner.trained)
    train_mode(learner.trained)
    (rows,) = minibatch_rows(batch.batch_size, s, ctx.generator)
    mb = batch.select(rows).crop().to(s.device)
    fwd = forward(learner.trained, mb, s)
    scored = _scored_by(batch, rows, fwd.logprobs, fwd.entropy, mb.response_mask)
    mb = replace(mb, old_logprobs=fwd.logprobs.detach() * mb.response_mask)  # (b, t): the ratio is 1
    credit = credit_for(scored, cfg)
    metrics = mean_metrics(train_minibatch(learner.trained, params, learner.optimizer, mb, fwd,
                                           credit.rows(rows, mb.input_ids.shape[1], s.device), s))
    return scored, {**metrics, **token_weight_metrics(credit.weights, scored)}

"""One RL update on a collected batch: score it, assign credit, run `ppo_update`.

The scoring pass (`score_batch`) recomputes the batch's old log-probs with a no-grad forward of the
trained model, so that the PPO ratio compares two forwards with the same numerics. When the update
takes exactly one optimizer step from the policy that sampled the batch (one epoch, one minibatch),
the update's own forward is that pass: its detached log-probs (and entropies) are the old ones (the
ratio is 1 at every token) and the separate pass is skipped (`scores_in_update`). Credit assignment then runs inside
the update, after that forward, on the batch it scored, so estimators and token weights that read old
log-probs (ActFocus with `energy_source: old`) see the same numbers as with the pass.

The pass is kept when
- there are several epochs or minibatches (every step after the first is off-policy);
- there is a reference model (its log-probs are a forward of another model) or a critic (GAE reads
  the values before the update);
- the rollouts were not sampled by `TransformersEngine` on the trained module itself (e.g. vLLM, whose
  numerics differ from the training forward's).
The training loop also keeps it at step 0 (its diagnostic reads the warm-start policy before the update)
and under data parallelism (credit and the loss need every rank's rows).
Left out: skipping the pass for the first minibatch of several (later minibatches would still need it).
"""

from __future__ import annotations

import torch
from torch import nn

from agentbench_af.credit import compute_advantages, compute_token_weights
from agentbench_af.models.forward import score_batch
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.update import CreditTensors, UpdateInputs, ppo_update


def scores_in_update(cfg: TrainConfig, lm: nn.Module, engine: object, ref_lm: nn.Module | None = None,
                     critic: nn.Module | None = None) -> bool:
    """Whether the update's forward replaces the scoring pass exactly (see the module docstring);
    `critic` is the value head or the separate critic, if any."""
    return (cfg.rl.epochs == 1 and cfg.rl.minibatches == 1 and ref_lm is None and critic is None
            and isinstance(engine, TransformersEngine) and engine.model is lm)


def credit_tensors(batch: RolloutBatch, cfg: TrainConfig) -> CreditTensors:
    """Advantages, returns and token weights of a scored batch."""
    advantage = compute_advantages(batch, cfg.credit)
    return CreditTensors(advantage.advantages, advantage.returns, compute_token_weights(batch, cfg.credit))


def update_on_batch(
    lm: nn.Module,
    batch: RolloutBatch,
    cfg: TrainConfig,
    optimizer: torch.optim.Optimizer,
    generator: torch.Generator,
    device: torch.device,
    autocast_dtype: torch.dtype | None = None,
    *,
    score_in_update: bool = False,
    value_head: nn.Module | None = None,
    critic: nn.Module | None = None,
    ref_lm: nn.Module | None = None,
) -> tuple[RolloutBatch, dict[str, float]]:
    """Score (unless `score_in_update`, from `scores_in_update`), assign credit and update; returns the
    scored batch (old log-probs filled either way) and the update's metrics."""
    temperature = max(cfg.rollout.temperature, 1e-6)
    if score_in_update:
        inputs = UpdateInputs(batch, credit=lambda scored: credit_tensors(scored, cfg))
    else:
        batch = score_batch(lm, batch, cfg.rollout.temperature, device, value_head, ref_lm, critic)
        inputs = UpdateInputs(batch, *credit_tensors(batch, cfg))
    metrics = ppo_update(lm, value_head, optimizer, inputs, cfg.loss, cfg.rl.epochs, cfg.rl.minibatches, temperature,
                         generator, device, autocast_dtype, detach_critic=cfg.rl.critic == "detached", critic=critic)
    return inputs.batch, metrics

"""One PPO/GRPO policy update over a rollout batch: epochs x minibatches of the weighted clipped loss.

Advantages and token weights are computed once for the whole batch (credit assignment is pure tensor
code in `agentbench_af.credit`) and sliced per minibatch; every loss term is a `train.loss` function
(`policy_loss`, `value_loss`, `kl_k3`, `entropy_bonus`). The weights multiply the policy surrogate only.
With `UpdateInputs.credit` instead (one epoch, one minibatch: `train.step`), the update's forward
scores the batch (its detached log-probs are the old log-probs) and credit runs on that scored batch
before the loss. Left out: gradient accumulation across minibatches (one optimizer step per minibatch,
as in PPO) and mixed-precision loss scaling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NamedTuple

import torch
from torch import nn

from agentbench_af.models.forward import token_stats
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.train import loss as L
from agentbench_af.train.distributed import UpdateSync


class CreditTensors(NamedTuple):
    advantages: torch.Tensor  # (B, T)
    returns: torch.Tensor | None  # (B, T), for the value loss
    weights: torch.Tensor  # (B, T)


@dataclass
class UpdateInputs:
    """The batch and its credit: the tensors, or `credit` (scored batch -> tensors) to run after the
    update's forward has scored the batch; `batch` is then replaced by the scored batch."""

    batch: RolloutBatch
    advantages: torch.Tensor | None = None  # (B, T)
    returns: torch.Tensor | None = None  # (B, T), for the value loss
    weights: torch.Tensor | None = None  # (B, T)
    credit: Callable[[RolloutBatch], CreditTensors] | None = None

    def __post_init__(self) -> None:
        if (self.credit is None) == (self.advantages is None or self.weights is None):
            raise ValueError("UpdateInputs takes advantages and weights, or a credit function, not both")


def _score_in_update(inputs: UpdateInputs, chunk: torch.Tensor, logprobs: torch.Tensor,
                     entropy: torch.Tensor | None, mask: torch.Tensor):
    """Set the batch's old log-probs (and entropies) to the update's detached ones (rows `chunk`, which
    must be every row: the fields a scoring pass would set) and run credit on the scored batch; returns
    the minibatch's old log-probs and credit tensors."""
    batch = inputs.batch
    width = logprobs.shape[1]
    rows = chunk.to(batch.old_logprobs.device)

    def scatter(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        full = torch.zeros_like(like)  # (B, T)
        full[rows, :width] = (values.detach() * mask).to(full.device, full.dtype)
        return full

    updates = {"old_logprobs": scatter(logprobs, batch.old_logprobs)}
    if entropy is not None:
        updates["entropy"] = scatter(entropy, batch.entropy)
    inputs.batch = replace(batch, **updates)
    credit = inputs.credit(inputs.batch)
    sliced = [None if t is None else t[chunk, :width].to(logprobs.device) for t in credit]
    return logprobs.detach() * mask, sliced


def _mean(values: list[float]) -> float:
    return float(sum(values) / max(len(values), 1))


def ppo_update(
    lm: nn.Module,
    value_head: nn.Module | None,
    optimizer: torch.optim.Optimizer,
    inputs: UpdateInputs,
    loss_cfg: L.LossConfig,
    epochs: int,
    minibatches: int,
    temperature: float,
    generator: torch.Generator,
    device: torch.device,
    autocast_dtype: torch.dtype | None = None,
    detach_critic: bool = False,
    critic: nn.Module | None = None,
    sync: UpdateSync | None = None,
) -> dict[str, float]:
    """Run the update in place; returns mean metrics over minibatches. The critic is either `value_head`
    on the policy's last hidden state or `critic`, a separate network (input_ids, attention_mask) ->
    (B, T) values (`train.critic.SeparateCritic`). The policy's and the critic's gradients are clipped
    separately (each to loss_cfg.max_grad_norm), so a large value loss cannot shrink the policy's step;
    `detach_critic`: the value head's loss does not reach the policy's trunk (`rl.critic`).
    `sync` (data parallelism): the modules are DDP/FSDP2-wrapped, `inputs` is this rank's share, every
    loss term divides by the global count over the world size, and every rank takes exactly `minibatches`
    optimizer steps; the metrics are this rank's (`train.distributed.reduce_metrics` averages them)."""
    if value_head is not None and critic is not None:
        raise ValueError("ppo_update takes a value head on the policy or a separate critic, not both")
    batch = inputs.batch
    B = batch.batch_size
    if inputs.credit is not None and (epochs != 1 or min(minibatches, B) > 1):
        raise ValueError("scoring the batch in the update needs one epoch and one minibatch "
                         f"(got {epochs} epochs, {minibatches} minibatches)")
    if inputs.credit is not None and sync is not None:
        raise ValueError("scoring the batch in the update runs on one process (credit needs every rank's rows)")
    params = [p for p in lm.parameters() if p.requires_grad]
    critic_module = value_head if value_head is not None else critic
    critic_params = list(critic_module.parameters()) if critic_module is not None else []
    logs: dict[str, list[float]] = {}
    lm.train()
    if critic is not None:
        critic.train()
    for _ in range(epochs):
        order = torch.randperm(B, generator=generator)
        chunks = sync.split(order, minibatches) if sync is not None else torch.chunk(order, max(1, min(minibatches, B)))
        for chunk in chunks:
            mb = batch.select(chunk).crop().to(device)
            width = mb.input_ids.shape[1]
            mask = mb.response_mask  # (b, t)
            denom = sync.denominator(mask, loss_cfg.agg) if sync is not None else None
            with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
                logprobs, entropy, values = token_stats(
                    lm, mb.input_ids, mb.attention_mask, temperature, value_head=value_head,
                    detach_value_input=detach_critic, entropy_grad=loss_cfg.entropy_coef > 0,
                    response_mask=mask,
                )
                if critic is not None:
                    values = critic(mb.input_ids, mb.attention_mask)  # (b, t)
            if inputs.credit is None:
                adv = inputs.advantages[chunk, :width].to(device)  # (b, t)
                ret = None if inputs.returns is None else inputs.returns[chunk, :width].to(device)  # (b, t)
                w = inputs.weights[chunk, :width].to(device)  # (b, t)
            else:  # on-policy: this forward is the scoring pass
                mb.old_logprobs, (adv, ret, w) = _score_in_update(inputs, chunk, logprobs, entropy, mask)
            total = L.policy_loss(logprobs, mb.old_logprobs, adv, w, mask, loss_cfg, denom)
            logs.setdefault("pg_loss", []).append(float(total.detach()))
            if critic_module is not None and ret is not None:
                old_values = mb.values if mb.values is not None else values.detach()
                vl = L.value_loss(values, old_values, ret, mask, loss_cfg, denom)
                total = total + loss_cfg.value_coef * vl
                logs.setdefault("value_loss", []).append(float(vl.detach()))
            if loss_cfg.kl_coef > 0:
                if mb.ref_logprobs is None:
                    raise ValueError("loss.kl_coef > 0 needs reference log-probs in the batch")
                kl = L.agg_loss(L.kl_k3(logprobs, mb.ref_logprobs), mask, loss_cfg.agg, denom)
                total = total + loss_cfg.kl_coef * kl
                logs.setdefault("kl_ref", []).append(float(kl.detach()))
            if loss_cfg.entropy_coef > 0 and entropy is not None:
                total = total - loss_cfg.entropy_coef * L.entropy_bonus(entropy, mask, loss_cfg.agg, denom)
            optimizer.zero_grad(set_to_none=True)
            total.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(params, loss_cfg.max_grad_norm)
            if critic_params:
                critic_norm = torch.nn.utils.clip_grad_norm_(critic_params, loss_cfg.max_grad_norm)
                logs.setdefault("critic_grad_norm", []).append(float(critic_norm))
            optimizer.step()
            for key, value in L.policy_metrics(logprobs.detach(), mb.old_logprobs, mask, loss_cfg).items():
                logs.setdefault(key, []).append(float(value))
            if entropy is not None:
                ent_mean = (entropy.detach() * mask).sum() / mask.sum().clamp(min=1)
                logs.setdefault("entropy", []).append(float(ent_mean))
            logs.setdefault("grad_norm", []).append(float(grad_norm))
    return {k: _mean(v) for k, v in logs.items()}

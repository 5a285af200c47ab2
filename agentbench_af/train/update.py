"""One PPO/GRPO policy update over a rollout batch: epochs x minibatches of the weighted clipped loss.

Advantages and token weights are computed once for the whole batch (credit assignment is pure tensor
code in `agentbench_af.credit`) and sliced per minibatch; every loss term is a `train.loss` function
(`policy_loss`, `value_loss`, `kl_k3`, `entropy_bonus`). The weights multiply the policy surrogate only.
Left out: gradient accumulation across minibatches (one optimizer step per minibatch, as in PPO) and
mixed-precision loss scaling.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from agentbench_af.models.forward import token_stats
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.train import loss as L
from agentbench_af.train.distributed import UpdateSync


@dataclass
class UpdateInputs:
    batch: RolloutBatch
    advantages: torch.Tensor  # (B, T)
    returns: torch.Tensor | None  # (B, T), for the value loss
    weights: torch.Tensor  # (B, T)


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
            adv = inputs.advantages[chunk, :width].to(device)  # (b, t)
            w = inputs.weights[chunk, :width].to(device)  # (b, t)
            mask = mb.response_mask  # (b, t)
            denom = sync.denominator(mask, loss_cfg.agg) if sync is not None else None
            with torch.autocast(device.type, dtype=autocast_dtype, enabled=autocast_dtype is not None):
                logprobs, entropy, values = token_stats(
                    lm, mb.input_ids, mb.attention_mask, temperature, value_head=value_head,
                    detach_value_input=detach_critic, entropy_grad=loss_cfg.entropy_coef > 0,
                )
                if critic is not None:
                    values = critic(mb.input_ids, mb.attention_mask)  # (b, t)
            total = L.policy_loss(logprobs, mb.old_logprobs, adv, w, mask, loss_cfg, denom)
            logs.setdefault("pg_loss", []).append(float(total.detach()))
            if critic_module is not None and inputs.returns is not None:
                ret = inputs.returns[chunk, :width].to(device)
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

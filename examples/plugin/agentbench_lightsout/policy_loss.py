"""The `centred-clip` policy loss: ppo-clip on advantages centred by their mean over the whole batch."""

import torch

from agentbench_af.credit import PolicyLossOutput, register_policy_loss


@register_policy_loss("centred-clip", source="example plugin: ppo-clip on batch-centred advantages")
def centred_clip(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce) -> PolicyLossOutput:
    a = advantages.detach().double()[mask.bool()]  # (M,) this process's generated tokens
    n, total = reduce.sum(torch.stack([a.new_tensor(float(a.numel())), a.sum()]))  # over every rank
    centred = advantages - float(total / n.clamp(min=1))  # (B, T)
    ratio = torch.exp((logprobs - old_logprobs).clamp(-20.0, 20.0))  # (B, T)
    clipped = ratio.clamp(1.0 - cfg.clip_eps_low, 1.0 + cfg.clip_eps_high)  # (B, T)
    per_token = torch.maximum(-centred * ratio, -centred * clipped)  # (B, T)
    return PolicyLossOutput(weights * per_token, {"advantage_mean": float(total / n.clamp(min=1))})

"""`SeparateCritic`: PPO's value network as its own copy of the policy's trunk plus a linear head.

`rl.critic: separate`. As verl and OpenRLHF do for LLM PPO, the critic starts from the policy's weights
at the warm start and then trains on the value loss alone, at `rl.critic_lr`; the policy never receives
its gradients and the critic never receives the policy's. It costs one more trunk forward and backward per
minibatch (without the vocabulary projection) and one more copy of the trunk's weights and Adam state.
Left out: a critic built from another model (e.g. a reward model) and critic-only warm-up steps.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from transformers import PreTrainedModel

from agentbench_af.models.value import ValueHead


class SeparateCritic(nn.Module):
    """`trunk` (a copy of the LM's base model) and `value_head`; token-aligned values like `token_stats`."""

    def __init__(self, lm: PreTrainedModel, seed: int = 0) -> None:
        super().__init__()
        self.trunk = copy.deepcopy(lm.base_model)  # the decoder stack without the LM head
        self.trunk.requires_grad_(True)
        device = next(lm.parameters()).device
        self.value_head = ValueHead(int(lm.config.hidden_size), seed=seed).to(device)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """`input_ids`, `attention_mask` (B, T), right padded -> values (B, T): `values[:, t]` is the value of
        generating token t, read at the position that predicts it (t - 1); position 0 holds 0."""
        mask = attention_mask.long()
        position_ids = (mask.cumsum(-1) - 1).clamp(min=0)  # (B, T)
        hidden = self.trunk(input_ids=input_ids, attention_mask=mask, position_ids=position_ids,
                            use_cache=False).last_hidden_state  # (B, T, H), after the final norm
        v = self.value_head(hidden[:, :-1].to(self.value_head.weight.dtype)).squeeze(-1)  # (B, T-1)
        return torch.nn.functional.pad(v, (1, 0))  # (B, T)

"""`Learner`: what an RL update changes, built from a warm start: the policy, its critic (a value head
or a separate critic network, for GAE), a frozen reference model (KL or `ref` energies), the optimizer
and its learning-rate schedule, with the state a checkpoint saves and restores.

Left out: parameter-efficient fine-tuning (every policy weight is trained).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from agentbench_af.models.policy import Policy
from agentbench_af.models.value import ValueHead
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.critic import SeparateCritic
from agentbench_af.train.sft import warmup_lambda


@dataclass
class Learner:
    policy: Policy
    value_head: ValueHead | None
    critic: SeparateCritic | None
    ref_lm: nn.Module | None
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler

    def model_state(self) -> dict[str, Any]:
        return {"lm": self.policy.lm.state_dict(),
                "value_head": self.value_head.state_dict() if self.value_head is not None else None,
                "critic": self.critic.state_dict() if self.critic is not None else None}

    def load_state(self, model: dict[str, Any], optimizer: dict[str, Any], scheduler: dict[str, Any]) -> None:
        self.policy.lm.load_state_dict(model["lm"])
        if self.value_head is not None:
            self.value_head.load_state_dict(model["value_head"])
        if self.critic is not None:
            self.critic.load_state_dict(model["critic"])
        self.optimizer.load_state_dict(optimizer)
        self.scheduler.load_state_dict(scheduler)


def build_learner(cfg: TrainConfig, warm_dir: Path, device: torch.device) -> Learner:
    policy = Policy.load(warm_dir, device)
    separate = cfg.needs_value_head and cfg.rl.critic == "separate"
    value_head = policy.ensure_value_head() if cfg.needs_value_head and not separate else None
    critic = SeparateCritic(policy.lm) if separate else None  # copied from the warm start, before any update
    needs_ref = cfg.loss.kl_coef > 0 or cfg.credit.energy_source == "ref"
    ref_lm = copy.deepcopy(policy.lm).eval().requires_grad_(False) if needs_ref else None
    groups = [{"params": list(policy.lm.parameters()), "lr": cfg.rl.lr}]
    for module in (value_head, critic):
        if module is not None:
            groups.append({"params": list(module.parameters()), "lr": cfg.rl.critic_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=cfg.rl.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_lambda(cfg.rl.warmup_steps))
    return Learner(policy, value_head, critic, ref_lm, optimizer, scheduler)

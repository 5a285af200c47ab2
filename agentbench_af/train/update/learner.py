"""`Learner`: what an RL update changes, built from a warm start: the policy, its critic (a value head
or a separate critic network, for GAE), a frozen reference model (KL or `ref` energies), the optimizer
and its learning-rate schedule, with the state a checkpoint saves and restores. In a data-parallel run
`trained` holds the modules the update runs on (DDP wrappers or FSDP2 shards, `train.distributed.data_parallel`) and
the checkpoint state is still the full, one-process state, so any world size resumes it.

With `model.lora_rank` > 0 the policy gets fresh LoRA adapters (`models.lora`) on the warm start, and
only they enter the optimizer; generation uses the same adapted model. The reference model (KL, `ref`
energies) and a separate critic are copied before that, so they are the plain warm start. (With frozen
base weights, the policy with its adapters switched off is that reference too; the copy is kept for
simplicity, at the price of one more copy of the base weights.) A checkpoint holds the adapted model's
whole state dict (frozen base weights and adapters) and the optimizer's state of the adapters.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from agentbench_af.models.checkpointing import enable_checkpointing
from agentbench_af.models.lora import add_lora, trainable_parameters
from agentbench_af.models.policy import Policy
from agentbench_af.models.value import ValueHead
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.distributed.data_parallel import DataParallel, TrainModules
from agentbench_af.train.distributed.ranks import SINGLE, Ranks
from agentbench_af.train.update.critic import SeparateCritic
from agentbench_af.train.warm.sft import warmup_lambda


@dataclass
class Learner:
    policy: Policy
    value_head: ValueHead | None
    critic: SeparateCritic | None
    ref_lm: nn.Module | None
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    parallel: DataParallel
    trained: TrainModules  # what ppo_update runs on: the plain modules for one process

    def model_state(self) -> dict[str, Any]:
        state = self.parallel.model_state()
        return {"lm": state.get("lm"), "value_head": state.get("value_head"), "critic": state.get("critic")}

    def optimizer_state(self) -> dict[str, Any]:
        return self.parallel.optimizer_state(self.optimizer)

    def load_state(self, model: dict[str, Any], optimizer: dict[str, Any], scheduler: dict[str, Any]) -> None:
        self.parallel.load_model_state(model)
        self.parallel.load_optimizer_state(self.optimizer, optimizer)
        self.scheduler.load_state_dict(scheduler)


def build_learner(cfg: TrainConfig, warm_dir: Path, device: torch.device, ranks: Ranks = SINGLE) -> Learner:
    if cfg.rl.micro_batch_rows and ranks.active:
        raise ValueError(f"rl.micro_batch_rows is for one process; under torchrun ({ranks.world_size} ranks) spread "
                         f"the rows over more ranks instead (set rl.micro_batch_rows=0)")
    policy = Policy.load(warm_dir, device)
    if cfg.model.gradient_checkpointing:
        enable_checkpointing(policy.lm)
    separate = cfg.needs_value_head and cfg.rl.critic == "separate"
    value_head = policy.ensure_value_head() if cfg.needs_value_head and not separate else None
    critic = SeparateCritic(policy.lm) if separate else None  # type: ignore[arg-type]  # copied from the warm start
    ref_lm = copy.deepcopy(policy.lm).eval().requires_grad_(False) if cfg.needs_reference_model else None
    lora = cfg.model.lora_for(sft=False)
    if lora is not None:  # after the copies: the critic and the reference are the plain warm start
        add_lora(policy.lm, lora, seed=cfg.run.seed)
    parallel = DataParallel(ranks, cfg.run.parallel, device)
    trained = parallel.wrap(TrainModules(policy.lm, value_head, critic))
    groups = [{"params": trainable_parameters(trained.lm), "lr": cfg.rl.lr}]
    for module in (trained.value_head, trained.critic):
        if module is not None:
            groups.append({"params": list(module.parameters()), "lr": cfg.rl.critic_lr})
    optimizer = torch.optim.AdamW(groups, weight_decay=cfg.rl.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_lambda(cfg.rl.warmup_steps))
    return Learner(policy, value_head, critic, ref_lm, optimizer, scheduler, parallel, trained)

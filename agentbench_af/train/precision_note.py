"""A note, before RL starts, when the update would read LoRA adapters through a bf16 forward.

Under bf16 autocast an adapted layer adds its adapter's output to a base output already rounded to bf16, so a
small, early update of the adapters is partly rounded away. Measured on SmolLM2-135M after four LoRA SFT
steps (docs/smollm2.md, "Under bf16"): the bf16 forward showed 53 % of the loss's fall that an fp32 forward
showed. The sampling copy merges the adapters first (`rollout.sampler_copy`); the update's forwards cannot
without losing what LoRA saves, so its log-probs (the ratio, the KL term) read that rounded model.
"""

from __future__ import annotations

import torch

from agentbench_af.train.config import TrainConfig


def lora_bf16_note(cfg: TrainConfig, autocast: torch.dtype | None) -> str | None:
    """One line when RL updates LoRA adapters under bf16 autocast, else None."""
    if autocast != torch.bfloat16 or cfg.model.lora_for(sft=False) is None or cfg.rl.steps <= 0:
        return None
    return ("note: the update runs LoRA adapters under bf16 autocast, which rounds away part of their small, early "
            "change (about half after four SFT steps of SmolLM2; docs/smollm2.md, 'Under bf16'); "
            "model.dtype=float32 updates in fp32 (rollout.sampler_dtype=bfloat16 still samples in bf16)")

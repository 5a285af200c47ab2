"""The note before RL when LoRA adapters are updated under bf16 autocast (`train/precision_note.py`)."""

import dataclasses

import torch

from agentbench_af.train.config import TrainConfig
from agentbench_af.train.precision_note import lora_bf16_note


def _cfg(rank: int = 16, steps: int = 40) -> TrainConfig:
    cfg = TrainConfig()
    return dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, lora_rank=rank),
                               rl=dataclasses.replace(cfg.rl, steps=steps))


def test_only_a_bf16_lora_update_gets_the_note():
    note = lora_bf16_note(_cfg(), torch.bfloat16)
    assert note is not None and "model.dtype=float32" in note and "docs/smollm2.md" in note
    assert lora_bf16_note(_cfg(), None) is None  # fp32 update
    assert lora_bf16_note(_cfg(rank=0), torch.bfloat16) is None  # full fine-tuning: no adapters
    assert lora_bf16_note(_cfg(steps=0), torch.bfloat16) is None  # a warm start only

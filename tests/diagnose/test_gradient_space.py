"""`diagnose.gradient_space`: the headline's gradients over fresh LoRA adapters or every parameter, and the
memory they need (hand-worked)."""

import pytest
import torch
from torch import nn
from transformers import LlamaForCausalLM

from agentbench_af.diagnose.gradient_space import (
    check_gradient_memory,
    gradient_bytes,
    gradient_space,
    n_trainable,
)
from agentbench_af.models.lora import LoraSettings
from agentbench_af.models.tiny import tiny_config


def _model() -> nn.Module:
    torch.manual_seed(0)
    return LlamaForCausalLM(tiny_config("tiny-0.2m", vocab_size=64)).eval()


def test_gradient_bytes_by_hand():
    # G = 3 rollouts x P = 10 parameters: two roles of fp32 vectors (3 x 10 x 4 x 2 = 240) + one float64 stack (240)
    assert gradient_bytes(10, 3) == 480
    check_gradient_memory(10, 3, available=480)  # fits exactly
    with pytest.raises(ValueError, match=r"over 10 parameters.*--lora-rank 16"):
        check_gradient_memory(10, 3, available=479)


def test_every_parameter_without_lora():
    lm = _model()
    same, described = gradient_space(lm, None, seed=0)
    total = sum(p.numel() for p in lm.parameters())
    assert same is lm and n_trainable(lm) == total and described == f"every parameter ({total:,})"


def test_fresh_adapters_count_and_leave_the_outputs_unchanged():
    lm = _model()
    ids = torch.randint(0, 64, (2, 7))
    before = lm(input_ids=ids).logits
    linears = {name: m for name, m in lm.named_modules() if isinstance(m, nn.Linear) and name.endswith(("q_proj", "v_proj"))}
    # rank 2 on q_proj and v_proj: each gets A (2 x in) and B (out x 2)
    expected = sum(2 * (m.in_features + m.out_features) for m in linears.values())
    _, described = gradient_space(lm, LoraSettings(2, 4, 0.0, ("q_proj", "v_proj")), seed=3)
    assert n_trainable(lm) == expected and described == f"fresh LoRA adapters, rank 2, alpha 4 ({expected:,} parameters)"
    assert torch.equal(lm(input_ids=ids).logits, before)  # B = 0: the adapted model is the model
    again = _model()
    gradient_space(again, LoraSettings(2, 4, 0.0, ("q_proj", "v_proj")), seed=3)
    a = [p for n, p in lm.named_parameters() if "lora_A" in n]
    b = [p for n, p in again.named_parameters() if "lora_A" in n]
    assert len(a) == len(linears) and all(torch.equal(x, y) for x, y in zip(a, b, strict=True))  # seeded

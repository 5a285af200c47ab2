"""A LoRA policy's bf16 sampling copy holds the adapters merged into the weights (`rollout.sampler_copy`):
the merge read from the adapted model (`models.lora.merged_parameter`), a small update that a bf16 add of the
unmerged adapter rounds away worked by hand on one weight, and the copy following the adapters at every
refresh and in the engine."""

import pytest
import torch
from llama_helpers import OneLinear, small_llama
from torch import nn

from agentbench_af.models.lora import LoraSettings, add_lora, has_lora, merged_copy, merged_parameter
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.sampler_copy import low_precision_copy, refresh
from agentbench_af.rollout.types import SamplingParams

Q = "model.layers.0.self_attn.q_proj"


def _adapted(scale: float = 1e-2) -> nn.Module:
    lm = small_llama()
    add_lora(lm, LoraSettings(rank=4, alpha=8), seed=0)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in lm.named_parameters():
            if ".lora_B." in name:  # B = 0 at injection: give the adapters something to merge
                p.copy_(scale * torch.randn(p.shape, generator=gen))
    return lm


def test_merged_parameter_is_the_merged_copys_parameter():
    lm = _adapted()
    q = lm.get_submodule(Q)
    a, b = q.lora_A["default"].weight, q.lora_B["default"].weight  # (4, 32), (32, 4)
    hand = q.base_layer.weight + 2.0 * b @ a  # alpha / r = 8 / 4
    assert torch.allclose(merged_parameter(lm, f"{Q}.weight"), hand, atol=1e-7)
    merged = merged_copy(lm)
    for name, p in merged.named_parameters():
        assert torch.allclose(merged_parameter(lm, name), p, atol=1e-6), name


def test_a_small_update_survives_the_merged_cast_and_not_the_unmerged_add():
    # bf16 spacing on [1, 2) is 2^-7. The base weight w = 1 + 2^-8 - 2^-10 casts to 1.0; the adapter adds
    # d = 2^-9 (A = [1, 0], B = [2^-9], alpha / r = 1). Unmerged in bf16: the base output 1.0 plus 2^-9 rounds
    # back to 1.0. Merged: w + d = 1 + 2^-8 + 2^-10 lies past the midpoint and casts to 1 + 2^-7.
    one = OneLinear(outputs=1)
    with torch.no_grad():
        one.proj.weight.copy_(torch.tensor([[1 + 2**-8 - 2**-10, 0.0]]))
    add_lora(one, LoraSettings(rank=1, alpha=1, targets=("proj",)), seed=0)
    with torch.no_grad():
        one.proj.lora_A["default"].weight.copy_(torch.tensor([[1.0, 0.0]]))
        one.proj.lora_B["default"].weight.copy_(torch.tensor([[2**-9]]))
    x = torch.tensor([[1.0, 0.0]])
    one.requires_grad_(False)
    assert float(one(x)) == pytest.approx(1 + 2**-8 + 2**-10)  # fp32: the adapted model
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert float(one(x)) == 1.0  # the adapter's update is rounded away
    sampler = low_precision_copy(one, torch.bfloat16)
    assert not has_lora(sampler) and has_lora(one)  # a plain merged copy; the model keeps its adapters
    assert float(sampler(x.bfloat16())) == 1 + 2**-7


def test_the_copy_is_plain_bf16_and_follows_the_adapters_at_every_refresh():
    lm = _adapted()
    sampler = low_precision_copy(lm, torch.bfloat16)
    assert not has_lora(sampler) and all(p.dtype == torch.bfloat16 for p in sampler.parameters())
    assert sampler.lm_head.weight is sampler.model.embed_tokens.weight  # tied as in the model
    q = lm.get_submodule(Q)
    with torch.no_grad():
        q.lora_B["default"].weight.mul_(-3.0)
    assert not torch.equal(sampler.get_parameter(f"{Q}.weight"), merged_parameter(lm, f"{Q}.weight").bfloat16())
    refresh(sampler, lm)
    for name, p in sampler.named_parameters():
        assert torch.equal(p, merged_parameter(lm, name).to(torch.bfloat16)), name


def test_the_engine_samples_a_lora_policy_from_its_merged_copy():
    lm = _adapted()
    engine = TransformersEngine(lm, 0, sample_dtype=torch.bfloat16)
    assert not has_lora(engine.sampler)
    with torch.no_grad():
        lm.get_submodule(Q).lora_B["default"].weight.add_(0.5)
    gens = engine.generate([[5, 6, 7, 8]] * 2, SamplingParams(temperature=1.0, max_new_tokens=3), [1])
    assert all(1 <= len(g.token_ids) <= 3 for g in gens)
    assert torch.equal(engine.sampler.get_parameter(f"{Q}.weight"),
                       merged_parameter(lm, f"{Q}.weight").to(torch.bfloat16))  # refreshed before sampling

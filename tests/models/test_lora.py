"""LoRA through peft (`models.lora`): adapters on the named linear modules only, base weights frozen, the
alpha / r scale worked by hand on one linear layer, a step that moves only adapter weights, and a merged
save that loads as a plain model with the adapted model's logits."""

import types

import pytest
import torch
from llama_helpers import OneLinear, llama_batch, small_llama
from torch import nn
from transformers import LlamaForCausalLM

from agentbench_af.models.lora import (
    LLAMA_TARGETS,
    LoraSettings,
    adapter_parameter_count,
    add_lora,
    has_lora,
    merged_copy,
    trainable_parameters,
)
from agentbench_af.models.value import load_policy, save_policy
from agentbench_af.train.warm.sft import sft_step


def test_adapters_go_on_the_projections_and_everything_else_is_frozen():
    lm = small_llama()
    ids, attention, _ = llama_batch()
    with torch.no_grad():
        before = lm(input_ids=ids, attention_mask=attention).logits
    assert add_lora(lm, LoraSettings(rank=4, alpha=8), seed=0) is lm
    assert type(lm) is LlamaForCausalLM and has_lora(lm)
    adapted = sorted(name for name, m in lm.named_modules() if hasattr(m, "lora_A"))
    part = {"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
            "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp"}
    assert adapted == sorted(f"model.layers.{i}.{part[t]}.{t}" for i in range(2) for t in LLAMA_TARGETS)
    trainable = [name for name, p in lm.named_parameters() if p.requires_grad]
    assert len(trainable) == 2 * 7 * 2 and all(".lora_A." in n or ".lora_B." in n for n in trainable)
    assert not lm.model.embed_tokens.weight.requires_grad and not lm.model.norm.weight.requires_grad
    assert [id(p) for p in trainable_parameters(lm)] == [id(p) for n, p in lm.named_parameters() if n in trainable]
    q = lm.model.layers[0].self_attn.q_proj
    assert q.lora_A["default"].weight.shape == (4, 32) and q.lora_B["default"].weight.shape == (32, 4)
    assert q.scaling["default"] == 2.0  # alpha / r = 8 / 4
    # r (in + out) per module, hidden 32, kv width 2 heads x 8 = 16, MLP 64: q 4 (32 + 32) = 256, k and v
    # 4 (32 + 16) = 192 each, o 256, gate and up 4 (32 + 64) = 384 each, down 4 (64 + 32) = 384: 2,048 per layer
    assert adapter_parameter_count(lm) == 2 * 2048 == sum(p.numel() for p in trainable_parameters(lm))
    assert adapter_parameter_count(small_llama()) == 0
    with torch.no_grad():
        after = lm(input_ids=ids, attention_mask=attention).logits
    assert torch.equal(after, before)  # B = 0 at injection: the adapted model is the base model


def test_adapter_a_is_drawn_from_the_seed_and_leaves_the_global_rng_alone():
    a, b, c = small_llama(), small_llama(), small_llama()
    state = torch.get_rng_state()
    for lm, seed in ((a, 1), (b, 1), (c, 2)):
        add_lora(lm, LoraSettings(4, 8), seed=seed)
    assert torch.equal(torch.get_rng_state(), state)
    wa, wb, wc = (m.model.layers[0].self_attn.q_proj.lora_A["default"].weight for m in (a, b, c))
    assert torch.equal(wa, wb) and not torch.equal(wa, wc)


def test_the_update_is_scaled_by_alpha_over_rank_worked_by_hand():
    """W = I, r = 1, alpha = 2 (scale 2), A = [[1, 1]], B = [[1], [0]], x = [1, 2]:
    W x = [1, 2]; A x = 3; B A x = [3, 0]; output = [1, 2] + 2 [3, 0] = [7, 2].
    Merged: W + 2 B A = [[1, 0], [0, 1]] + 2 [[1, 1], [0, 0]] = [[3, 2], [0, 1]], and [[3, 2], [0, 1]] x = [7, 2]."""
    model = OneLinear()
    with torch.no_grad():
        model.proj.weight.copy_(torch.eye(2))
    add_lora(model, LoraSettings(rank=1, alpha=2, targets=("proj",)))
    with torch.no_grad():
        model.proj.lora_A["default"].weight.copy_(torch.tensor([[1.0, 1.0]]))
        model.proj.lora_B["default"].weight.copy_(torch.tensor([[1.0], [0.0]]))
    x = torch.tensor([[1.0, 2.0]])
    assert torch.equal(model(x), torch.tensor([[7.0, 2.0]]))
    merged = merged_copy(model)
    assert type(merged.proj) is nn.Linear and not has_lora(merged) and has_lora(model)
    assert torch.equal(merged.proj.weight, torch.tensor([[3.0, 2.0], [0.0, 1.0]]))
    assert torch.equal(merged(x), torch.tensor([[7.0, 2.0]]))


def test_an_sft_step_moves_the_adapters_only():
    lm = add_lora(small_llama(), LoraSettings(4, 8), seed=0).train()
    ids, attention, response = llama_batch()
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    params = trainable_parameters(lm)
    optimizer = torch.optim.AdamW(params, lr=1e-2, weight_decay=0.0)
    batch = types.SimpleNamespace(input_ids=ids, attention_mask=attention, response_mask=response)
    for _ in range(2):  # B moves on the first step (A's gradient is 0 while B = 0), A on the second
        sft_step(lm, params, optimizer, batch)
    after = lm.state_dict()
    moved = sorted(k for k in before if not torch.equal(before[k], after[k]))
    assert moved and all(".lora_A." in k or ".lora_B." in k for k in moved)
    assert any(".lora_A." in k for k in moved) and any(".lora_B." in k for k in moved)
    assert len(optimizer.param_groups[0]["params"]) == 2 * 7 * 2


def test_merged_save_loads_as_a_plain_model_with_the_same_logits(tmp_path):
    lm = add_lora(small_llama(), LoraSettings(4, 8), seed=0).eval()
    with torch.no_grad():
        for name, p in lm.named_parameters():
            if ".lora_B." in name:
                p.normal_(0, 0.1, generator=torch.Generator().manual_seed(len(name)))
    ids, attention, _ = llama_batch()
    with torch.no_grad():
        adapted = lm(input_ids=ids, attention_mask=attention).logits
        plain = small_llama()(input_ids=ids, attention_mask=attention).logits
    assert not torch.allclose(adapted, plain, atol=1e-4)  # the adapters do change the model
    save_policy(tmp_path, merged_copy(lm))
    loaded, _, _ = load_policy(tmp_path)
    assert type(loaded) is LlamaForCausalLM and not has_lora(loaded) and has_lora(lm)
    assert set(loaded.state_dict()) == set(small_llama().state_dict())
    with torch.no_grad():
        reloaded = loaded(input_ids=ids, attention_mask=attention).logits
    torch.testing.assert_close(reloaded, adapted, rtol=1e-5, atol=1e-5)  # W + s B A in fp32 vs W x + s B (A x)


def test_bad_targets_and_a_second_injection_are_clear_errors():
    with pytest.raises(ValueError, match=r"model.lora_targets \['c_attn'\] name no linear module of LlamaForCausalLM"
                                         r".*model.lora_rank=0"):
        add_lora(small_llama(), LoraSettings(4, 8, targets=("q_proj", "c_attn")))
    lm = add_lora(small_llama(), LoraSettings(4, 8))
    with pytest.raises(ValueError, match="already has LoRA adapters"):
        add_lora(lm, LoraSettings(4, 8))

"""The CPU decoding attention equals transformers' SDPA attention, and is switched on only inside its block."""

import types

import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from agentbench_af.rollout.decode_attention import cpu_decode_attention, decoding_attention


def test_one_token_query_equals_sdpa_with_padding_and_grouped_heads():
    torch.manual_seed(0)
    module = types.SimpleNamespace(num_key_value_groups=2, training=False, is_causal=True)
    q = torch.randn(3, 4, 1, 8)  # (B, H, 1, D)
    k, v = torch.randn(3, 2, 6, 8), torch.randn(3, 2, 6, 8)  # (B, H_kv, S, D)
    mask = torch.ones(3, 1, 1, 6, dtype=torch.bool)
    mask[0, ..., :2] = False  # left padding
    mask[2, ..., 3] = False  # a hole (cached prefix, then new ids)
    ours, _ = cpu_decode_attention(module, q, k, v, mask, scaling=0.3)
    ref, _ = sdpa_attention_forward(module, q, k, v, mask, scaling=0.3)
    assert ours.shape == ref.shape == (3, 1, 4, 8)
    assert torch.allclose(ours, ref, atol=1e-5)


def test_block_switches_and_restores(frozenlake_policy):
    model = frozenlake_policy.lm
    assert model.config._attn_implementation == "sdpa"
    with decoding_attention(model):
        assert model.config._attn_implementation == "agentbench-cpu-decode"
    assert model.config._attn_implementation == "sdpa"

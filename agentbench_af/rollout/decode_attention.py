"""A CPU decoding attention for the transformers engine: one query token per row via two batched matmuls.

On CPU, torch's SDPA kernel with a padding mask (every batched, left-padded generation has one) takes
about twice as long per one-token decoding step as a plain masked `q @ k^T -> softmax -> @ v`
(`benchmarks/rollout_throughput.py`). `decoding_attention(model)` switches a model whose attention is
`sdpa` to `agentbench-cpu-decode` for the duration of a `with` block: one-token queries on CPU take the
matmul path, everything else (prefill, CUDA) goes to transformers' own `sdpa_attention_forward`, and the
masks are built exactly as for `sdpa`. Training forwards never see it.
Left out: attention sinks, softcapping and position biases (such models keep plain `sdpa`).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward
from transformers.masking_utils import sdpa_mask

NAME = "agentbench-cpu-decode"
MAX_MATMUL_QUERY = 1  # longer queries (prefill) are faster in SDPA (measured)


def cpu_decode_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, is_causal=None, **kwargs):
    """query (B, H, q, D), key/value (B, H_kv, S, D) -> ((B, q, H, D), None), like `sdpa_attention_forward`."""
    if query.shape[2] > MAX_MATMUL_QUERY or query.device.type != "cpu" or kwargs.get("position_bias") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      is_causal=is_causal, **kwargs)
    groups = getattr(module, "num_key_value_groups", 1)
    if attention_mask is not None and attention_mask.shape[-1] < key.shape[2]:
        # a mask over the filled columns of a preallocated cache: the empty tail is never attended
        key, value = key[:, :, : attention_mask.shape[-1]], value[:, :, : attention_mask.shape[-1]]
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)  # (B, H, S, D)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    scores = torch.matmul(query, key.transpose(2, 3)) * scale  # (B, H, 1, S)
    if attention_mask is not None:  # in place: scores is a fresh tensor
        if attention_mask.dtype == torch.bool:
            scores.masked_fill_(~attention_mask, float("-inf"))
        else:
            scores.add_(attention_mask)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)  # (B, H, 1, S)
    out = torch.matmul(probs, value)  # (B, H, 1, D)
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(NAME, cpu_decode_attention)
AttentionMaskInterface.register(NAME, sdpa_mask)


@contextmanager
def decoding_attention(model):
    """Use `cpu_decode_attention` inside the block when the model runs `sdpa` on CPU; otherwise do nothing."""
    config = model.config
    before = getattr(config, "_attn_implementation", None)
    device = next(model.parameters()).device
    if before != "sdpa" or device.type != "cpu":
        yield
        return
    model.set_attn_implementation(NAME)
    try:
        yield
    finally:
        model.set_attn_implementation(before)

"""A small transformers Llama (SmolLM2's shape, scaled down), a batch with shared prompts and two turns, and a
one-linear module for LoRA arithmetic worked by hand."""

import torch
from torch import nn
from transformers import LlamaConfig, LlamaForCausalLM


def small_llama(vocab: int = 97, seed: int = 0) -> LlamaForCausalLM:
    """A 2-layer GQA Llama from a small config (the shape of SmolLM2, scaled down), tied embeddings."""
    config = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         tie_word_embeddings=True, pad_token_id=0)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def llama_batch(vocab: int = 97):
    """6 rows: 3 prompts (8 ids) x 2 rollouts; two turns in rows 0-1 (generated ids at 8-10 and 13-15), one
    turn elsewhere, right padding."""
    torch.manual_seed(1)
    prompts = torch.randint(1, vocab, (3, 8)).repeat_interleave(2, 0)  # (6, 8)
    ids = torch.cat([prompts, torch.randint(1, vocab, (6, 10))], dim=1)  # (6, 18)
    lengths = torch.tensor([18, 16, 12, 11, 14, 10])
    attention = (torch.arange(18) < lengths[:, None]).long()  # (6, 18)
    ids = ids * attention
    response = torch.zeros(6, 18, dtype=torch.bool)
    response[:, 8:11] = True
    response[:2, 13:16] = True
    response &= attention.bool()
    return ids, attention, response


class OneLinear(nn.Module):
    """One bias-free linear layer named `proj` (2 inputs, `outputs` outputs): LoRA's arithmetic by hand."""

    def __init__(self, outputs: int = 2) -> None:
        super().__init__()
        self.proj = nn.Linear(2, outputs, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)

"""A named family of tiny causal-LM policies, built in code from a transformers `LlamaConfig`.

`build_tiny_policy(name, tokenizer, seed=0) -> LlamaForCausalLM`: no pretrained weights, tied input and
output embeddings, SwiGLU FFN of 4 x hidden, RoPE, RMSNorm; the embedding has `embedding_size(tokenizer)`
rows (largest id + 1); weights are a deterministic function of `seed` (the global torch RNG is left
untouched). Sizes (parameters counted with the default 1024-token vocabulary; a smaller tokenizer, such
as the ~470-token FrozenLake one, makes them smaller by (1024 - V) x hidden):

    tiny-0.12m  48 x 2 layers,  4 heads   0.12M  (the cheapest: cpu-quick's second size)
    tiny-0.2m   64 x 2 layers,  4 heads   0.20M  (learns FrozenLake fastest on 2 CPU cores)
    tiny-0.2m-h32  64 x 2 layers, 2 heads 0.20M  (head dim 32, the smallest vLLM's CPU attention accepts)
    tiny-0.7m  128 x 2 layers,  4 heads   0.66M
    tiny-2m    192 x 3 layers,  6 heads   1.97M
    tiny-7m    320 x 4 layers, 10 heads   6.88M
    tiny-30m   512 x 7 layers,  8 heads  29.89M

The generation config is set for sampling that matches the loss (do_sample, temperature 1, top_k 0,
top_p 1: transformers' default top_k=50 would silently change the behaviour policy) with the
tokenizer's pad/bos/eos ids. Save and load with `models.value.save_policy` / `load_policy` (or the
model's own `save_pretrained`). Left out: Qwen2-style attention biases, grouped-query attention and
dropout (none of them matter at this scale).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

from agentbench_af.models.tokenizer import DEFAULT_VOCAB_SIZE, embedding_size

MAX_POSITIONS = 2048


@dataclass(frozen=True)
class TinySpec:
    """Architecture of one named size."""

    name: str
    hidden: int
    layers: int
    heads: int
    ffn_mult: int = 4


TINY_SPECS: dict[str, TinySpec] = {
    s.name: s
    for s in (
        TinySpec("tiny-0.12m", 48, 2, 4),
        TinySpec("tiny-0.2m", 64, 2, 4),
        TinySpec("tiny-0.2m-h32", 64, 2, 2),
        TinySpec("tiny-0.7m", 128, 2, 4),
        TinySpec("tiny-2m", 192, 3, 6),
        TinySpec("tiny-7m", 320, 4, 10),
        TinySpec("tiny-30m", 512, 7, 8),
    )
}


def tiny_spec(name: str) -> TinySpec:
    if name not in TINY_SPECS:
        raise KeyError(f"unknown tiny policy {name!r}; choose one of {list(TINY_SPECS)}")
    return TINY_SPECS[name]


def tiny_config(
    name: str, vocab_size: int, pad_token_id: int | None = None, bos_token_id: int | None = None,
    eos_token_id: int | None = None,
) -> LlamaConfig:
    """The `LlamaConfig` of a named size for a vocabulary of `vocab_size` rows."""
    s = tiny_spec(name)
    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=s.hidden,
        intermediate_size=s.ffn_mult * s.hidden,
        num_hidden_layers=s.layers,
        num_attention_heads=s.heads,
        num_key_value_heads=s.heads,
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True,
        attention_bias=False,
        attention_dropout=0.0,
        pad_token_id=pad_token_id,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
    )


def count_parameters(model: torch.nn.Module) -> int:
    """Distinct parameters (a tied embedding counts once)."""
    return sum(p.numel() for p in model.parameters())


def tiny_parameter_count(name: str, vocab_size: int = DEFAULT_VOCAB_SIZE) -> int:
    """Parameters of a named size for `vocab_size` rows (built on the meta device: no memory, no time)."""
    with torch.device("meta"):
        return count_parameters(LlamaForCausalLM(tiny_config(name, vocab_size)))


def build_tiny_policy(name: str, tokenizer, seed: int = 0) -> LlamaForCausalLM:
    """A freshly initialised tiny policy for `tokenizer` (same `seed` -> same weights)."""
    config = tiny_config(
        name, embedding_size(tokenizer), tokenizer.pad_token_id, tokenizer.bos_token_id, tokenizer.eos_token_id
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        do_sample=True, temperature=1.0, top_k=0, top_p=1.0,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return model.eval()

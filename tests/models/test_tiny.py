import re

import pytest
import torch

from agentbench_af.models.tiny import (
    TINY_SPECS,
    build_tiny_policy,
    count_parameters,
    tiny_parameter_count,
)
from agentbench_af.models.tokenizer import DEFAULT_VOCAB_SIZE, embedding_size


def _named_millions(name: str) -> float:
    return float(re.match(r"tiny-([\d.]+)m", name).group(1))  # tiny-0.2m-h32 -> 0.2


def test_names_are_honest_and_span_the_range(tok):
    counts = {}
    for name in TINY_SPECS:
        n = tiny_parameter_count(name, DEFAULT_VOCAB_SIZE)
        counts[name] = n
        assert abs(n / 1e6 - _named_millions(name)) / _named_millions(name) < 0.07, (name, n)
        small_vocab = tiny_parameter_count(name, embedding_size(tok))
        print(f"{name}: {n:,} parameters (vocab {DEFAULT_VOCAB_SIZE}); {small_vocab:,} (FrozenLake vocab {embedding_size(tok)})")
    assert min(counts.values()) < 0.5e6 and 25e6 < max(counts.values()) < 35e6
    assert len(TINY_SPECS) >= 4


def test_built_model_matches_the_count_and_ties_embeddings(tok):
    model = build_tiny_policy("tiny-0.2m", tok, seed=0)
    assert count_parameters(model) == tiny_parameter_count("tiny-0.2m", embedding_size(tok))
    assert model.get_input_embeddings().weight.shape == (embedding_size(tok), 64)
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight
    assert (model.config.num_hidden_layers, model.config.hidden_size) == (2, 64)


def test_init_is_a_function_of_the_seed_only(tok):
    state = torch.get_rng_state()
    a, b = build_tiny_policy("tiny-0.7m", tok, seed=3), build_tiny_policy("tiny-0.7m", tok, seed=3)
    c = build_tiny_policy("tiny-0.7m", tok, seed=4)
    assert torch.equal(torch.get_rng_state(), state)  # the global generator is untouched
    for (name, pa), pb, pc in zip(a.named_parameters(), b.parameters(), c.parameters(), strict=True):
        assert torch.equal(pa, pb), name
        if pa.dim() > 1:
            assert not torch.equal(pa, pc), name


def test_generation_samples_with_loss_matching_settings(tok):
    model = build_tiny_policy("tiny-0.2m", tok, seed=0)
    gc = model.generation_config
    assert (gc.do_sample, gc.temperature, gc.top_k, gc.top_p) == (True, 1.0, 0, 1.0)
    assert (gc.pad_token_id, gc.eos_token_id) == (tok.pad_token_id, tok.eos_token_id)
    prompt = tok.apply_chat_template([{"role": "user", "content": "Turn 1:"}], add_generation_prompt=True, tokenize=False)
    ids = torch.tensor([tok.encode(prompt, add_special_tokens=False)])
    torch.manual_seed(0)
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=6)
    assert out.shape[0] == 1 and 1 <= out.shape[1] - ids.shape[1] <= 6


def test_unknown_name(tok):
    with pytest.raises(KeyError, match="tiny-0.2m"):
        build_tiny_policy("tiny-1b", tok)

"""`models.replay_cache`: a cache write that a recomputed layer can repeat, and the flag that lets transformers'
checkpointed layers keep it."""

import pytest
import torch
from llama_helpers import small_llama
from transformers.cache_utils import DynamicLayer

from agentbench_af.models.replay_cache import ReplayLayer, keep_cache_under_checkpointing, replay_cache


def test_a_layer_with_a_past_returns_past_then_new_the_same_on_every_call():
    past = (torch.tensor([[[[1.0], [2.0]]]]), torch.tensor([[[[10.0], [20.0]]]]))  # (1, 1, 2, 1) each
    layer = ReplayLayer(past)
    assert layer.get_seq_length() == 2  # what the causal mask reads before the layer runs
    new_k, new_v = torch.tensor([[[[3.0]]]]), torch.tensor([[[[30.0]]]])
    for _ in range(2):  # the forward, then the recomputation in the backward pass
        keys, values = layer.update(new_k, new_v, 0)
        assert keys.flatten().tolist() == [1.0, 2.0, 3.0]
        assert values.flatten().tolist() == [10.0, 20.0, 30.0]
        assert layer.get_seq_length() == 2  # the past did not grow
    plain = DynamicLayer()
    plain.update(*past)
    plain.update(new_k, new_v)
    assert plain.update(new_k, new_v)[0].flatten().tolist() == [1.0, 2.0, 3.0, 3.0]  # what a replay would do there


def test_a_layer_without_a_past_keeps_the_first_run():
    layer = ReplayLayer()
    assert layer.get_seq_length() == 0
    first = torch.ones(2, 1, 3, 4), torch.zeros(2, 1, 3, 4)
    assert layer.update(*first)[0] is first[0]
    again = torch.full((2, 1, 3, 4), 5.0), torch.zeros(2, 1, 3, 4)
    assert layer.update(*again)[0] is again[0]  # a recomputation gets its own states back
    assert layer.keys is first[0] and layer.values is first[1] and layer.get_seq_length() == 3


def test_replay_cache_has_one_layer_per_decoder_layer_and_checks_the_pasts():
    lm = small_llama()
    cache = replay_cache(lm.config)
    assert cache is not None and len(cache.layers) == 2 and all(isinstance(x, ReplayLayer) for x in cache.layers)
    with pytest.raises(ValueError, match="1 cached layers for a model with 2"):
        replay_cache(lm.config, [(torch.zeros(1, 2, 3, 8), torch.zeros(1, 2, 3, 8))])


def test_the_flag_is_set_only_inside_the_context():
    lm = small_llama()
    layers = lm.get_decoder().layers
    with keep_cache_under_checkpointing(lm):
        assert all(layer._can_checkpoint_with_cache for layer in layers)
    assert not any(layer._can_checkpoint_with_cache for layer in layers)
    with pytest.raises(RuntimeError), keep_cache_under_checkpointing(lm):
        raise RuntimeError
    assert not any(layer._can_checkpoint_with_cache for layer in layers)

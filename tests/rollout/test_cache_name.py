"""The key/value cache goes under the name the installed transformers uses (`cache` from 5.2x, else
`past_key_values`), so sampling neither warns on every forward nor breaks when the old name goes."""

import warnings
from dataclasses import dataclass

import torch

from agentbench_af.rollout.cache_name import cache_argument, cache_kwargs, returned_cache
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.types import SamplingParams


class _NewModel:
    def forward(self, input_ids=None, cache=None, use_cache=None, **kwargs):  # transformers >= 5.2x
        return cache


class _OldModel:
    def forward(self, input_ids=None, past_key_values=None, use_cache=None, **kwargs):
        return past_key_values


class _Wrapper:
    def forward(self, *args, **kwargs):  # DDP, torch.compile: no named cache argument
        return None


@dataclass
class _NewOutput:
    logits: object = None
    cache: object = None


@dataclass
class _OldOutput:
    logits: object = None
    past_key_values: object = None


def test_the_argument_name_follows_the_forward_signature():
    assert cache_argument(_NewModel()) == "cache"
    assert cache_argument(_OldModel()) == "past_key_values"
    assert cache_argument(_Wrapper()) == "past_key_values"  # every version still accepts the old name
    assert cache_kwargs(_NewModel(), "kv") == {"cache": "kv"}
    assert cache_kwargs(_OldModel(), "kv") == {"past_key_values": "kv"}


def test_the_returned_cache_is_read_from_either_field():
    assert returned_cache(_NewOutput(cache="kv")) == "kv"
    assert returned_cache(_OldOutput(past_key_values="kv")) == "kv"
    assert returned_cache(_NewOutput()) is None
    assert returned_cache(object()) is None


def test_sampling_with_a_cache_raises_no_deprecation_warning(frozenlake_policy):
    policy = frozenlake_policy
    engine = TransformersEngine(policy.lm, policy.pad_token_id)
    prompt = list(policy.chat.prefix_ids("You play a grid game.", "Turn 1:\nshort"))
    stop = list(policy.chat.end_of_turn_ids)
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*past_key_values.*")
        for temperature in (0.0, 1.0):
            gens = engine.generate([prompt, prompt[:-2]], SamplingParams(temperature=temperature, max_new_tokens=8), stop)
            assert all(1 <= len(g.token_ids) <= 8 for g in gens)

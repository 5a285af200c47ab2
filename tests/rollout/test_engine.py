"""The batched engine: left padding does not change what a prompt generates, stop ids cut responses."""

import torch

from agentbench_af.rollout.collect import build_context
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.types import RolloutConfig, SamplingParams, Trajectory, TurnRecord


def _prompts(policy):
    chat = policy.chat
    cfg = RolloutConfig()
    traj = Trajectory("FrozenLake-4x4-v0", 0, 0, "You play a grid game.")
    prompts = [build_context(chat, traj, "Turn 1:\nshort", cfg)]
    traj.turns.append(TurnRecord("Turn 1:\nshort", prompts[0], [5, 6, 7], [0.0] * 3, [0.0] * 3, [1] * 3, ""))
    prompts.append(build_context(chat, traj, "Turn 2:\na much longer observation " * 4, cfg))
    prompts.append(list(chat.prefix_ids("sys", "a medium prompt here")))
    return prompts


def test_greedy_batch_equals_one_at_a_time(frozenlake_policy):
    policy = frozenlake_policy
    engine = TransformersEngine(policy.lm, policy.pad_token_id)
    prompts = _prompts(policy)
    assert len({len(p) for p in prompts}) == 3  # different lengths: real left padding
    params = SamplingParams(temperature=0.0, max_new_tokens=24)
    stop = list(policy.chat.end_of_turn_ids)
    batched = engine.generate(prompts, params, stop)
    for prompt, gen in zip(prompts, batched, strict=True):
        single = engine.generate([prompt], params, stop)[0]
        assert gen.token_ids == single.token_ids
        assert torch.allclose(torch.tensor(gen.logprobs), torch.tensor(single.logprobs), atol=1e-4)
        assert gen.finished == (gen.token_ids[-1] in stop)
        assert len(gen.token_ids) <= 24 and not set(gen.token_ids[:-1]) & set(stop)


def test_sampling_is_seeded_and_order_preserving(frozenlake_policy):
    policy = frozenlake_policy
    engine = TransformersEngine(policy.lm, policy.pad_token_id, max_batch_size=2)
    prompts = _prompts(policy)
    params = SamplingParams(temperature=1.0, max_new_tokens=16)
    stop = list(policy.chat.end_of_turn_ids)
    torch.manual_seed(7)
    a = engine.generate(prompts, params, stop)
    torch.manual_seed(7)
    b = engine.generate(prompts, params, stop)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    assert engine.generate([], params, stop) == []
    assert policy.lm.training is False  # the engine restores the mode it found

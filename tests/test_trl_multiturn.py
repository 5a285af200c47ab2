"""The TRL side of the multi-turn step (`benchmarks/trl_multiturn.py`, used by `peer_trl.py --turns N`):
its episode layout by hand, and its agreement with our collector, on a tiny policy (TRL not needed)."""

from __future__ import annotations

import bench_scripts  # noqa: F401  (first: it puts benchmarks/ on sys.path)
import numpy as np
import pytest
import trl_multiturn
from bench_scripts import ENV, tiny_policy

import agentbench_af
from agentbench_af.formats.prompts import turn_message
from agentbench_af.rollout.seeds import draw_train_seeds


@pytest.fixture(scope="module")
def policy():
    return tiny_policy()


def _first_prompt(policy, env, seed: int) -> list[int]:
    obs, _ = env.reset(seed=seed)
    message = turn_message(obs, 1, env.actions_left, env.variant.max_actions_per_turn)
    return list(policy.chat.prefix_ids(env.system_prompt(), message))


def test_turn_suffix_is_the_next_turn_of_our_chat_format(policy):
    """TRL's way (template of a dummy exchange, cut after its last end-of-turn id) gives the ids our
    ChatFormat appends after a reply's end-of-turn id."""
    eot = list(policy.chat.end_of_turn_ids)
    for message in ("Turn 2:\nP _\n_ G", "You have 3 actions left."):
        suffix = trl_multiturn.turn_suffix_ids(policy.tokenizer, message, eot)
        assert suffix == list(policy.chat.next_turn_ids(message))
        assert message in policy.tokenizer.decode(suffix)


def test_turn_suffix_needs_an_end_of_turn_id(policy):
    with pytest.raises(ValueError, match="end-of-turn"):
        trl_multiturn.turn_suffix_ids(policy.tokenizer, "hi", [10**6])


def test_episode_layout_by_hand(policy):
    """Turn 1 cut by the token limit, turn 2 ends with the stop id: completion = r1 + [eot] + user turn 2
    + r2, env_mask 1 on r1 and r2 only, reward the sum of both turns' rewards."""
    chat, tok = policy.chat, policy.tokenizer
    eot = list(chat.end_of_turn_ids)
    r1 = list(chat.response_ids("<think> the hole is"))
    r2 = list(chat.response_ids("<answer> Down </answer>")) + eot
    env = agentbench_af.make(ENV, max_turns=2)
    prompt = _first_prompt(policy, env, 3)
    obs, rew1, term, trunc, _ = env.step(tok.decode(r1, skip_special_tokens=True))
    assert not (term or trunc)
    user2 = list(chat.next_turn_ids(turn_message(obs, 2, env.actions_left, env.variant.max_actions_per_turn)))
    rew2 = env.step(tok.decode(r2[:-1], skip_special_tokens=True))[1]
    seen: list[list[list[int]]] = []

    def generate(contexts):
        seen.append(contexts)
        return [r1] if len(seen) == 1 else [r2]

    ep = trl_multiturn.run_episodes(generate, tok, [prompt], [3], ENV, {"max_turns": 2}, eot)
    assert seen == [[prompt], [prompt + r1 + eot[:1] + user2]]
    assert ep.completion_ids == [r1 + eot[:1] + user2 + r2]
    assert ep.env_mask == [[1] * len(r1) + [0] * (1 + len(user2)) + [1] * len(r2)]
    assert ep.rewards == [float(rew1) + float(rew2)] and ep.turns == [2]
    assert ep.generated_tokens == len(r1) + len(r2)


def _step_rows(policy, prompts: int, group: int, turns: int):
    env = agentbench_af.make(ENV, max_turns=turns)
    seeds = draw_train_seeds(env, prompts, np.random.default_rng(0))
    prompt_ids = [_first_prompt(policy, env, s) for s in seeds]
    return seeds, [p for p in prompt_ids for _ in range(group)]


def _replies(chat):
    eot = list(chat.end_of_turn_ids)
    return [list(chat.response_ids("<think> right, then down </think> <answer> Right || Down </answer>")) + eot,
            list(chat.response_ids("<answer> Down </answer>")) + eot, list(chat.response_ids("<think> the hole is"))]


def test_scripted_episodes_match_our_collector(policy):
    seeds, rows = _step_rows(policy, 4, 2, 3)
    ep = trl_multiturn.compare_with_collector(policy.tokenizer, policy.chat, rows, seeds, 2, ENV, {"max_turns": 3},
                                              _replies(policy.chat))
    assert len(ep.completion_ids) == 8 and max(ep.turns) == 3 and min(ep.turns) < 3  # some end early, some run on


def test_the_comparison_catches_a_wrong_user_turn(policy, monkeypatch):
    """A TRL side that drops the first id of each inserted user turn must fail the check."""
    seeds, rows = _step_rows(policy, 4, 2, 3)
    right = trl_multiturn.turn_suffix_ids
    monkeypatch.setattr(trl_multiturn, "turn_suffix_ids", lambda *a: right(*a)[1:])
    with pytest.raises(ValueError, match="token ids differ"):
        trl_multiturn.compare_with_collector(policy.tokenizer, policy.chat, rows, seeds, 2, ENV, {"max_turns": 3},
                                             _replies(policy.chat))


def test_the_comparison_catches_a_wrong_mask(policy, monkeypatch):
    """A TRL side that trains on the inserted ids (env_mask all ones) must fail the check."""
    seeds, rows = _step_rows(policy, 4, 2, 3)
    run = trl_multiturn.run_episodes

    def all_ones(*args):
        ep = run(*args)
        return trl_multiturn.Episodes(ep.prompt_ids, ep.completion_ids, [[1] * len(m) for m in ep.env_mask],
                                      ep.rewards, ep.turns)

    monkeypatch.setattr(trl_multiturn, "run_episodes", all_ones)
    with pytest.raises(ValueError, match="env_mask differs"):
        trl_multiturn.compare_with_collector(policy.tokenizer, policy.chat, rows, seeds, 2, ENV, {"max_turns": 3},
                                             _replies(policy.chat))


def test_seed_lookup_refuses_two_seeds_with_one_first_message():
    """`peer_trl.seed_lookup`: TRL's rollout_func gets prompts without their rows, so a first user message
    must name one seed."""
    import peer_trl  # needs no TRL at import

    def row(seed, text):
        return {"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": text}], "seed": seed}

    seed_of = peer_trl.seed_lookup([row(4, "a"), row(9, "b"), row(4, "a")])
    assert seed_of(row(0, "b")["prompt"]) == 9 and seed_of(row(0, "a")["prompt"]) == 4
    with pytest.raises(ValueError, match="same user message"):
        peer_trl.seed_lookup([row(4, "a"), row(5, "a")])

"""Cross-turn KV reuse: a prompt that extends a stored prefix generates exactly what a full prefill does."""

import pytest
import torch

from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.prefix_cache import PrefixEntry, PrefixKVStore
from agentbench_af.rollout.types import RolloutConfig, SamplingParams


def _turns(policy, engine, prompts, keys, extras, params):
    """Three turns: each prompt grows by its response, an end-of-turn id and extra ids (ragged lengths)."""
    stop = list(policy.chat.end_of_turn_ids)
    history = []
    for turn in range(3):
        gens = engine.generate(prompts, params, stop, cache_keys=keys)
        history.append(gens)
        prompts = [p + g.token_ids + ([] if g.finished else stop[:1]) + extras[i][: 3 + 4 * i + turn]
                   for i, (p, g) in enumerate(zip(prompts, gens, strict=True))]
    return history


def test_cached_turns_equal_full_prefill(frozenlake_policy):
    policy = frozenlake_policy
    chat = policy.chat
    prompts = [list(chat.prefix_ids("sys", "Turn 1:\nshort")),
               list(chat.prefix_ids("sys", "Turn 1:\na much longer observation " * 3)),
               list(chat.prefix_ids("sys", "Turn 1:\nmedium one"))]
    extras = [list(chat.next_turn_ids(f"Turn 2:\nobservation number {i} " * 3)) for i in range(3)]
    params = SamplingParams(temperature=0.0, max_new_tokens=12)
    cached = TransformersEngine(policy.lm, policy.pad_token_id)
    plain = TransformersEngine(policy.lm, policy.pad_token_id, prefix_cache=False)
    dynamic = TransformersEngine(policy.lm, policy.pad_token_id, static_cache=False)  # the GPU default
    a = _turns(policy, cached, prompts, [10, 11, 12], extras, params)
    assert len(cached.store) == 3  # entries survive between calls
    b = _turns(policy, plain, prompts, [10, 11, 12], extras, params)
    assert len(plain.store) == 0
    c = _turns(policy, dynamic, prompts, [10, 11, 12], extras, params)
    for turn_a, turn_c in zip(a, c, strict=True):
        assert [g.token_ids for g in turn_c] == [g.token_ids for g in turn_a]
    for turn_a, turn_b in zip(a, b, strict=True):
        for ga, gb in zip(turn_a, turn_b, strict=True):
            assert ga.token_ids == gb.token_ids
            assert torch.allclose(torch.tensor(ga.logprobs), torch.tensor(gb.logprobs), atol=1e-4)
            assert torch.allclose(torch.tensor(ga.entropies), torch.tensor(gb.entropies), atol=1e-4)


def test_sampled_rollouts_equal_with_and_without_reuse(frozenlake_policy):
    policy = frozenlake_policy
    cfg = RolloutConfig(group_size=4, context_mode="full", temperature=1.0, max_new_tokens=32)
    out = {}
    for reuse in (True, False):
        engine = TransformersEngine(policy.lm, policy.pad_token_id, prefix_cache=reuse)
        torch.manual_seed(3)
        out[reuse] = collect_rollouts(engine, policy.tokenizer, policy.chat, "FrozenLake-4x4-v0", [1, 2], cfg)
        assert len(engine.store) == 0  # the collector clears what it stored
    assert max(len(t.turns) for t in out[True]) > 1  # multi-turn: later turns did reuse a prefix
    for ta, tb in zip(out[True], out[False], strict=True):
        assert [t.response_ids for t in ta.turns] == [t.response_ids for t in tb.turns]
        for ra, rb in zip(ta.turns, tb.turns, strict=True):
            assert torch.allclose(torch.tensor(ra.logprobs), torch.tensor(rb.logprobs), atol=1e-4)


def test_store_uses_only_a_matching_prefix():
    store = PrefixKVStore()
    kv = [torch.zeros(2, 4, 3)]
    store.put("a", PrefixEntry([1, 2, 3, 4], kv, kv))
    assert store.usable_length("a", [1, 2, 3, 4, 5, 6]) == 4
    assert store.usable_length("a", [1, 2, 3, 4]) == 3  # one id is always left to run
    assert store.usable_length("a", [1, 2, 9, 4, 5]) == 0  # different history: full prefill
    assert store.usable_length("b", [1, 2, 3, 4, 5]) == 0
    store.retain(["b"])
    assert len(store) == 0


def test_cache_keys_must_match_prompts(frozenlake_policy):
    engine = TransformersEngine(frozenlake_policy.lm, frozenlake_policy.pad_token_id)
    with pytest.raises(ValueError, match="cache_keys"):
        engine.generate([[1, 2, 3]], SamplingParams(max_new_tokens=2), [0], cache_keys=[1, 2])


@pytest.mark.parametrize("max_new_tokens", [6, 32])  # 6: responses cut by the limit (an end-of-turn id is added)
def test_full_context_shortcut_equals_rebuild(frozenlake_policy, max_new_tokens):
    from dataclasses import replace

    from agentbench_af.rollout.collect import rebuild_context

    policy = frozenlake_policy
    cfg = RolloutConfig(group_size=3, context_mode="full", temperature=1.0, max_new_tokens=max_new_tokens)
    engine = TransformersEngine(policy.lm, policy.pad_token_id)
    torch.manual_seed(5)
    trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, "FrozenLake-4x4-v0", [4], cfg)
    checked = 0
    for traj in trajs:
        for k in range(1, len(traj.turns)):
            head = replace(traj, turns=traj.turns[:k])
            assert traj.turns[k].context_ids == rebuild_context(policy.chat, head, traj.turns[k].user_message, cfg)
            checked += 1
    assert checked > 0


def test_repeated_prompts_are_prefilled_once(frozenlake_policy):
    policy = frozenlake_policy
    chat, stop = policy.chat, list(policy.chat.end_of_turn_ids)
    a, b = list(chat.prefix_ids("sys", "Turn 1:\nshort")), list(chat.prefix_ids("sys", "Turn 1:\nanother, longer one"))
    prompts = [a, b, a, a, b, list(chat.prefix_ids("sys", "Turn 1:\nalone"))]
    params = SamplingParams(temperature=0.0, max_new_tokens=8)
    fed = []
    hook = policy.lm.register_forward_pre_hook(lambda _, args, kw: fed.append(int(kw["input_ids"].numel())), with_kwargs=True)
    try:
        shared = TransformersEngine(policy.lm, policy.pad_token_id).generate(prompts, params, stop)
        shared_fed, fed[:] = sum(fed[:2]), []  # the shared prefill, then the batch's own prefill
        plain = TransformersEngine(policy.lm, policy.pad_token_id, prefix_cache=False).generate(prompts, params, stop)
        plain_fed = fed[0]
    finally:
        hook.remove()
    for gs, gp in zip(shared, plain, strict=True):
        assert gs.token_ids == gp.token_ids
        assert torch.allclose(torch.tensor(gs.logprobs), torch.tensor(gp.logprobs), atol=1e-4)
    width = max(len(a), len(b)) - 1
    assert shared_fed == 2 * width + 6 * len(prompts[-1])  # a and b once; then the new ids, as wide as the lone prompt
    assert plain_fed == 6 * max(len(p) for p in prompts)

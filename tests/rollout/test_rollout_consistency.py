"""Rollouts are self-consistent on every registered paper environment: token roles, batch layout, and the
engine's log-probs against the training forward pass (catches left/right padding and alignment bugs)."""

import pytest
import torch
from rollout_helpers import REGISTERED_PAPER_ENVS, env_overrides

from agentbench_af.formats.roles import Role, token_roles
from agentbench_af.models.forward import token_stats
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig

TOL = 1e-4  # fp32 on CPU: KV-cached left-padded sampling vs right-padded full forward
CASES = [(env, mode) for env in REGISTERED_PAPER_ENVS for mode in ("full", "window")]


def _collect(policy, env_id, mode, temperature=1.0, prompt_prefix="", format_role="reasoning"):
    cfg = RolloutConfig(group_size=2, context_mode=mode, window_turns=2, temperature=temperature,
                        max_new_tokens=32, prompt_prefix=prompt_prefix)
    engine = TransformersEngine(policy.lm, policy.pad_token_id, max_batch_size=4)  # several chunks
    torch.manual_seed(1)
    trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, env_id, [3, 5, 8], cfg,
                             format_role=format_role, env_kwargs=env_overrides(env_id))
    return cfg, trajs


@pytest.fixture(scope="module", params=CASES, ids=[f"{e}-{m}" for e, m in CASES])
def rollouts(request, policy_for):
    env_id, mode = request.param
    policy = policy_for(env_id)
    temperature = 0.7 if mode == "window" else 1.0
    cfg, trajs = _collect(policy, env_id, mode, temperature)
    return policy, cfg, trajs, trajectories_to_batch(trajs, mode, policy.pad_token_id)


def test_turn_roles_match_the_sampled_ids(rollouts):
    policy, cfg, trajs, _ = rollouts
    eot = set(policy.chat.end_of_turn_ids)
    assert sum(len(t.turns) for t in trajs) >= len(trajs)
    for traj in trajs:
        for turn in traj.turns:
            n = len(turn.response_ids)
            assert n >= 1 and len(turn.roles) == len(turn.logprobs) == len(turn.entropies) == n
            assert turn.roles == [int(r) for r in token_roles(turn.response_ids, policy.tokenizer)]
            assert n == cfg.max_new_tokens or turn.response_ids[-1] in eot
            assert not eot & set(turn.response_ids[:-1])  # cut right after the first stop id
            body = turn.response_ids[:-1] if turn.response_ids[-1] in eot else turn.response_ids
            assert turn.response_text == policy.tokenizer.decode(body, skip_special_tokens=False)
            assert all(lp <= 0 for lp in turn.logprobs) and all(e >= -1e-6 for e in turn.entropies)


def test_full_mode_contexts_extend_the_previous_turn(rollouts):
    _, cfg, trajs, _ = rollouts
    if cfg.context_mode != "full":
        return
    for traj in trajs:
        for prev, nxt in zip(traj.turns, traj.turns[1:], strict=False):
            head = prev.context_ids + prev.response_ids
            assert nxt.context_ids[: len(head)] == head


def test_batch_places_response_ids_at_the_mask(rollouts):
    _, cfg, trajs, batch = rollouts
    samples = [(ti, k) for ti, tr in enumerate(trajs) for k in range(len(tr.turns))]
    if cfg.context_mode == "full":
        samples = [(ti, len(tr.turns) - 1) for ti, tr in enumerate(trajs) if tr.turns]
    assert batch.batch_size == len(samples)
    for b, (ti, k) in enumerate(samples):
        assert int(batch.sample_traj[b]) == ti
        turns = trajs[ti].turns[: k + 1] if cfg.context_mode == "full" else [trajs[ti].turns[k]]
        first = 0 if cfg.context_mode == "full" else k
        ids = turns[-1].context_ids + turns[-1].response_ids
        assert batch.attention_mask[b].sum() == len(ids)
        assert batch.input_ids[b, : len(ids)].tolist() == ids
        mask = batch.response_mask[b]
        assert batch.input_ids[b][mask].tolist() == [i for t in turns for i in t.response_ids]
        assert batch.roles[b][mask].tolist() == [r for t in turns for r in t.roles]
        assert (batch.roles[b][~mask] == int(Role.PROMPT)).all()
        expect_turns = [first + j for j, t in enumerate(turns) for _ in t.response_ids]
        assert batch.turn_index[b][mask].tolist() == expect_turns
        assert torch.allclose(batch.old_logprobs[b][mask], torch.tensor([x for t in turns for x in t.logprobs]))
        assert batch.token_rewards[b].sum().item() == pytest.approx(sum(t.reward for t in turns), abs=1e-5)
    assert batch.traj_return.tolist() == pytest.approx([t.total_reward for t in trajs], abs=1e-5)


def test_engine_logprobs_match_the_training_forward(rollouts):
    policy, cfg, _, batch = rollouts
    with torch.no_grad():
        logprobs, entropy, _ = token_stats(policy.lm, batch.input_ids, batch.attention_mask, cfg.temperature)
    m = batch.response_mask
    assert (logprobs[m] - batch.old_logprobs[m]).abs().max() < TOL
    assert (entropy[m] - batch.entropy[m]).abs().max() < TOL


def test_prompt_prefix_and_format_role_reach_the_roles(frozenlake_policy):
    policy = frozenlake_policy
    cfg, trajs = _collect(policy, "FrozenLake-4x4-v0", "full", prompt_prefix="<think>", format_role="format")
    fmt_seen = False
    for traj in trajs:
        for turn in traj.turns:
            roles = token_roles(turn.response_ids, policy.tokenizer, prompt_prefix="<think>", format_role="format")
            assert turn.roles == [int(r) for r in roles]
            assert turn.response_text.startswith("<think>")
            fmt_seen |= int(Role.FORMAT) in turn.roles
    assert fmt_seen  # the end-of-turn id at least
    batch = trajectories_to_batch(trajs, "full", policy.pad_token_id)
    with torch.no_grad():
        logprobs, _, _ = token_stats(policy.lm, batch.input_ids, batch.attention_mask, cfg.temperature)
    m = batch.response_mask
    assert (logprobs[m] - batch.old_logprobs[m]).abs().max() < TOL

"""Property test: window mode gives one sample per turn, each with the context of its last
`window_turns` turns; full mode gives one sample per trajectory holding every turn's response."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentbench_af.rollout.collect import build_context
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig, Trajectory, TurnRecord

SYSTEM = "You are an agent."
turn_st = st.tuples(
    st.lists(st.integers(0, 10_000), min_size=1, max_size=6),  # response ids (indices into the plain vocab)
    st.booleans(),  # the response ends with the end-of-turn id (False: cut by the token limit)
    st.floats(-1, 1, allow_nan=False),  # reward
    st.lists(st.sampled_from([1, 2, 3]), min_size=7, max_size=7),  # roles (cycled)
)
trajs_st = st.lists(st.lists(turn_st, min_size=1, max_size=5), min_size=1, max_size=3)


def _build(chat, plain_ids, spec, cfg):
    eot = chat.end_of_turn_ids[0]
    trajs = []
    for ti, turns in enumerate(spec):
        traj = Trajectory("FrozenLake-4x4-v0", ti, ti, SYSTEM)
        for k, (raw, closed, reward, roles) in enumerate(turns):
            message = f"observation {ti} {k}"
            ctx = build_context(chat, traj, message, cfg)
            ids = [plain_ids[i % len(plain_ids)] for i in raw] + ([eot] if closed else [])
            traj.turns.append(TurnRecord(message, ctx, ids, [-0.5] * len(ids), [1.0] * len(ids),
                                         [roles[j % 7] for j in range(len(ids))], "", reward=reward))
        trajs.append(traj)
    return trajs


def _expected_context_length(chat, traj, k, w):
    first = max(0, k - w + 1)
    n = len(chat.prefix_ids(SYSTEM, traj.turns[first].user_message))
    for j in range(first, k):
        t = traj.turns[j]
        n += len(t.response_ids) + (t.response_ids[-1] != chat.end_of_turn_ids[0])
        n += len(chat.next_turn_ids(traj.turns[j + 1].user_message))
    return n


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=trajs_st, window=st.integers(1, 4))
def test_window_mode_one_sample_per_turn(frozenlake_policy, spec, window):
    chat, tok = frozenlake_policy.chat, frozenlake_policy.tokenizer
    special = set(tok.all_special_ids) | set(tok.get_added_vocab().values())
    plain = sorted(set(tok.get_vocab().values()) - special)
    cfg = RolloutConfig(context_mode="window", window_turns=window)
    trajs = _build(chat, plain, spec, cfg)
    batch = trajectories_to_batch(trajs, "window", pad_token_id=frozenlake_policy.pad_token_id)
    pairs = [(ti, k) for ti, tr in enumerate(trajs) for k in range(len(tr.turns))]
    assert batch.batch_size == len(pairs)
    assert batch.sample_traj.tolist() == [ti for ti, _ in pairs]
    assert batch.sample_order.tolist() == [k for _, k in pairs]
    assert batch.traj_group.tolist() == list(range(len(trajs)))
    eot = chat.end_of_turn_ids[0]
    for b, (ti, k) in enumerate(pairs):
        turn = trajs[ti].turns[k]
        ctx, n = turn.context_ids, len(turn.response_ids)
        # the context: the system prompt, then exactly the last min(window, k + 1) turns
        in_window = min(window, k + 1)
        first_message = trajs[ti].turns[k - in_window + 1].user_message
        assert ctx[: len(chat.prefix_ids(SYSTEM, first_message))] == chat.prefix_ids(SYSTEM, first_message)
        if in_window > 1:
            assert ctx[-len(chat.next_turn_ids(turn.user_message)) :] == chat.next_turn_ids(turn.user_message)
        # every earlier turn in the window adds its closed response and the next user message
        later = [trajs[ti].turns[j].user_message for j in range(k - in_window + 2, k + 1)]
        closing = chat.prefix_ids(SYSTEM, first_message).count(eot)
        assert ctx.count(eot) == closing + sum(1 + chat.next_turn_ids(m).count(eot) for m in later)
        assert len(ctx) == _expected_context_length(chat, trajs[ti], k, window)
        # the row: context then response, the mask exactly on the response
        assert batch.input_ids[b, : len(ctx) + n].tolist() == ctx + turn.response_ids
        assert int(batch.attention_mask[b].sum()) == len(ctx) + n
        where = batch.response_mask[b].nonzero().flatten().tolist()
        assert where == list(range(len(ctx), len(ctx) + n))
        assert batch.roles[b, len(ctx) : len(ctx) + n].tolist() == turn.roles
        assert set(batch.turn_index[b, where].tolist()) == {k}
        assert float(batch.token_rewards[b].sum()) == float(batch.token_rewards[b, len(ctx) + n - 1])
        assert abs(float(batch.token_rewards[b, len(ctx) + n - 1]) - turn.reward) < 1e-6


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spec=trajs_st)
def test_full_mode_one_sample_per_trajectory(frozenlake_policy, spec):
    chat, tok = frozenlake_policy.chat, frozenlake_policy.tokenizer
    plain = sorted(set(tok.get_vocab().values()) - set(tok.all_special_ids) - set(tok.get_added_vocab().values()))
    trajs = _build(chat, plain, spec, RolloutConfig(context_mode="full"))
    batch = trajectories_to_batch(trajs, "full", pad_token_id=frozenlake_policy.pad_token_id)
    assert batch.batch_size == len(trajs)
    for b, traj in enumerate(trajs):
        ids = traj.turns[-1].context_ids + traj.turns[-1].response_ids
        assert batch.input_ids[b, : len(ids)].tolist() == ids
        assert batch.input_ids[b][batch.response_mask[b]].tolist() == [i for t in traj.turns for i in t.response_ids]
        expect = [k for k, t in enumerate(traj.turns) for _ in t.response_ids]
        assert batch.turn_index[b][batch.response_mask[b]].tolist() == expect
        assert abs(float(batch.token_rewards[b].sum()) - traj.total_reward) < 1e-5

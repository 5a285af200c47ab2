"""Advantage estimators: hand-worked numbers, and equality with slow per-trajectory loops on random batches."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

import pytest
import torch
from batch_factory import SampleSpec, build_batch, random_batch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentbench_af.credit import CreditConfig, compute_advantages

torch.set_num_threads(1)
PROPERTY = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def one_token_batch(returns: list[float], groups: list[int]):
    """One sample of 'p a a' per trajectory (two generated tokens)."""
    samples = [SampleSpec(traj=i, roles="paa") for i in range(len(returns))]
    return build_batch(samples, groups, returns)


def per_traj(batch, adv: torch.Tensor) -> list[float]:
    """The (single) advantage of each trajectory, checking it is constant over its tokens."""
    out = []
    for i in range(batch.num_trajectories):
        rows = (batch.sample_traj == i).nonzero().flatten()
        vals = adv[rows][batch.response_mask[rows]]
        assert torch.allclose(vals, vals[0].expand_as(vals))
        out.append(float(vals[0]))
    return out


# ---------------------------------------------------------------- hand-worked


def test_grpo_hand_worked():
    # group 5: returns 1,0,0,0 -> mean .25, Bessel std sqrt(.75 / 3) = .5 -> 1.5, -.5, -.5, -.5
    # group 9: a single trajectory -> 0
    batch = one_token_batch([1.0, 0.0, 0.0, 0.0, 3.0], [5, 5, 5, 5, 9])
    out = compute_advantages(batch, CreditConfig(estimator="grpo"))
    assert per_traj(batch, out.advantages) == pytest.approx([1.5, -0.5, -0.5, -0.5, 0.0], abs=1e-5)
    assert out.returns is None
    assert (out.advantages[~batch.response_mask] == 0).all()
    centred = compute_advantages(batch, CreditConfig(estimator="grpo", grpo_norm_by_std=False))
    assert per_traj(batch, centred.advantages) == pytest.approx([0.75, -0.25, -0.25, -0.25, 0.0], abs=1e-6)


def test_grpo_equal_returns_give_zero():
    batch = one_token_batch([1.0, 1.0, 1.0], [0, 0, 0])
    assert per_traj(batch, compute_advantages(batch, CreditConfig()).advantages) == [0.0, 0.0, 0.0]


# Returns on a 0.1 grid from -5 to 10: most are not exact in binary, so a float32 group mean of G equal
# values is one rounding step off and the tiny std turned it into a same-sign advantage of up to 0.48.
EQUAL_RETURN_GRID = [round(-5.0 + 0.1 * k, 1) for k in range(151)]


@pytest.mark.parametrize("estimator", ["grpo", "rloo"])
@pytest.mark.parametrize("by_std", [True, False])
def test_equal_returns_give_exactly_zero(estimator, by_std):
    g = 8
    cfg = CreditConfig(estimator=estimator, grpo_norm_by_std=by_std)
    for value in EQUAL_RETURN_GRID:
        batch = one_token_batch([value] * g, [0] * g)
        adv = compute_advantages(batch, cfg).advantages
        assert (adv == 0).all(), f"{estimator}: a group of {g} returns {value} got {adv.abs().max().item()}"


def test_grpo_equal_group_beside_an_informative_one():
    # group 0: eight returns 2.4 (the value that gave +0.190 each in float32) -> exactly 0;
    # group 1: 2.4, 0.4 -> mean 1.4, Bessel std sqrt(2) -> +-0.707107
    batch = one_token_batch([2.4] * 8 + [2.4, 0.4], [0] * 8 + [1, 1])
    got = per_traj(batch, compute_advantages(batch, CreditConfig(estimator="grpo")).advantages)
    assert got[:8] == [0.0] * 8
    assert got[8:] == pytest.approx([0.707107, -0.707107], abs=1e-5)


def test_gigpo_equal_step_returns_give_exactly_zero():
    # eight trajectories of one group, both turns seen with the same keys and the same turn rewards 0.3,
    # 2.1: the episode group and both step groups are equal-valued -> every advantage is exactly 0
    samples = [
        SampleSpec(traj=i, roles="papa", rewards=[0, 0.3, 0, 2.1], turns=[0, 0, 1, 1]) for i in range(8)
    ]
    batch = build_batch(samples, [0] * 8, [2.4] * 8, turn_obs_key=[[10, 20]] * 8)
    out = compute_advantages(batch, CreditConfig(estimator="gigpo-step", gamma=0.95))
    assert (out.advantages == 0).all()


def test_rloo_hand_worked():
    # group 0: 3, 1, 2 -> 3 - 1.5, 1 - 2.5, 2 - 2; group 1: 1, 0, 0, 0 -> 1, -1/3 x3; group 2 alone -> 0
    batch = one_token_batch([3.0, 1.0, 2.0, 1.0, 0.0, 0.0, 0.0, 4.0], [0, 0, 0, 1, 1, 1, 1, 2])
    out = compute_advantages(batch, CreditConfig(estimator="rloo"))
    expected = [1.5, -1.5, 0.0, 1.0, -1 / 3, -1 / 3, -1 / 3, 0.0]
    assert per_traj(batch, out.advantages) == pytest.approx(expected, abs=1e-6)


def gae_hand_batch():
    """Window mode: trajectory 0 has two turn samples, stored in reverse row order.
    Generated tokens in order t0 t1 | t2 t3, rewards 0 .5 | 0 1, values .1 .2 | .3 .4."""
    turn1 = SampleSpec(
        traj=0, order=1, roles="ppaa", rewards=[0, 0, 0, 1.0], values=[9, 9, 0.3, 0.4], turns=[1] * 4
    )
    turn0 = SampleSpec(traj=0, order=0, roles="pra", rewards=[0, 0, 0.5], values=[9, 0.1, 0.2])
    return build_batch([turn1, turn0], [0], [1.5], pad=2)


def test_gae_hand_worked():
    # gamma .9, lambda .8 (gamma * lambda = .72):
    # deltas: d3 = 1 - .4 = .6; d2 = .9*.4 - .3 = .06; d1 = .5 + .9*.3 - .2 = .57; d0 = .9*.2 - .1 = .08
    # A3 = .6; A2 = .06 + .72*.6 = .492; A1 = .57 + .72*.492 = .92424; A0 = .08 + .72*.92424 = .7454528
    batch = gae_hand_batch()
    out = compute_advantages(batch, CreditConfig(estimator="gae", gamma=0.9, gae_lambda=0.8, gae_whiten=False))
    assert out.advantages[1, 1:3].tolist() == pytest.approx([0.7454528, 0.92424], abs=1e-6)
    assert out.advantages[0, 2:4].tolist() == pytest.approx([0.492, 0.6], abs=1e-6)
    assert out.returns[1, 1:3].tolist() == pytest.approx([0.8454528, 1.12424], abs=1e-6)
    assert out.returns[0, 2:4].tolist() == pytest.approx([0.792, 1.0], abs=1e-6)
    assert (out.advantages[~batch.response_mask] == 0).all() and (
        out.returns[~batch.response_mask] == 0
    ).all()


def test_gae_lambda_one_gamma_one_is_return_to_go_minus_value():
    batch = gae_hand_batch()
    out = compute_advantages(batch, CreditConfig(estimator="gae", gamma=1.0, gae_lambda=1.0, gae_whiten=False))
    assert out.advantages[1, 1:3].tolist() == pytest.approx([1.5 - 0.1, 1.5 - 0.2], abs=1e-6)
    assert out.advantages[0, 2:4].tolist() == pytest.approx([1.0 - 0.3, 1.0 - 0.4], abs=1e-6)


def test_gae_whitened_hand_worked():
    # the raw advantages of test_gae_hand_worked, A0..A3 = .7454528 .92424 .492 .6: mean .6904232;
    # deviations .0550296 .2338168 -.1984232 -.0904232, squares sum .10524681, var (/3) .03508227,
    # std .18730262 -> .29380 1.24834 -1.05937 -.48276; the returns stay unwhitened
    batch = gae_hand_batch()
    out = compute_advantages(batch, CreditConfig(estimator="gae", gamma=0.9, gae_lambda=0.8))
    assert out.advantages[1, 1:3].tolist() == pytest.approx([0.29380, 1.24834], abs=1e-4)
    assert out.advantages[0, 2:4].tolist() == pytest.approx([-1.05937, -0.48276], abs=1e-4)
    assert out.returns[1, 1:3].tolist() == pytest.approx([0.8454528, 1.12424], abs=1e-6)
    assert (out.advantages[~batch.response_mask] == 0).all()


def test_gae_without_values_is_a_clear_error():
    batch = gae_hand_batch()
    batch.values = None
    with pytest.raises(ValueError, match="batch.values is None"):
        compute_advantages(batch, CreditConfig(estimator="gae"))


def test_gigpo_step_hand_worked():
    # group 0: three trajectories of two turns, turn obs keys 10/20, 10/30, 10/20, turn rewards (0, 1),
    # (0, 0), (0, 0); gamma .5 -> step returns (.5, 1), (0, 0), (0, 0).
    # step group (0, 10): .5, 0, 0 -> mean 1/6, Bessel std sqrt(1/12) -> 1.154701, -.577350, -.577350
    # step group (0, 20): 1, 0 -> +-.707107; step group (0, 30) alone -> 0
    # episode (grpo) over returns 1, 0, 0 -> 1.154701, -.577350, -.577350
    # group 1: one trajectory with key 10 (a different group: no step group with group 0) -> 0
    samples = [
        SampleSpec(traj=0, roles="parpa", rewards=[0, 0, 0, 0, 1], turns=[0, 0, 0, 1, 1]),
        SampleSpec(traj=1, roles="papa", turns=[0, 0, 1, 1]),
        SampleSpec(traj=2, roles="papa", turns=[0, 0, 1, 1]),
        SampleSpec(traj=3, roles="pa", rewards=[0, 1.0]),
    ]
    keys = [[10, 20], [10, 30], [10, 20], [10, -1]]
    batch = build_batch(samples, [0, 0, 0, 1], [1.0, 0.0, 0.0, 1.0], turn_obs_key=keys)
    out = compute_advantages(batch, CreditConfig(estimator="gigpo-step", gamma=0.5))
    a = out.advantages
    assert a[0, 1:3].tolist() == pytest.approx([2.309401, 2.309401], abs=1e-5)
    assert a[0, 4].item() == pytest.approx(1.861808, abs=1e-5)
    assert a[1, 1].item() == pytest.approx(-1.154701, abs=1e-5)
    assert a[1, 3].item() == pytest.approx(-0.577350, abs=1e-5)
    assert a[2, 1].item() == pytest.approx(-1.154701, abs=1e-5)
    assert a[2, 3].item() == pytest.approx(-1.284457, abs=1e-5)
    assert a[3, 1].item() == pytest.approx(0.0, abs=1e-6)
    half = compute_advantages(batch, CreditConfig(estimator="gigpo-step", gamma=0.5, gigpo_step_weight=0.5))
    assert half.advantages[0, 4].item() == pytest.approx(1.154701 + 0.5 * 0.707107, abs=1e-5)


def test_gigpo_without_obs_keys_is_a_clear_error():
    batch = one_token_batch([1.0, 0.0], [0, 0])
    with pytest.raises(ValueError, match="turn_obs_key"):
        compute_advantages(batch, CreditConfig(estimator="gigpo-step"))


# ---------------------------------------------------------------- slow references


def slow_group_norm(returns: list[float], groups: list, by_std: bool) -> list[float]:
    members = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    out = [0.0] * len(returns)
    for idx in members.values():
        if len(idx) < 2:
            continue
        vals = [returns[i] for i in idx]
        mean = sum(vals) / len(vals)
        std = statistics.stdev(vals) if by_std else None
        for i in idx:
            out[i] = (returns[i] - mean) / (std + 1e-6) if by_std else returns[i] - mean
    return out


def slow_broadcast(batch, per_traj_values: list[float]) -> torch.Tensor:
    out = torch.zeros(batch.response_mask.shape)
    for b in range(batch.batch_size):
        for t in range(batch.response_mask.shape[1]):
            if batch.response_mask[b, t]:
                out[b, t] = per_traj_values[int(batch.sample_traj[b])]
    return out


def slow_grpo(batch, cfg):
    return slow_broadcast(
        batch, slow_group_norm(batch.traj_return.tolist(), batch.traj_group.tolist(), cfg.grpo_norm_by_std)
    )


def slow_rloo(batch, cfg):
    rets, groups = batch.traj_return.tolist(), batch.traj_group.tolist()
    vals = []
    for i, g in enumerate(groups):
        others = [rets[j] for j, h in enumerate(groups) if h == g and j != i]
        vals.append(rets[i] - sum(others) / len(others) if others else 0.0)
    return slow_broadcast(batch, vals)


def traj_tokens(batch, i: int) -> list[tuple[int, int]]:
    """(row, col) of trajectory i's generated tokens in generation order."""
    rows = sorted(
        (int(batch.sample_order[b]), b) for b in range(batch.batch_size) if int(batch.sample_traj[b]) == i
    )
    return [(b, t) for _, b in rows for t in range(batch.response_mask.shape[1]) if batch.response_mask[b, t]]


def slow_gae(batch, cfg):
    adv, ret = torch.zeros(batch.response_mask.shape), torch.zeros(batch.response_mask.shape)
    for i in range(batch.num_trajectories):
        toks = traj_tokens(batch, i)
        last, next_v = 0.0, 0.0
        for b, t in reversed(toks):
            v = float(batch.values[b, t])
            delta = float(batch.token_rewards[b, t]) + cfg.gamma * next_v - v
            last = delta + cfg.gamma * cfg.gae_lambda * last
            adv[b, t], ret[b, t] = last, last + v
            next_v = v
    return adv, ret


def slow_gigpo(batch, cfg):
    keys = batch.turn_obs_key.tolist()
    n_turns = len(keys[0])
    rewards = [[0.0] * n_turns for _ in keys]
    for i in range(batch.num_trajectories):
        for b, t in traj_tokens(batch, i):
            rewards[i][int(batch.turn_index[b, t])] += float(batch.token_rewards[b, t])
    step_ret = []
    for r in rewards:
        acc, out = 0.0, [0.0] * n_turns
        for k in reversed(range(n_turns)):
            acc = r[k] + cfg.gamma * acc
            out[k] = acc
        step_ret.append(out)
    cells = [(i, k) for i in range(len(keys)) for k in range(n_turns) if keys[i][k] != -1]
    groups = [(int(batch.traj_group[i]), keys[i][k]) for i, k in cells]
    step = slow_group_norm([step_ret[i][k] for i, k in cells], groups, cfg.grpo_norm_by_std)
    step_of = {cell: s for cell, s in zip(cells, step, strict=True)}
    episode = slow_group_norm(batch.traj_return.tolist(), batch.traj_group.tolist(), cfg.grpo_norm_by_std)
    out = torch.zeros(batch.response_mask.shape)
    for i in range(batch.num_trajectories):
        for b, t in traj_tokens(batch, i):
            out[b, t] = episode[i] + cfg.gigpo_step_weight * step_of.get(
                (i, int(batch.turn_index[b, t])), 0.0
            )
    return out


@PROPERTY
@given(
    seed=st.integers(0, 10_000),
    mode=st.sampled_from(["full", "window"]),
    by_std=st.booleans(),
    gamma=st.sampled_from([1.0, 0.9, 0.5]),
    lam=st.sampled_from([1.0, 0.95, 0.3, 0.0]),
    omega=st.sampled_from([1.0, 0.3]),
)
def test_vectorised_estimators_equal_slow_loops(seed, mode, by_std, gamma, lam, omega):
    batch = random_batch(seed, context_mode=mode)
    kw = {"gamma": gamma, "gae_lambda": lam, "grpo_norm_by_std": by_std, "gigpo_step_weight": omega}
    for name, slow in (("grpo", slow_grpo), ("rloo", slow_rloo), ("gigpo-step", slow_gigpo)):
        cfg = CreditConfig(estimator=name, **kw)
        torch.testing.assert_close(
            compute_advantages(batch, cfg).advantages, slow(batch, cfg), atol=1e-4, rtol=1e-4
        )
    cfg = CreditConfig(estimator="gae", gae_whiten=False, **kw)
    out = compute_advantages(batch, cfg)
    adv, ret = slow_gae(batch, cfg)
    torch.testing.assert_close(out.advantages, adv, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(out.returns, ret, atol=1e-5, rtol=1e-5)
    assert all(math.isfinite(float(x)) for x in out.advantages.flatten())

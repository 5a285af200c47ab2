"""The Action Bottleneck statistics: a hand-worked example, synthetic batches with a known answer,
skipped groups, bad input, and equality of the vectorised code with a slow loop."""

from __future__ import annotations

import json
import math
import random

import pytest
import torch
from diag_factory import Traj, Turn, bandit_trajs, make_batch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from slow_reference import slow_bottleneck

from agentbench_af.diagnose import BottleneckStats, compute_bottleneck, token_contributions
from agentbench_af.formats.roles import Role

torch.set_num_threads(1)
PROPERTY = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


def hand_trajs() -> list[Traj]:
    """Group 5: A (R = 1) turn 0: r 1.0, r 3.0; turn 1: a 0.5.  B (R = 0) turn 0: r 2.0, a 4.0; turn 1: f 1.5.
    Group 9: two rollouts with R = 1 (zero variance: skipped)."""
    return [
        Traj(5, 1.0, [Turn("rr", [1.0, 3.0]), Turn("a", [0.5])]),
        Traj(5, 0.0, [Turn("ra", [2.0, 4.0]), Turn("f", [1.5])]),
        Traj(9, 1.0, [Turn("ra", [7.0, 0.1])]),
        Traj(9, 1.0, [Turn("aa", [9.0, 0.3])]),
    ]


def test_hand_worked_contributions():
    # group 5: mean_e = (1 + 3 + .5 + 2 + 4 + 1.5) / 6 = 2, mean_R = .5, R - mean_R = +.5 (A), -.5 (B)
    # c: A (1-2)(.5) = -.5, (3-2)(.5) = .5, (.5-2)(.5) = -.75;  B (2-2)(-.5) = 0, (4-2)(-.5) = -1, (1.5-2)(-.5) = .25
    batch = make_batch(hand_trajs(), mode="full", pad=2)
    c = token_contributions(batch, "old")
    assert c[0].tolist()[:8] == pytest.approx([0, 0, -0.5, 0.5, 0, 0, -0.75, 0])
    assert c[1].tolist()[:8] == pytest.approx([0, 0, 0, -1.0, 0, 0, 0.25, 0])
    assert c[2:].abs().sum() == 0  # group 9 skipped


def test_hand_worked_shares_and_ratio():
    for mode in ("full", "window"):
        stats = compute_bottleneck(make_batch(hand_trajs(), mode=mode, shuffle_seed=3))
        assert (stats.n_groups, stats.n_groups_used, stats.n_groups_skipped) == (2, 1, 1)
        assert (stats.n_trajectories, stats.n_generated_tokens) == (4, 10)
        old = stats.sources["old"]
        # |c| = .5 .5 .75 | 0 1 .25, total 3: reasoning .5+.5+0 = 1, action .75+1 = 1.75, format .25
        # tokens (used group only): reasoning 3, action 2, format 1 of 6
        ov = old.overall
        assert (ov.n_tokens, ov.n_tokens_all, ov.signal) == (6, 10, pytest.approx(3.0))
        r, a, f = ov.roles["reasoning"], ov.roles["action"], ov.roles["format"]
        assert (r.token_share, r.signal_share, r.ratio) == pytest.approx((0.5, 1 / 3, 2 / 3))
        assert (a.token_share, a.signal_share, a.ratio) == pytest.approx((1 / 3, 1.75 / 3, 1.75))
        assert (f.token_share, f.signal_share, f.ratio) == pytest.approx((1 / 6, 0.25 / 3, 0.5))
        assert old.bottleneck_ratio == pytest.approx(1.75)
        assert (r.signed_signal, a.signed_signal, f.signed_signal) == pytest.approx((0.0, -1.75, 0.25))
        # mean energy over every group: reasoning (1+3+2+7)/4, action (.5+4+.1+9+.3)/5
        assert (r.mean_energy, a.mean_energy) == pytest.approx((13 / 4, 13.9 / 5))
        # Pearson in group 5: action means .5 (R 1) and 4 (R 0) -> -1; reasoning means 2 and 2: undefined;
        # format in B only: undefined. Group 9 has no reward variance: undefined everywhere.
        assert (a.pearson, a.pearson_prompts) == (pytest.approx(-1.0), 1)
        assert (r.pearson, r.pearson_prompts, f.pearson, f.pearson_prompts) == (None, 0, None, 0)
        # two prompts only: no Spearman
        assert a.spearman is None and a.spearman_prompts == 2
        # turn 0: |c| .5 .5 (A), 0 1 (B): 4 tokens, signal 2; reasoning 3 tokens |c| 1, action 1 token |c| 1
        t0, t1 = old.by_turn[0], old.by_turn[1]
        assert (t0.n_tokens, t0.signal, t0.token_share_of_total, t0.signal_share_of_total) == pytest.approx(
            (4, 2.0, 4 / 6, 2 / 3))
        assert (t0.roles["action"].token_share, t0.roles["action"].signal_share) == pytest.approx((0.25, 0.5))
        assert t0.roles["action"].ratio == pytest.approx(2.0)
        # turn 1: A's action |c| .75, B's format |c| .25
        assert (t1.n_tokens, t1.signal) == (2, pytest.approx(1.0))
        assert t1.roles["action"].ratio == pytest.approx(1.5) and t1.roles["format"].ratio == pytest.approx(0.5)
        assert t1.roles["reasoning"].token_share == 0 and t1.roles["reasoning"].ratio is None


def test_hand_worked_spearman():
    # four prompts, action energy per group 1, 2, 3, 4; reward variance 0 (skipped group), 1/16, 1/4, 1
    rewards = [(1.0, 1.0), (0.0, 0.5), (0.0, 1.0), (0.0, 2.0)]
    trajs = [Traj(g, rw, [Turn("ra", [0.3 * (i + 1), float(g + 1)])]) for g, rs in enumerate(rewards)
             for i, rw in enumerate(rs)]
    action = compute_bottleneck(make_batch(trajs)).sources["old"].overall.roles["action"]
    assert (action.spearman, action.spearman_prompts) == (pytest.approx(1.0), 4)
    # reasoning energies .3, .6 in every group: constant group means -> undefined
    reasoning = compute_bottleneck(make_batch(trajs)).sources["old"].overall.roles["reasoning"]
    assert reasoning.spearman is None and reasoning.spearman_prompts == 4
    # reasoning Pearson: .3 with the lower reward, .6 with the higher in the 3 used groups -> +1 each
    assert (reasoning.pearson, reasoning.pearson_prompts) == (pytest.approx(1.0), 3)


def test_reward_on_action_tokens_gives_ratio_above_one():
    stats = compute_bottleneck(make_batch(bandit_trajs(0, "action"), mode="window", shuffle_seed=1))
    for source in ("old", "entropy", "ref"):
        src = stats.sources[source]
        assert src.bottleneck_ratio > 2.0
        assert src.overall.roles["reasoning"].ratio < 0.8
        assert src.overall.roles["action"].pearson < -0.95  # right actions: low energy, high reward
        assert abs(src.overall.roles["reasoning"].pearson) < 0.2
        for turn in src.by_turn.values():
            assert turn.roles["action"].ratio > 2.0


def test_reward_on_reasoning_tokens_gives_ratio_below_one():
    stats = compute_bottleneck(make_batch(bandit_trajs(1, "reasoning")))
    src = stats.sources["old"]
    assert src.bottleneck_ratio < 0.6
    assert src.overall.roles["reasoning"].ratio > 1.1
    assert src.overall.roles["reasoning"].pearson < -0.95
    assert abs(src.overall.roles["action"].pearson) < 0.3


def test_zero_variance_groups_are_skipped():
    trajs = bandit_trajs(2, "action", n_groups=4)
    same = [Traj(100 + g, 1.0, t.turns) for g, t in enumerate(trajs[:8])]  # one group of 8 equal rewards
    base = compute_bottleneck(make_batch(trajs))
    more = compute_bottleneck(make_batch(trajs + same))
    assert (more.n_groups, more.n_groups_used, more.n_groups_skipped) == (12, 4, 8)
    b, m = base.sources["old"].overall, more.sources["old"].overall
    assert m.n_tokens == b.n_tokens and m.n_tokens_all == b.n_tokens_all + sum(
        len(tn.roles) for t in same for tn in t.turns)
    assert m.roles["action"].ratio == pytest.approx(b.roles["action"].ratio)
    assert m.roles["action"].pearson_prompts == 4


def test_all_groups_constant_gives_no_ratio():
    trajs = [Traj(0, 1.0, [Turn("ra", [1.0, 2.0])]), Traj(0, 1.0, [Turn("ar", [3.0, 0.5])])]
    stats = compute_bottleneck(make_batch(trajs))
    assert stats.n_groups_used == 0 and stats.sources["old"].bottleneck_ratio is None
    assert token_contributions(make_batch(trajs)).abs().sum() == 0


def test_ref_only_when_present_and_bad_input():
    batch = make_batch(hand_trajs(), with_ref=False)
    assert set(compute_bottleneck(batch).sources) == {"old", "entropy"}
    with pytest.raises(ValueError, match="ref_logprobs"):
        compute_bottleneck(batch, sources=["ref"])
    with pytest.raises(ValueError, match="unknown energy_source"):
        compute_bottleneck(batch, sources=["bogus"])
    bad = make_batch(hand_trajs())
    bad.roles[0, 2] = int(Role.PROMPT)
    with pytest.raises(ValueError, match="role values"):
        compute_bottleneck(bad)
    bad = make_batch(hand_trajs())
    bad.traj_return[0] = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        compute_bottleneck(bad)


def test_json_round_trip():
    stats = compute_bottleneck(make_batch(hand_trajs()))
    d = json.loads(json.dumps(stats.to_dict()))
    assert d["sources"]["old"]["bottleneck_ratio"] == pytest.approx(1.75)
    assert BottleneckStats.from_dict(d) == stats


def assert_same(fast, slow, path="") -> None:
    if isinstance(slow, dict):
        assert set(fast) - {"bottleneck_ratio"} == set(slow), path
        for k in slow:
            assert_same(fast[k], slow[k], f"{path}.{k}")
    elif slow is None or fast is None:
        assert fast is None and slow is None, f"{path}: {fast} != {slow}"
    elif isinstance(slow, float):
        assert math.isclose(fast, slow, rel_tol=1e-9, abs_tol=1e-9), f"{path}: {fast} != {slow}"
    else:
        assert fast == slow, path


def check_against_slow(batch) -> None:
    sources = ("old", "entropy", "ref")
    fast = compute_bottleneck(batch, sources, null_permutations=0).to_dict()
    slow = slow_bottleneck(batch, sources)
    assert_same(fast, slow)
    for s in sources:
        assert_same(fast["sources"][s]["bottleneck_ratio"], slow["sources"][s]["overall"]["roles"]["action"]["ratio"])


ENERGY = st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.75, 3.0])  # exact in binary: ties stay ties
TURN = st.builds(lambda roles, es, p: Turn(roles, es[: len(roles)], p),
                 st.text(alphabet="raf", min_size=0, max_size=4), st.lists(ENERGY, min_size=4, max_size=4),
                 st.integers(1, 2))
TRAJ = st.builds(lambda g, r, turns: Traj(g, r, turns), st.integers(0, 4),
                 st.sampled_from([0.0, 0.5, 1.0, -1.0]), st.lists(TURN, min_size=1, max_size=3))


@PROPERTY
@given(trajs=st.lists(TRAJ, min_size=1, max_size=9), mode=st.sampled_from(["full", "window"]),
       seed=st.integers(0, 5))
def test_vectorised_equals_slow_loop(trajs, mode, seed):
    check_against_slow(make_batch(trajs, mode=mode, shuffle_seed=seed))


@pytest.mark.parametrize("seed", range(4))
def test_vectorised_equals_slow_loop_random_floats(seed):
    rng = random.Random(seed)
    trajs = [Traj(rng.randrange(6), rng.choice([0.0, 1.0, rng.uniform(-1, 1)]),
                  [Turn("".join(rng.choice("rrraf") for _ in range(rng.randint(0, 7))),
                        [rng.expovariate(1.0) for _ in range(7)], rng.randint(1, 3))
                   for _ in range(rng.randint(1, 4))])
             for _ in range(30)]
    for tr in trajs:
        for turn in tr.turns:
            turn.energies = turn.energies[: len(turn.roles)]
    check_against_slow(make_batch(trajs, mode=rng.choice(["full", "window"]), shuffle_seed=seed))


def noise_trajs(seed: int) -> list[Traj]:
    """Rewards independent of every energy; action energies sit higher (U(2, 4)) than reasoning (U(.5, 1.5))."""
    rng = random.Random(seed)
    return [Traj(g, float(rng.random() < 0.5),
                 [Turn("r" * 8 + "aa", [rng.uniform(0.5, 1.5) for _ in range(8)] + [rng.uniform(2, 4) for _ in range(2)])])
            for g in range(30) for _ in range(8)]


def test_ratio_follows_energy_spread_and_pearson_follows_reward():
    # |c| = |e - mean_e| * |R - mean_R| measures how far a role's energies spread around the group mean,
    # not whether they move with the reward: offset action energies with rewards independent of every
    # token still give a ratio far above 1, and shuffling rewards within groups leaves it unchanged
    noise = compute_bottleneck(make_batch(noise_trajs(0)), ["old"]).sources["old"].overall.roles["action"]
    assert noise.ratio > 2.0 and noise.null_ratio == pytest.approx(noise.ratio, rel=0.1)
    assert abs(noise.pearson) < 0.15 and abs(noise.signed_signal) < 0.1 * noise.signal
    # reward made by the action tokens: the same ratio-vs-null picture, but Pearson and the signed sum see it
    real = compute_bottleneck(make_batch(bandit_trajs(0, "action")), ["old"]).sources["old"].overall.roles["action"]
    assert real.ratio > 2.0 and real.null_ratio == pytest.approx(real.ratio, rel=0.1)
    assert real.pearson < -0.95 and abs(real.signed_signal) > 0.25 * real.signal


def test_null_ratio_options():
    batch = make_batch(bandit_trajs(3, "action", n_groups=6))
    a = compute_bottleneck(batch, ["old"], null_permutations=8, seed=1)
    assert a == compute_bottleneck(batch, ["old"], null_permutations=8, seed=1)
    assert a != compute_bottleneck(batch, ["old"], null_permutations=8, seed=2)
    assert a.null_permutations == 8 and a.sources["old"].by_turn[1].roles["action"].null_ratio is not None
    none = compute_bottleneck(batch, ["old"], null_permutations=0).sources["old"].overall.roles["action"]
    assert none.null_ratio is None and none.ratio == a.sources["old"].overall.roles["action"].ratio
    with pytest.raises(ValueError, match="null_permutations"):
        compute_bottleneck(batch, null_permutations=-1)

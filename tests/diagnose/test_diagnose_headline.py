"""The reward-reactive headline: gradient signal per role against its shuffled-advantage null, worked by hand,
against a slow reference, and on planted rollouts."""

import itertools
import json
import math

import numpy as np
import pytest
import torch
from bigram import Bigram, planted_trajs
from diag_factory import Traj, Turn, make_batch

from agentbench_af.credit.groups import EPS, normalise_in_groups
from agentbench_af.diagnose.gradient_signal import null_energy, role_grams, role_masks, signal_energy
from agentbench_af.diagnose.headline import HeadlineStats, compute_headline, headline_verdict
from agentbench_af.models.forward import token_stats
from agentbench_af.models.tiny import tiny_config


def _one_group_grams(lm, batch, format_role="reasoning"):
    n = batch.num_trajectories
    return role_grams(lm, batch, torch.arange(batch.batch_size), batch.sample_traj, n, 1.0, "cpu", format_role)


def test_gradient_signal_and_null_by_hand():
    # W = 0: p = 1/V everywhere; an action token y after context x has gradient onehot(y) - 1/V on row W[x].
    # Rewards (1, 0, 0), actions (A, B, B) after the same context: A = (2/3, -1/3, -1/3) / (std + EPS),
    # std = sqrt(1/3) (Bessel), sum_i A_i g_i = A_1 (e_A - e_B), S = 2 A_1^2 = 8/3 (up to EPS).
    # Shuffles: the big advantage on rollout 1 (2 of 6) gives 8/3; on rollout 2 or 3 it gives
    # (A_big + A_small)(e_B) + A_small e_A -> 2 (1/sqrt3)^2 = 2/3; the mean is (2 * 8/3 + 4 * 2/3) / 6 = 4/3.
    trajs = [Traj(0, r, [Turn("ra", [1.0, 1.0], n_prompt=1, texts=["x ", "t ", a])])
             for r, a in ((1.0, "A "), (0.0, "B "), (0.0, "B "))]
    batch = make_batch(trajs)
    lm = Bigram(int(batch.input_ids.max()) + 1)
    grams = _one_group_grams(lm, batch)
    adv = normalise_in_groups(batch.traj_return, batch.traj_group, by_std=True).double()
    scale = (math.sqrt(1 / 3) / (math.sqrt(1 / 3) + EPS)) ** 2
    assert signal_energy(grams["action"], adv) == pytest.approx(8 / 3 * scale, rel=1e-6)
    assert null_energy(grams["action"], adv) == pytest.approx(4 / 3 * scale, rel=1e-6)
    # the reasoning token `t` follows `x` in every rollout: identical gradients, sum A = 0 -> no signal
    assert signal_energy(grams["reasoning"], adv) == pytest.approx(0.0, abs=1e-12)
    # identity shuffle = the signal; two rollouts: a shuffle can only negate A, so null = signal
    assert signal_energy(grams["action"], adv[[0, 1, 2]]) == signal_energy(grams["action"], adv)
    two = make_batch(trajs[:2])
    g2 = _one_group_grams(Bigram(int(two.input_ids.max()) + 1), two)["action"]
    a2 = normalise_in_groups(two.traj_return, two.traj_group, by_std=True).double()
    assert null_energy(g2, a2) == pytest.approx(signal_energy(g2, a2), rel=1e-12)


def test_null_energy_is_the_mean_over_every_permutation():
    gen = torch.Generator().manual_seed(3)
    V = torch.randn(5, 7, generator=gen, dtype=torch.float64)
    K = V @ V.T
    for adv in (torch.randn(5, generator=gen, dtype=torch.float64), torch.tensor([1.0, -1.0, 1.0, -1.0, 0.0])):
        perms = list(itertools.permutations(range(5)))
        brute = np.mean([signal_energy(K, adv[list(p)]) for p in perms])
        assert null_energy(K, adv) == pytest.approx(brute, rel=1e-12)
    # all advantages equal in magnitude and sign: every shuffle is the identity, null = signal
    same = torch.full((5,), 0.7, dtype=torch.float64)
    assert null_energy(K, same) == pytest.approx(signal_energy(K, same), rel=1e-12)


def _tiny_llama(vocab: int):
    from transformers import LlamaForCausalLM

    cfg = tiny_config("tiny-0.12m", vocab)
    cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers = 16, 32, 1
    torch.manual_seed(0)
    return LlamaForCausalLM(cfg).eval()


def test_gram_matches_a_slow_reference_per_rollout_forward_and_weighted_backward():
    # window mode, rows shuffled: a rollout spans several rows; the reference runs one forward per rollout
    # and one backward of sum_i w_i * (sum of its role's log-probs) per weighting vector w
    trajs = planted_trajs(1, "none", n_groups=1, group_size=4, n_turns=2)
    for t, r in zip(trajs, (1.0, 0.0, 0.5, 0.0), strict=True):
        t.reward = r
    batch = make_batch(trajs, mode="window", shuffle_seed=2)
    lm = _tiny_llama(int(batch.input_ids.max()) + 1)
    grams = _one_group_grams(lm, batch, format_role="action")
    masks = role_masks(batch, "action")
    params = [p for p in lm.parameters() if p.requires_grad]

    def slow(role, w):
        total = 0.0
        for i in range(4):
            rows = (batch.sample_traj == i).nonzero().squeeze(-1)
            logp, _, _ = token_stats(lm, batch.input_ids[rows], batch.attention_mask[rows], 1.0, with_entropy=False)
            total = total + w[i] * (logp * masks[role][rows]).sum()
        grads = torch.autograd.grad(total, params)
        return sum(float((g.double() ** 2).sum()) for g in grads)

    adv = normalise_in_groups(batch.traj_return, batch.traj_group, by_std=True).double()
    assert bool((adv != 0).all())
    for w in (adv, adv[[2, 0, 3, 1]], torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64)):
        for role in ("action", "reasoning"):
            assert signal_energy(grams[role], w) == pytest.approx(slow(role, w), rel=1e-4)


def test_correlations_by_hand():
    # rewards (0, 1, 2); action energies per rollout (1), (1, 1), (2, 2) -> sums (1, 2, 4), means (1, 1, 2)
    # Pearson(sums, R) = 3 / sqrt(42/9 * 2) = 9 / sqrt(84); Pearson(means, R) = 1 / sqrt(2/3 * 2) = sqrt(3)/2
    trajs = [Traj(0, 0.0, [Turn("ra", [5.0, 1.0])]), Traj(0, 1.0, [Turn("raa", [5.0, 1.0, 1.0])]),
             Traj(0, 2.0, [Turn("raa", [5.0, 2.0, 2.0])]), Traj(1, 1.0, [Turn("ra", [1.0, 1.0])]),
             Traj(1, 1.0, [Turn("ra", [1.0, 2.0])])]  # group 1: equal rewards, skipped
    h = compute_headline(make_batch(trajs), None)
    a, r = h.roles["action"], h.roles["reasoning"]
    assert a.pearson_sum == pytest.approx(9 / math.sqrt(84)) and a.pearson_sum_groups == 1
    assert a.pearson_mean == pytest.approx(math.sqrt(3) / 2) and a.pearson_mean_groups == 1
    assert r.pearson_sum is None and r.pearson_sum_groups == 0  # reasoning energy constant (5, 5, 5)
    assert h.ratio is None and h.reason == "no policy to take gradients of" and h.n_groups_used == 1


def _headline(signal, data_seed=0, **kw):
    batch = make_batch(planted_trajs(data_seed, signal))
    return compute_headline(batch, Bigram(int(batch.input_ids.max()) + 1, scale=0.3), **kw)


def test_planted_action_reward_puts_the_interval_above_the_null():
    h = _headline("action")
    assert h.n_groups_measured == 16 and h.reason is None
    assert h.ci_low > h.null and h.above_null and h.ratio > 1.5
    assert h.roles["action"].lift > 1.5 and h.roles["action"].above_null > 0
    assert h.roles["action"].pearson_sum < -0.5  # right actions have low energy and high reward
    assert "above the null" in h.verdict()


def test_planted_reasoning_reward_puts_the_interval_below_the_null():
    h = _headline("reasoning")
    assert h.ci_high < h.null and h.ratio < 1
    assert "below the null" in h.verdict()


def test_reward_unrelated_to_tokens_stays_within_the_null():
    h = _headline("none")
    assert h.ci_low <= h.null <= h.ci_high
    assert 0.7 < h.null < 1.3
    assert "contains the null" in h.verdict()


def test_headline_is_seeded_capped_and_round_trips():
    a, b = _headline("action", max_groups=5, shuffles=8, resamples=200), _headline("action", max_groups=5,
                                                                                   shuffles=8, resamples=200)
    assert a == b and a.n_groups_measured == 5 and len(a.groups) == 5 and a.n_groups_used == 16
    c = _headline("action", max_groups=5, shuffles=8, resamples=200, seed=1)
    assert (c.ci_low, c.null) != (a.ci_low, a.null) and c.ratio == a.ratio  # the seed only moves shuffles
    again = HeadlineStats.from_dict(json.loads(json.dumps(a.to_dict())))
    assert again == a
    assert "groups" not in a.to_dict(with_groups=False)
    # the headline is lift_action / lift_reasoning of the per-group sums
    S = {k: sum(g.signal[k] for g in a.groups) for k in ("action", "reasoning")}
    N = {k: sum(g.null_signal[k] for g in a.groups) for k in ("action", "reasoning")}
    assert a.ratio == pytest.approx((S["action"] / N["action"]) / (S["reasoning"] / N["reasoning"]), rel=1e-12)
    assert a.roles["action"].share == pytest.approx(S["action"] / (S["action"] + S["reasoning"]), rel=1e-12)


def test_undefined_cases_and_bad_settings():
    flat = [Traj(g, 1.0, [Turn("ra", [1.0, 1.0])]) for g in range(2) for _ in range(3)]
    batch = make_batch(flat)
    h = compute_headline(batch, Bigram(int(batch.input_ids.max()) + 1))
    assert h.ratio is None and h.reason == "no group with reward variance (2 groups)" and h.roles["action"].signal is None
    no_action = make_batch([Traj(0, float(i), [Turn("rr", [1.0, 2.0 + i])]) for i in range(3)])
    h = compute_headline(no_action, Bigram(int(no_action.input_ids.max()) + 1))
    assert h.reason == "no action tokens in the measured groups"
    one_group = make_batch(planted_trajs(0, "action", n_groups=1))
    h = compute_headline(one_group, Bigram(int(one_group.input_ids.max()) + 1, scale=0.3))
    assert h.ratio is not None and h.ci_low is None and "no interval" in h.verdict()
    with pytest.raises(ValueError, match="max_groups"):
        compute_headline(batch, None, max_groups=0)
    assert headline_verdict(None, None, None, None, reason="x") == "headline undefined (x)."

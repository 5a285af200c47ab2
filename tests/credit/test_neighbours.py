"""Hand-worked checks of the neighbourhood's methods: steer, ar, stapo, aepo, carl (weightings) and empg
(an estimator), on one small batch."""

from __future__ import annotations

import math

import pytest
import torch
from batch_factory import SampleSpec, build_batch

from agentbench_af.credit import (
    ADVANTAGE_ESTIMATORS,
    TOKEN_WEIGHTINGS,
    CreditConfig,
    compute_advantages,
    compute_token_weights,
)

L = math.log
# Group of two trajectories, one row each (columns 1 and 2 generated, 0 prompt, 3 padding):
#   traj 0, return 1: p = 0.5, 0.005, entropy 1.0, 0.2, turns 0 and 1
#   traj 1, return 0: p = 0.2, 0.9,   entropy 2.0, 0.1, turn 0
# grpo: mean 0.5, Bessel std 0.707107 -> A = +0.707106 (traj 0), -0.707106 (traj 1)
BATCH = build_batch(
    [SampleSpec(0, "prr", logprobs=[0, L(0.5), L(0.005)], entropy=[0, 1.0, 0.2], turns=[0, 0, 1]),
     SampleSpec(1, "prr", logprobs=[0, L(0.2), L(0.9)], entropy=[0, 2.0, 0.1])],
    traj_group=[0, 0], traj_return=[1.0, 0.0])


def _weights(name: str, **kw) -> list[float]:
    """The four generated tokens' weights, row-major: traj 0's two, then traj 1's."""
    return compute_token_weights(BATCH, CreditConfig(weighting=name, **kw))[:, 1:3].flatten().tolist()


def test_every_method_is_registered_with_its_source():
    for name in ("steer", "ar", "stapo", "aepo", "carl", "gtpo", "grpo-s"):
        assert "arXiv" in TOKEN_WEIGHTINGS[name].source, name
    assert ADVANTAGE_ESTIMATORS["empg"].method == "empg" and "2509.09265" in ADVANTAGE_ESTIMATORS["empg"].source


def test_ar_scales_by_the_old_probability():
    # 0.3 p + 0.7: 0.85, 0.7015 / 0.76, 0.97
    assert _weights("ar") == pytest.approx([0.85, 0.7015, 0.76, 0.97], abs=1e-6)
    assert _weights("ar", ar_alpha=0.0) == pytest.approx([1.0, 1.0, 1.0, 1.0])


def test_steer_maps_omega_inversely_onto_0_8_to_1_2():
    # Omega = |A (1 - p)(log p + H)|: 0.707106 * 0.5 * 0.306853 = 0.108489; 0.707106 * 0.995 * 5.098317 = 3.587073;
    # 0.707106 * 0.8 * 0.390562 = 0.220937; 0.707106 * 0.1 * 0.005361 = 0.000379. min 0.000379, max 3.587073:
    # w = 1.2 - 0.4 (Omega - min) / 3.586694 -> 1.187943, 0.8 / 1.175403, 1.2
    assert _weights("steer") == pytest.approx([1.187943, 0.8, 1.175403, 1.2], abs=2e-6)


def test_stapo_silences_positive_low_probability_low_entropy_tokens():
    # the 2 lowest-entropy tokens (50 %) are H 0.1 (A < 0) and H 0.2 (A > 0, p 0.005 < 0.01): the second is silenced
    assert _weights("stapo", stapo_entropy_fraction=0.5) == [1.0, 0.0, 1.0, 1.0]
    # 25 %: only H 0.1, whose advantage is negative: nothing silenced
    assert _weights("stapo", stapo_entropy_fraction=0.25) == [1.0, 1.0, 1.0, 1.0]
    # a probability threshold below 0.005: nothing silenced
    assert _weights("stapo", stapo_entropy_fraction=0.5, stapo_prob=0.001) == [1.0, 1.0, 1.0, 1.0]


def test_aepo_weights_by_standardised_entropy():
    # entropies 1.0, 0.2, 2.0, 0.1: mean 0.825, Bessel std 0.880814; z 0.198680, -0.709571, 1.333995, -0.823104
    assert _weights("aepo") == pytest.approx([1.039736, 0.858086, 1.266799, 0.835379], abs=1e-5)


def test_carl_keeps_the_most_uncertain_turns():
    # turns (traj 0, turn 0) H 1.0, (traj 0, turn 1) H 0.2, (traj 1, turn 0) H (2.0 + 0.1) / 2 = 1.05
    assert _weights("carl") == [0.0, 0.0, 1.0, 1.0]  # ceil(0.2 * 3) = 1 turn: traj 1's
    assert _weights("carl", carl_fraction=0.5) == [1.0, 0.0, 1.0, 1.0]  # 2 turns


def test_gtpo_weights_tokens_by_their_share_of_the_groups_entropy():
    # beta 0.5. traj 0 (A > 0): H 1.0, 0.2, mean 0.6: shares 1.666667, 0.333333 -> 1 + 0.5 (share - 1) = 1.333333, 0.666667
    # traj 1 (A < 0): 1/H 0.5, 10, mean 5.25: shares 0.095238, 1.904762 -> 0.547619, 1.452381
    assert _weights("gtpo", gtpo_beta=0.5) == pytest.approx([1.333333, 0.666667, 0.547619, 1.452381], abs=1e-5)


def test_grpo_s_weights_trajectories_by_their_mean_entropy():
    # one group, returns 1, 1, 0: A > 0 for trajectories 0 and 1 (mean entropies 1.0 and 3.0, mean 2.0:
    # shares 0.5, 1.5 -> 0.75, 1.25 with beta 0.5); trajectory 2 alone with A < 0: share 1 -> 1
    batch = build_batch([SampleSpec(0, "prr", entropy=[0, 0.5, 1.5]), SampleSpec(1, "pr", entropy=[0, 3.0]),
                         SampleSpec(2, "pr", entropy=[0, 0.7])], traj_group=[4, 4, 4], traj_return=[1.0, 1.0, 0.0])
    w = compute_token_weights(batch, CreditConfig(weighting="grpo-s", gtpo_beta=0.5))
    assert w.tolist() == [[0.0, 0.75, 0.75, 0.0], [0.0, 1.25, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]
    assert _weights("grpo-s", gtpo_beta=0.5) == [1.0, 1.0, 1.0, 1.0]  # each sign alone in its group


def test_empg_modulates_and_centres_the_step_advantages():
    # steps (0,0) H 1.0, (0,1) H 0.2, (1,0) H 1.05: H_norm 0.941176, 0, 1 (span 0.85)
    # exp(-H_norm) 0.390169, 1, 0.367879: mean 0.586016 -> g 0.665800, 1.706438, 0.627763; f = exp(-H_norm)
    # (0,0): 0.665800 * 0.707106 + 0.1 * f(0,1) = 0.570791; (0,1): 1.206633 (last step of traj 0, no bonus);
    # (1,0): -0.443895. Mean 0.444510 subtracted: 0.126281, 0.762123, -0.888405
    adv = compute_advantages(BATCH, CreditConfig(estimator="empg")).advantages
    assert adv[:, 1:3].flatten().tolist() == pytest.approx([0.126281, 0.762123, -0.888405, -0.888405], abs=2e-6)
    assert torch.equal(adv[:, [0, 3]], torch.zeros(2, 2))
    # zeta 0 and k 0: g = 1, no bonus: the grpo advantages minus their step mean (0.707106 / 3)
    plain = compute_advantages(BATCH, CreditConfig(estimator="empg", empg_k=0.0, empg_zeta=0.0)).advantages
    assert plain[:, 1:3].flatten().tolist() == pytest.approx([0.471404, 0.471404, -0.942809, -0.942809], abs=2e-6)


def test_bad_knobs_are_clear_errors():
    with pytest.raises(ValueError, match="credit.ar_alpha must be in"):
        CreditConfig(ar_alpha=1.5)
    with pytest.raises(ValueError, match="credit.carl_fraction must be in"):
        CreditConfig(carl_fraction=0.0)
    with pytest.raises(ValueError, match="credit.empg_zeta must be >= 0"):
        CreditConfig(empg_zeta=-1.0)

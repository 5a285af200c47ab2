"""Token weightings: hand-worked ActFocus numbers, each named method, and equality with a slow loop."""

from __future__ import annotations

import math

import pytest
import torch
from batch_factory import SampleSpec, build_batch, random_batch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentbench_af.credit import CreditConfig, compute_token_weights, token_energy
from agentbench_af.formats.roles import Role

torch.set_num_threads(1)
PROPERTY = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# prompt, prompt, then r r a a f a; action energies (-logprob) .5, 1, 2; the format token's .2
ROLES = "pprraafa"
LOGPROBS = [0.0, 0.0, -0.3, -0.7, -0.5, -1.0, -0.2, -2.0]
ENTROPY = [0.0, 0.0, 1.5, 0.2, 0.9, 2.5, 0.1, 0.4]


def hand_batch(**spec):
    sample = SampleSpec(
        traj=0, roles=ROLES, logprobs=LOGPROBS, entropy=ENTROPY, ref_logprobs=LOGPROBS, **spec
    )
    return build_batch([sample], [0], [1.0], pad=2)


def weights_of(batch, **cfg) -> list[float]:
    return compute_token_weights(batch, CreditConfig(**cfg))[0].tolist()


def test_actfocus_hand_worked():
    # softmax(.5, 1, 2): exp = 1.648721, 2.718282, 7.389056, sum 11.756059 -> .140244, .231224, .628532;
    # times n_a = 3 -> .420733, .693672, 1.885595 (lam = 1); reasoning and format tokens get alpha = .1
    w = weights_of(hand_batch(), weighting="actfocus")
    assert w == pytest.approx([0, 0, 0.1, 0.1, 0.420733, 0.693672, 0.1, 1.885595, 0, 0], abs=1e-5)
    assert sum(w[4:6]) + w[7] == pytest.approx(3.0, abs=1e-5)  # mean action weight 1 with lam = 1


def test_actfocus_lambda_half_and_tau():
    # lam .5: .5 + .5 * (.420733, .693672, 1.885595) = .710367, .846836, 1.442798
    w = weights_of(hand_batch(), weighting="actfocus", energy_lambda=0.5, alpha=0.3)
    assert w == pytest.approx([0, 0, 0.3, 0.3, 0.710367, 0.846836, 0.3, 1.442798, 0, 0], abs=1e-5)
    # tau .5: softmax(1, 2, 4) * 3 = .126030, .342586, 2.531384
    w = weights_of(hand_batch(), weighting="actfocus", tau=0.5)
    assert [w[4], w[5], w[7]] == pytest.approx([0.126030, 0.342586, 2.531384], abs=1e-5)


def test_actfocus_clips_at_w_max():
    w = weights_of(hand_batch(), weighting="actfocus", w_max=1.5)
    assert [w[4], w[5], w[7]] == pytest.approx([0.420733, 0.693672, 1.5], abs=1e-5)


def test_format_counted_as_action():
    # A = {a .5, a 1, f .2, a 2}: 4 * softmax = .508180, .837847, .376469, 2.277504
    w = weights_of(hand_batch(), weighting="actfocus", format_role="action")
    assert w == pytest.approx([0, 0, 0.1, 0.1, 0.508180, 0.837847, 0.376469, 2.277504, 0, 0], abs=1e-5)


def test_energy_sources():
    # entropy as energy: actions .9, 2.5, .4 -> softmax * 3
    ex = [math.exp(0.9), math.exp(2.5), math.exp(0.4)]
    expected = [3 * x / sum(ex) for x in ex]
    w = weights_of(hand_batch(), weighting="actfocus", energy_source="entropy")
    assert [w[4], w[5], w[7]] == pytest.approx(expected, abs=1e-5)
    # actfocus-entropy: the same numbers whatever credit.energy_source says
    assert [weights_of(hand_batch(), weighting="actfocus-entropy", energy_source="old")[i] for i in (4, 5, 7)] == \
        pytest.approx(expected, abs=1e-5)
    assert weights_of(hand_batch(), weighting="actfocus", energy_source="ref") == pytest.approx(
        weights_of(hand_batch(), weighting="actfocus"), abs=1e-6
    )
    batch = hand_batch()
    batch.ref_logprobs = None
    with pytest.raises(ValueError, match="ref_logprobs"):
        compute_token_weights(batch, CreditConfig(weighting="actfocus", energy_source="ref"))
    assert token_energy(hand_batch(), "old")[0, 4:8].tolist() == pytest.approx([0.5, 1.0, 0.2, 2.0])


def test_named_methods_fix_their_knobs():
    batch = hand_batch()
    # reasoning-only: lam = 0 -> action tokens 1, reasoning alpha (whatever energy_lambda says)
    w = weights_of(batch, weighting="actfocus-reasoning-only", alpha=0.25, energy_lambda=0.7)
    assert w == pytest.approx([0, 0, 0.25, 0.25, 1, 1, 0.25, 1, 0, 0])
    # action-only: alpha = 0, lam = 0
    w = weights_of(batch, weighting="action-only", alpha=0.25, energy_lambda=0.7)
    assert w == pytest.approx([0, 0, 0, 0, 1, 1, 0, 1, 0, 0])
    assert weights_of(batch, weighting="uniform") == [0, 0, 1, 1, 1, 1, 1, 1, 0, 0]


def test_top_entropy_keeps_the_top_fraction_of_the_batch():
    # one batch of two rows: 6 + 2 generated tokens; ceil(.2 * 8) = 2 -> entropies 2.5 (row 0) and 3.0 (row 1)
    other = SampleSpec(traj=1, roles="pra", entropy=[0.0, 3.0, 0.05])
    first = SampleSpec(traj=0, roles=ROLES, logprobs=LOGPROBS, entropy=ENTROPY)
    batch = build_batch([first, other], [0, 0], [1.0, 0.0])
    w = compute_token_weights(batch, CreditConfig(weighting="top-entropy"))
    assert w[0].tolist() == [0, 0, 0, 0, 0, 1, 0, 0, 0]
    assert w[1].tolist() == [0, 1, 0, 0, 0, 0, 0, 0, 0]
    # fraction .5 -> 4 tokens: 3.0, 2.5, 1.5, .9
    w = compute_token_weights(batch, CreditConfig(weighting="top-entropy", top_entropy_fraction=0.5))
    assert w[0].tolist() == [0, 0, 1, 0, 1, 1, 0, 0, 0] and w[1].tolist() == [0, 1, 0, 0, 0, 0, 0, 0, 0]


def test_preserve_mass():
    # actfocus weights sum to .1 * 3 + 3 = 3.3 over 6 generated tokens -> scale 6 / 3.3
    w = weights_of(hand_batch(), weighting="actfocus", preserve_mass=True)
    expected = [0, 0, 0.181818, 0.181818, 0.764969, 1.261221, 0.181818, 3.428355, 0, 0]
    assert w == pytest.approx(expected, abs=1e-5)
    assert sum(w) == pytest.approx(6.0, abs=1e-5)


def scope_batch():
    """Full mode, two turns: turn 0 actions with energies .5, 1; turn 1 one action with energy 2."""
    sample = SampleSpec(
        traj=0, roles="praappa", logprobs=[0, -0.4, -0.5, -1.0, 0, 0, -2.0], turns=[0, 0, 0, 0, 1, 1, 1]
    )
    return build_batch([sample], [0], [1.0])


def test_scope_turn_vs_trajectory():
    w = weights_of(scope_batch(), weighting="actfocus", scope="trajectory")
    assert [w[2], w[3], w[6]] == pytest.approx([0.420733, 0.693672, 1.885595], abs=1e-5)
    # turn scope: 2 * softmax(.5, 1) = .755081, 1.244919; the single action of turn 1 gets 1
    w = weights_of(scope_batch(), weighting="actfocus", scope="turn")
    assert [w[2], w[3], w[6]] == pytest.approx([0.755081, 1.244919, 1.0], abs=1e-5)
    assert w[1] == pytest.approx(0.1)


def test_trajectory_scope_spans_window_samples():
    # the same trajectory split into two samples (window mode) gives the same weights as scope_batch
    s0 = SampleSpec(traj=0, order=0, roles="praa", logprobs=[0, -0.4, -0.5, -1.0])
    s1 = SampleSpec(traj=0, order=1, roles="ppa", logprobs=[0, 0, -2.0], turns=[1, 1, 1])
    w = compute_token_weights(build_batch([s1, s0], [0], [1.0]), CreditConfig(weighting="actfocus"))
    assert [w[1, 2].item(), w[1, 3].item(), w[0, 2].item()] == pytest.approx(
        [0.420733, 0.693672, 1.885595], abs=1e-5
    )


# ---------------------------------------------------------------- slow reference


def slow_actfocus(batch, cfg, alpha: float, lam: float) -> torch.Tensor:
    mask, roles = batch.response_mask, batch.roles
    act_roles = {int(Role.ACTION)} | ({int(Role.FORMAT)} if cfg.format_role == "action" else set())
    source = {"old": -batch.old_logprobs, "ref": -batch.ref_logprobs, "entropy": batch.entropy}[
        cfg.energy_source
    ]
    B, T = mask.shape
    sets: dict[tuple, list[tuple[int, int]]] = {}
    for b in range(B):
        for t in range(T):
            if mask[b, t] and int(roles[b, t]) in act_roles:
                key = (int(batch.sample_traj[b]),) + (
                    (int(batch.turn_index[b, t]),) if cfg.scope == "turn" else ()
                )
                sets.setdefault(key, []).append((b, t))
    w = torch.zeros(B, T)
    for b in range(B):
        for t in range(T):
            if mask[b, t]:
                w[b, t] = alpha
    for members in sets.values():
        ex = [math.exp(float(source[b, t]) / cfg.tau) for b, t in members]
        for (b, t), x in zip(members, ex, strict=True):
            w[b, t] = min(max((1 - lam) + lam * len(members) * x / sum(ex), 0.0), cfg.w_max)
    if cfg.preserve_mass:
        for i in range(batch.num_trajectories):
            rows = [b for b in range(B) if int(batch.sample_traj[b]) == i]
            total, count = float(w[rows].sum()), int(mask[rows].sum())
            if total > 0:
                w[rows] *= count / total
    return w


def slow_top_entropy(batch, cfg) -> torch.Tensor:
    mask = batch.response_mask
    tokens = [(b, t) for b in range(mask.shape[0]) for t in range(mask.shape[1]) if mask[b, t]]
    keep = min(len(tokens), max(1, math.ceil(cfg.top_entropy_fraction * len(tokens) - 1e-9)))
    ranked = sorted(range(len(tokens)), key=lambda i: -float(batch.entropy[tokens[i]]))  # stable
    w = torch.zeros(mask.shape)
    for i in ranked[:keep]:
        w[tokens[i]] = 1.0
    return w


@PROPERTY
@given(
    seed=st.integers(0, 10_000),
    mode=st.sampled_from(["full", "window"]),
    scope=st.sampled_from(["trajectory", "turn"]),
    source=st.sampled_from(["old", "ref", "entropy"]),
    fmt=st.sampled_from(["reasoning", "action"]),
    preserve=st.booleans(),
    lam=st.sampled_from([1.0, 0.5, 1.7]),
    tau=st.sampled_from([1.0, 0.3]),
    w_max=st.sampled_from([5.0, 1.2]),
    frac=st.sampled_from([0.2, 0.5, 0.01]),
)
def test_vectorised_weights_equal_slow_loop(seed, mode, scope, source, fmt, preserve, lam, tau, w_max, frac):
    batch = random_batch(seed, context_mode=mode)
    base = {
        "scope": scope,
        "energy_source": source,
        "format_role": fmt,
        "preserve_mass": preserve,
        "energy_lambda": lam,
        "tau": tau,
        "w_max": w_max,
        "alpha": 0.2,
        "top_entropy_fraction": frac,
    }
    expected = {
        "actfocus": lambda c: slow_actfocus(batch, c, 0.2, lam),
        "actfocus-reasoning-only": lambda c: slow_actfocus(batch, c, 0.2, 0.0),
        "action-only": lambda c: slow_actfocus(batch, c, 0.0, 0.0),
        "uniform": lambda c: batch.response_mask.float(),
        "top-entropy": lambda c: slow_top_entropy(batch, c),
    }
    for name, slow in expected.items():
        cfg = CreditConfig(weighting=name, **base)
        w = compute_token_weights(batch, cfg)
        torch.testing.assert_close(w, slow(cfg), atol=1e-5, rtol=1e-5)
        assert (w[~batch.response_mask] == 0).all()
        assert not w.requires_grad and (w >= 0).all()


def test_weights_are_stop_gradient():
    batch = hand_batch()
    batch.old_logprobs = batch.old_logprobs.clone().requires_grad_(True)
    w = compute_token_weights(batch, CreditConfig(weighting="actfocus"))
    assert not w.requires_grad

"""Loss pieces: the clipped surrogate, aggregation modes, value loss, k3 KL and metrics, worked by hand."""

from __future__ import annotations

import math

import pytest
import torch

from agentbench_af.train.update.loss import (
    LossConfig,
    agg_loss,
    clipped_surrogate,
    entropy_bonus,
    kl_k3,
    policy_loss,
    policy_metrics,
    value_loss,
)

torch.set_num_threads(1)


def surrogate_for(ratios, advantages, **kw):
    old = torch.zeros(len(ratios))
    lp = torch.log(torch.tensor(ratios)).requires_grad_(True)
    loss = clipped_surrogate(lp, old, torch.tensor(advantages), **kw)
    return loss, lp


def test_clipped_surrogate_inside_and_outside_the_clip():
    # eps .2: A = +1 at ratio 1.1 (inside) -> -1.1; 1.5 (above) -> -1.2; .5 (below: unclipped is smaller) -> -.5
    #         A = -1 at ratio 1.5 (above: unclipped larger) -> 1.5; .5 (below) -> .8; .9 (inside) -> .9
    loss, lp = surrogate_for([1.1, 1.5, 0.5, 1.5, 0.5, 0.9], [1.0, 1.0, 1.0, -1.0, -1.0, -1.0], eps_low=0.2)
    assert loss.tolist() == pytest.approx([-1.1, -1.2, -0.5, 1.5, 0.8, 0.9], abs=1e-6)
    loss.sum().backward()
    # d(-A r)/d log r = -A r where unclipped is active, 0 where the clip is active
    assert lp.grad.tolist() == pytest.approx([-1.1, 0.0, -0.5, 1.5, 0.0, 0.9], abs=1e-6)


def test_asymmetric_clip_and_dual_clip():
    loss, _ = surrogate_for([1.5, 0.7], [1.0, -1.0], eps_low=0.2, eps_high=0.28)
    assert loss.tolist() == pytest.approx([-1.28, 0.8], abs=1e-6)
    # dual clip c = 3: A = -1 at ratio 5 -> min(max(5, 1.2), 3) = 3; A = -2 at ratio 2 -> min(4, 6) = 4;
    # positive advantages are unaffected
    loss, _ = surrogate_for([5.0, 2.0, 5.0], [-1.0, -2.0, 1.0], eps_low=0.2, dual_clip=3.0)
    assert loss.tolist() == pytest.approx([3.0, 4.0, -1.2], abs=1e-5)
    cfg = LossConfig(clip_eps_low=0.2, clip_eps_high=0.28, dual_clip=3.0)
    via_cfg, _ = surrogate_for([1.5, 5.0], [1.0, -1.0], eps_low=cfg)
    assert via_cfg.tolist() == pytest.approx([-1.28, 3.0], abs=1e-5)


def test_surrogate_is_finite_at_padded_positions():
    lp, old = torch.tensor([[-1.0, 0.0]]), torch.tensor([[-1.0, -500.0]])  # a huge log-ratio at padding
    loss = clipped_surrogate(lp, old, torch.zeros(1, 2), 0.2)
    assert torch.isfinite(loss).all()


PER_TOKEN = torch.tensor([[1.0, 2.0, 3.0, float("nan")], [4.0, float("inf"), 0.0, 0.0], [9.0, 9.0, 9.0, 9.0]])
MASK = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("token-mean", (1 + 2 + 3 + 4) / 4),  # 2.5
        ("seq-mean-token-mean", (2.0 + 4.0) / 2),  # 3; the empty row is not a sequence
        ("seq-mean-token-sum", (6.0 + 4.0) / 2),  # 5
    ],
)
def test_agg_modes(mode, expected):
    assert agg_loss(PER_TOKEN, MASK, mode).item() == pytest.approx(expected)


@pytest.mark.parametrize(
    "mode, denominator, expected",
    [
        # a rank holding these rows of a batch with 10 tokens (20 sequences) over 2 ranks divides by 5 (10):
        ("token-mean", 5.0, (1 + 2 + 3 + 4) / 5),  # 2.0
        ("seq-mean-token-mean", 10.0, (2.0 + 4.0) / 10),  # 0.6: each row's own token mean stays local
        ("seq-mean-token-sum", 10.0, (6.0 + 4.0) / 10),  # 1.0
    ],
)
def test_agg_with_a_given_denominator(mode, denominator, expected):
    assert agg_loss(PER_TOKEN, MASK, mode, torch.tensor(denominator)).item() == pytest.approx(expected)


def test_agg_rejects_unknown_mode_and_handles_empty_mask():
    with pytest.raises(ValueError, match="token-mean, seq-mean-token-mean, seq-mean-token-sum"):
        agg_loss(PER_TOKEN, MASK, "sum")
    assert agg_loss(PER_TOKEN, torch.zeros_like(MASK), "token-mean").item() == 0.0


@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
def test_policy_loss_weights_are_not_normalised_away(mode):
    lp = torch.tensor([[-1.0, -0.5, -2.0], [-0.3, -0.3, 0.0]])
    old = torch.tensor([[-1.1, -0.4, -2.0], [-0.2, -0.5, 0.0]])
    adv = torch.tensor([[1.0, 1.0, 1.0], [-0.5, -0.5, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=torch.bool)
    cfg = LossConfig(agg=mode)
    plain = policy_loss(lp, old, adv, torch.ones(2, 3), mask, cfg)
    assert policy_loss(lp, old, adv, torch.full((2, 3), 0.1), mask, cfg).item() == pytest.approx(
        0.1 * plain.item()
    )
    # weights are per token: zero weight on row 1 equals the loss of row 0 alone over the same denominator
    w = torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    surrogate = clipped_surrogate(lp, old, adv, cfg)
    assert policy_loss(lp, old, adv, w, mask, cfg).item() == pytest.approx(
        agg_loss(w * surrogate, mask, mode).item()
    )


def test_value_loss_clipped_ppo_style():
    # V = 1.5, V_old = 1, R = 2, clip .2: max((1.5-2)^2, (1.2-2)^2) / 2 = .32
    # V = 1.1 (inside): (1.1-2)^2 / 2 = .405; mean = .3625
    values, old, ret = torch.tensor([[1.5, 1.1]]), torch.tensor([[1.0, 1.0]]), torch.tensor([[2.0, 2.0]])
    mask = torch.ones(1, 2, dtype=torch.bool)
    assert value_loss(values, old, ret, mask, LossConfig(value_clip=0.2)).item() == pytest.approx(0.3625)
    assert value_loss(values, old, ret, mask, LossConfig(value_clip=None)).item() == pytest.approx(
        (0.125 + 0.405) / 2
    )


def test_kl_k3_and_entropy_bonus():
    # lp = -1, ref = -2: exp(-1) - (-1) - 1 = .367879; equal log-probs give 0
    kl = kl_k3(torch.tensor([-1.0, -0.7]), torch.tensor([-2.0, -0.7]))
    assert kl.tolist() == pytest.approx([math.exp(-1.0), 0.0], abs=1e-6)
    g = torch.Generator().manual_seed(0)
    assert (kl_k3(-torch.rand(50, generator=g) * 5, -torch.rand(50, generator=g) * 5) >= 0).all()
    ent = torch.tensor([[1.0, 3.0, 7.0]])
    assert entropy_bonus(
        ent, torch.tensor([[1, 1, 0]], dtype=torch.bool), "token-mean"
    ).item() == pytest.approx(2.0)


def test_policy_metrics():
    ratios = torch.tensor([[1.0, 1.5, 0.5, 1.1, 9.0]])
    mask = torch.tensor([[1, 1, 1, 1, 0]], dtype=torch.bool)
    m = policy_metrics(torch.log(ratios), torch.zeros(1, 5), mask, LossConfig())
    assert m["clip_frac"] == pytest.approx(0.5)
    expected_kl = sum(r - 1 - math.log(r) for r in (1.0, 1.5, 0.5, 1.1)) / 4
    assert m["approx_kl"] == pytest.approx(expected_kl, abs=1e-6)
    assert m["ratio_max"] == pytest.approx(1.5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"clip_eps_low": -0.1}, "clip_eps_low"),
        ({"clip_eps_low": 1.0}, "clip_eps_low must be < 1"),
        ({"dual_clip": 1.0}, "dual_clip"),
        ({"value_clip": 0.0}, "value_clip"),
        ({"agg": "mean"}, "loss.agg"),
        ({"max_grad_norm": 0.0}, "max_grad_norm"),
    ],
)
def test_loss_config_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LossConfig(**kwargs)

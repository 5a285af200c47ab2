"""Hand-worked checks of every built-in policy loss (`loss.policy`), through `train.update.loss.policy_loss`."""

from __future__ import annotations

import math

import pytest
import torch

from agentbench_af.credit import POLICY_LOSSES, PolicyLossOutput, register_policy_loss
from agentbench_af.train.update.loss import LossConfig, clipped_surrogate, policy_loss, policy_loss_terms


def _loss(policy: str, lp: list, old: list, adv: list, mask: list | None = None, weights: list | None = None, **kw):
    """(loss, d loss / d logprobs) for one call on small tensors."""
    logprobs = torch.tensor(lp, dtype=torch.float32, requires_grad=True)
    m = torch.ones_like(logprobs, dtype=torch.bool) if mask is None else torch.tensor(mask)
    w = torch.ones_like(logprobs) if weights is None else torch.tensor(weights)
    loss = policy_loss(logprobs, torch.tensor(old), torch.tensor(adv), w, m, LossConfig(policy=policy, **kw))
    loss.backward()
    return float(loss.detach()), logprobs.grad


def test_the_built_ins_are_registered_with_their_sources():
    for name in ("ppo-clip", "dr-grpo", "gspo", "cispo", "sapo", "clip-cov", "kl-cov", "aepo"):
        assert POLICY_LOSSES[name].source, name


def test_ppo_clip_is_the_default_and_the_clipped_surrogate():
    assert LossConfig().policy == "ppo-clip"
    lp, old, adv = torch.tensor([[0.1, -0.5]]), torch.tensor([[0.0, 0.0]]), torch.tensor([[1.0, -1.0]])
    w, mask = torch.tensor([[0.5, 2.0]]), torch.ones(1, 2, dtype=torch.bool)
    want = (w * clipped_surrogate(lp, old, adv, 0.2)).mean()
    assert float(policy_loss(lp, old, adv, w, mask, LossConfig())) == pytest.approx(float(want))


def test_dr_grpo_divides_each_sequence_sum_by_a_constant():
    # r = 1.1 on row 0's two tokens (A = 1), r = 1 on row 1's one token (A = -1); per token -A r:
    # -1.1, -1.1, +1.0: sum -1.2, over 2 sequences and the constant 4: -1.2 / 2 / 4 = -0.15
    loss, grad = _loss("dr-grpo", [[math.log(1.1), math.log(1.1)], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]],
                       [[1.0, 1.0], [-1.0, -1.0]], mask=[[True, True], [True, False]],
                       agg="seq-mean-token-sum", dr_grpo_tokens=4)
    assert loss == pytest.approx(-0.15, abs=1e-6)
    # d/d lp of -A r / 8: -1.1 / 8 on row 0, +1 / 8 on row 1's token, 0 off the mask
    assert torch.allclose(grad, torch.tensor([[-0.1375, -0.1375], [0.125, 0.0]]), atol=1e-6)
    with pytest.raises(ValueError, match="set loss.agg=seq-mean-token-sum"):
        LossConfig(policy="dr-grpo")


def test_gspo_clips_the_sequence_ratio():
    # log-ratios 0.1 and 0.3: mean 0.2, s = e^0.2 = 1.2214 > 1.2 with A = 1: both tokens lose -1.2, no gradient
    loss, grad = _loss("gspo", [[0.1, 0.3]], [[0.0, 0.0]], [[1.0, 1.0]])
    assert loss == pytest.approx(-1.2, abs=1e-6)
    assert torch.equal(grad, torch.zeros(1, 2))
    # log-ratios 0.1 and -0.1: s = 1 (inside); each token's gradient is -A s / 2 = -0.5, not ppo's -r / 2
    loss, grad = _loss("gspo", [[0.1, -0.1]], [[0.0, 0.0]], [[1.0, 1.0]])
    assert loss == pytest.approx(-1.0, abs=1e-6)
    assert torch.allclose(grad, torch.tensor([[-0.5, -0.5]]), atol=1e-6)


def test_cispo_keeps_the_gradient_of_clipped_tokens():
    # r = 1.5 > 1 + 0.28, A = 2: loss -1.28 * 2 * log 1.5 = -1.037991, gradient -2.56 (ppo-clip: 0)
    # r = 0.5, A = -1 (no lower bound): loss -(0.5 * -1 * log 0.5) = -0.346574, gradient +0.5
    loss, grad = _loss("cispo", [[math.log(1.5), math.log(0.5)]], [[0.0, 0.0]], [[2.0, -1.0]], clip_eps_high=0.28)
    assert loss == pytest.approx((-1.037991 - 0.346574) / 2, abs=1e-5)
    assert torch.allclose(grad, torch.tensor([[-1.28, 0.25]]), atol=1e-6)


def test_sapo_soft_gate_and_its_two_temperatures():
    # r = 1, A = 1, tau 1: gate sigma(0) * 4 = 2, loss -2, gradient -4 sigma (1 - sigma) r = -1
    # r = 1, A = -1, tau 1.05: gate 0.5 * 4 / 1.05 = 1.904762, loss +1.904762, gradient +1
    # r = e^0.5 = 1.648721, A = 1: sigma(0.648721) = 0.656722, gate 2.626889, gradient
    # -4 * 0.656722 * 0.343278 * 1.648721 = -1.486739
    loss, grad = _loss("sapo", [[0.0, 0.0, 0.5]], [[0.0, 0.0, 0.0]], [[1.0, -1.0, 1.0]])
    assert loss == pytest.approx((-2.0 + 1.904762 - 2.626889) / 3, abs=1e-5)
    assert torch.allclose(grad, torch.tensor([[-1.0, 1.0, -1.486739]]) / 3, atol=1e-5)


# A = [2, 0, -1, -1] (mean 0), log p = [-1, -2, -2.5, -2.5] (mean -2): Cov = [2, 0, 0.5, 0.5];
# only token 0 lies in (1, 5), and it is the top token by Cov. N = 4: max(1, int(2e-4 * 4)) = 1 token.
COV_LP = [[-1.0, -2.0, -2.5, -2.5]]
COV_ADV = [[2.0, 0.0, -1.0, -1.0]]


def test_clip_cov_detaches_the_one_token_in_the_window():
    loss, grad = _loss("clip-cov", COV_LP, COV_LP, COV_ADV)
    # r = 1 everywhere: per token [-2 * 0 (detached), 0, +1, +1] / 4 = 0.5; gradients [0, 0, 0.25, 0.25]
    assert loss == pytest.approx(0.5)
    assert torch.allclose(grad, torch.tensor([[0.0, 0.0, 0.25, 0.25]]))
    # token 0 already clipped by ppo-clip (old -1.5: r = e^0.5 > 1.2 with A > 0) is no candidate: nothing detached
    old = [[-1.5, -2.0, -2.5, -2.5]]
    loss, grad = _loss("clip-cov", COV_LP, old, COV_ADV)
    assert loss == pytest.approx((-2 * 1.2 + 2) / 4, abs=1e-6)
    assert torch.allclose(grad, torch.tensor([[0.0, 0.0, 0.25, 0.25]]))
    # a window that holds no token: plain ppo-clip
    _, grad = _loss("clip-cov", COV_LP, COV_LP, COV_ADV, cov_clip_low=2.5)
    assert torch.allclose(grad, torch.tensor([[-0.5, 0.0, 0.25, 0.25]]))


def test_kl_cov_penalises_the_top_covariance_token_without_clipping():
    # token 0: old -1.5, log r = 0.5, r = 1.648721 (ppo-clip would clip at 1.2): -2 r + |0.5| = -2.797443;
    # tokens 2 and 3: +1 each: (-2.797443 + 2) / 4 = -0.199361. d/d lp of token 0: (-2 r + 1) / 4 = -0.574361
    old = [[-1.5, -2.0, -2.5, -2.5]]
    loss, grad = _loss("kl-cov", COV_LP, old, COV_ADV)
    assert loss == pytest.approx(-0.199361, abs=1e-5)
    assert torch.allclose(grad, torch.tensor([[-0.574361, 0.0, 0.25, 0.25]]), atol=1e-5)


def test_aepo_keeps_a_rescaled_gradient_on_clipped_high_entropy_tokens():
    # entropies [2, 0.5, 3, 1]: mean 1.625, so tokens 0 and 2 are high-entropy.
    # token 0: r = 1.5 > 1.2, A = 1, high: value -1.2 (ppo-clip's), gradient -A (1 + eps) = -1.2 (ppo-clip: 0)
    # token 1: r = 1.5 > 1.2, A = 1, low entropy: ppo-clip, value -1.2, gradient 0
    # token 2: r = 0.5 < 0.8, A = -2, high: value -(-2)(0.8) = 1.6, gradient +1.6 (ppo-clip: 0)
    # token 3: r = 1 inside, A = 1: value -1, gradient -A r = -1
    # token-mean over 4: loss (-1.2 - 1.2 + 1.6 - 1) / 4 = -0.45, gradients [-0.3, 0, 0.4, -0.25]
    logprobs = torch.tensor([[math.log(1.5), math.log(1.5), math.log(0.5), 0.0]], requires_grad=True)
    adv, mask = torch.tensor([[1.0, 1.0, -2.0, 1.0]]), torch.ones(1, 4, dtype=torch.bool)
    entropy = torch.tensor([[2.0, 0.5, 3.0, 1.0]])
    loss, metrics = policy_loss_terms(logprobs, torch.zeros(1, 4), adv, torch.ones(1, 4), mask, LossConfig(policy="aepo"),
                                      entropy=entropy)
    loss.backward()
    assert float(loss.detach()) == pytest.approx(-0.45, abs=1e-6)
    assert torch.allclose(logprobs.grad, torch.tensor([[-0.3, 0.0, 0.4, -0.25]]), atol=1e-6)
    assert metrics == {"aepo_kept_grad": 0.5}
    # the same tokens under ppo-clip: the clipped ones have no gradient
    _, grad = _loss("ppo-clip", logprobs.detach().tolist(), [[0.0] * 4], adv.tolist())
    assert torch.allclose(grad, torch.tensor([[0.0, 0.0, 0.0, -0.25]]), atol=1e-6)
    with pytest.raises(ValueError, match="policy loss 'aepo' needs each token's entropy"):
        policy_loss(logprobs, torch.zeros(1, 4), adv, torch.ones(1, 4), mask, LossConfig(policy="aepo"))


def test_a_plugin_policy_loss_and_its_checks():
    @register_policy_loss("test-halved")
    def halved(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce):
        return PolicyLossOutput(weights * -advantages * logprobs / 2, {"seen": float(reduce.sum(mask.sum().double()))})

    @register_policy_loss("test-bad-shape")
    def bad(logprobs, old_logprobs, advantages, weights, mask, cfg, reduce):
        return PolicyLossOutput(logprobs[:, :1], {})

    try:
        lp, mask = torch.tensor([[-1.0, -3.0]]), torch.ones(1, 2, dtype=torch.bool)
        loss, metrics = policy_loss_terms(lp, lp, torch.tensor([[1.0, 1.0]]), torch.ones(1, 2), mask,
                                          LossConfig(policy="test-halved"))
        assert float(loss) == pytest.approx(1.0) and metrics == {"seen": 2.0}  # (0.5 + 1.5) / 2
        # a loss written against the seven-argument signature is never handed the entropies
        with_entropy = policy_loss(lp, lp, torch.tensor([[1.0, 1.0]]), torch.ones(1, 2), mask,
                                   LossConfig(policy="test-halved"), entropy=torch.ones(1, 2))
        assert float(with_entropy) == pytest.approx(1.0)
        with pytest.raises(ValueError, match="policy loss 'test-bad-shape' returned"):
            policy_loss(lp, lp, lp, torch.ones(1, 2), mask, LossConfig(policy="test-bad-shape"))
        with pytest.raises(ValueError, match="already registered"):
            register_policy_loss("test-halved")(bad)
    finally:
        POLICY_LOSSES.pop("test-halved", None)
        POLICY_LOSSES.pop("test-bad-shape", None)
    with pytest.raises(ValueError, match="unknown policy loss 'nope'; registered: (.*, )?cispo, clip-cov"):
        LossConfig(policy="nope")

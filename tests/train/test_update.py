"""One `ppo_update` moves every trainable parameter (value head included for PPO), and nothing moves
when every advantage is zero (the loss reaches the weights only through the advantages); a detached
critic's value loss moves its head only; a separate critic starts as a copy of the trunk and its loss
moves only the copy."""

import dataclasses

import pytest
import torch
from train_helpers import FROZENLAKE

from agentbench_af.credit import CreditConfig, compute_token_weights
from agentbench_af.models.forward import token_stats
from agentbench_af.models.policy import Policy
from agentbench_af.models.value import ValueHead
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train.distributed.data_parallel import TrainModules
from agentbench_af.train.update.critic import SeparateCritic
from agentbench_af.train.update.loss import LossConfig
from agentbench_af.train.update.ppo import Credit, UpdateSettings, ppo_update

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def rollout_batch(warm_start):
    policy = Policy.load(warm_start)
    engine = TransformersEngine(policy.lm, policy.pad_token_id)
    torch.manual_seed(0)
    trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, FROZENLAKE, [1, 2], RolloutConfig(group_size=2, max_new_tokens=48))
    return trajectories_to_batch(trajs, "full", policy.pad_token_id)


def _run(warm_start, batch, weighting, with_value, advantages, epochs=1, minibatches=1, detach_critic=False):
    policy = Policy.load(warm_start)
    head = policy.ensure_value_head() if with_value else None
    params = list(policy.lm.parameters()) + (list(head.parameters()) if head is not None else [])
    before = [p.detach().clone() for p in params]
    with torch.no_grad():
        old, _, values = token_stats(policy.lm, batch.input_ids, batch.attention_mask, value_head=head, with_entropy=False)
    batch.old_logprobs = old * batch.response_mask
    batch.values = None if values is None else values * batch.response_mask
    returns = None if head is None else torch.randn(batch.response_mask.shape, generator=torch.Generator().manual_seed(1)) * batch.response_mask
    weights = compute_token_weights(batch, CreditConfig(weighting=weighting))
    optimizer = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.0)
    settings = UpdateSettings(LossConfig(), CPU, epochs, minibatches, detach_critic=detach_critic)
    metrics = ppo_update(TrainModules(policy.lm, head), optimizer, batch, Credit(advantages, returns, weights), settings,
                         torch.Generator().manual_seed(0))
    names = [n for n, _ in policy.lm.named_parameters()] + ([f"value_head.{n}" for n, _ in head.named_parameters()] if head else [])
    changed = {n: not torch.equal(b, p.detach()) for n, b, p in zip(names, before, params, strict=True)}
    return changed, metrics


def _advantages(batch):
    adv = torch.randn(batch.response_mask.shape, generator=torch.Generator().manual_seed(2))  # (B, T)
    return adv * batch.response_mask


@pytest.mark.parametrize(("weighting", "with_value"), [("uniform", False), ("actfocus", False), ("uniform", True), ("actfocus", True)])
def test_one_update_changes_every_parameter(warm_start, rollout_batch, weighting, with_value):
    changed, metrics = _run(warm_start, rollout_batch, weighting, with_value, _advantages(rollout_batch))
    assert all(changed.values()), [n for n, c in changed.items() if not c]
    assert len(changed) >= 10 and (any(n.startswith("value_head") for n in changed) == with_value)
    assert metrics["grad_norm"] > 0 and ("value_loss" in metrics) == with_value


def test_several_minibatches_and_epochs(warm_start, rollout_batch):
    changed, metrics = _run(warm_start, rollout_batch, "actfocus", True, _advantages(rollout_batch), epochs=2, minibatches=2)
    assert all(changed.values())
    assert metrics["clip_frac"] >= 0 and metrics["approx_kl"] >= 0


def test_zero_advantages_leave_the_policy_unchanged(warm_start, rollout_batch):
    changed, metrics = _run(warm_start, rollout_batch, "actfocus", False, torch.zeros(rollout_batch.response_mask.shape))
    assert not any(changed.values())
    assert metrics["grad_norm"] == 0.0 and metrics["pg_loss"] == 0.0


@pytest.mark.parametrize("detach_critic", [True, False])
def test_a_detached_critic_trains_only_its_head(warm_start, rollout_batch, detach_critic):
    # zero advantages: only the value loss has a gradient; it reaches the trunk only when shared
    changed, metrics = _run(warm_start, rollout_batch, "uniform", True, torch.zeros(rollout_batch.response_mask.shape),
                            detach_critic=detach_critic)
    head = {n: c for n, c in changed.items() if n.startswith("value_head")}
    trunk = {n: c for n, c in changed.items() if not n.startswith("value_head")}
    assert all(head.values()) and metrics["critic_grad_norm"] > 0
    assert any(trunk.values()) != detach_critic


def test_entropy_without_a_graph_has_the_same_values(warm_start, rollout_batch):
    policy = Policy.load(warm_start)
    b = rollout_batch
    lp, ent, _ = token_stats(policy.lm, b.input_ids, b.attention_mask)
    lp2, ent2, _ = token_stats(policy.lm, b.input_ids, b.attention_mask, entropy_grad=False)
    assert ent.requires_grad and not ent2.requires_grad and lp2.requires_grad
    assert torch.equal(ent.detach(), ent2) and torch.equal(lp.detach(), lp2.detach())


def test_a_separate_critic_starts_as_the_policy_trunk_and_trains_alone(warm_start, rollout_batch):
    policy = Policy.load(warm_start)
    b = dataclasses.replace(rollout_batch)  # a shallow copy: the module's batch keeps its own tensors
    critic = SeparateCritic(policy.lm, seed=3)
    # a fresh copy reads the same hidden states as a head on the policy itself (same head seed)
    with torch.no_grad():
        _, _, on_policy = token_stats(policy.lm, b.input_ids, b.attention_mask, value_head=ValueHead(
            policy.lm.config.hidden_size, seed=3), with_entropy=False)
        separate = critic(b.input_ids, b.attention_mask)
    assert separate.shape == b.input_ids.shape and torch.allclose(separate, on_policy, atol=1e-5)
    assert torch.all(separate[:, 0] == 0)
    # zero advantages: only the value loss has a gradient, and it reaches the critic's copy only
    lm_before = [p.detach().clone() for p in policy.lm.parameters()]
    critic_before = {n: p.detach().clone() for n, p in critic.named_parameters()}
    b.old_logprobs = token_stats(policy.lm, b.input_ids, b.attention_mask, with_entropy=False)[0].detach() * b.response_mask
    b.values = separate * b.response_mask
    returns = torch.randn(b.response_mask.shape, generator=torch.Generator().manual_seed(1)) * b.response_mask
    params = list(policy.lm.parameters()) + list(critic.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.0)
    zeros = torch.zeros(b.response_mask.shape)
    metrics = ppo_update(TrainModules(policy.lm, critic=critic), optimizer, b, Credit(zeros, returns, torch.ones_like(zeros)),
                         UpdateSettings(LossConfig(), CPU), torch.Generator().manual_seed(0))
    assert metrics["value_loss"] > 0 and metrics["critic_grad_norm"] > 0 and metrics["grad_norm"] == 0
    assert all(torch.equal(a, p) for a, p in zip(lm_before, policy.lm.parameters(), strict=True))
    unchanged = [n for n, p in critic.named_parameters() if torch.equal(critic_before[n], p.detach())]
    assert not unchanged, unchanged
    with pytest.raises(ValueError, match="not both"):
        ppo_update(TrainModules(policy.lm, policy.ensure_value_head(), critic), optimizer, b, Credit(zeros, returns, zeros),
                   UpdateSettings(LossConfig(), CPU), torch.Generator().manual_seed(0))


def test_the_logged_policy_loss_is_the_weighted_surrogate_at_ratio_one(warm_start, rollout_batch):
    """One minibatch, one epoch: the policy still equals the sampling policy, every ratio is 1, so the
    loss is token-mean(w * -A) over generated tokens (worked out here without `train.update.loss`)."""
    adv = _advantages(rollout_batch)
    _, metrics = _run(warm_start, rollout_batch, "actfocus", False, adv)
    weights = compute_token_weights(rollout_batch, CreditConfig(weighting="actfocus"))  # (B, T)
    mask = rollout_batch.response_mask  # (B, T)
    expected = float((weights * -adv)[mask].sum() / mask.sum())
    assert metrics["pg_loss"] == pytest.approx(expected, rel=1e-5, abs=1e-7)
    assert metrics["clip_frac"] == 0.0

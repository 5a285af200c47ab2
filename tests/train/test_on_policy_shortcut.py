"""The on-policy shortcut of `train.update.step.update`: with one epoch and one minibatch the update's own forward
gives the old log-probs, and the update equals the one after the separate scoring pass: the same
parameters after the step, the same metrics and the same scored batch, for GRPO and for GRPO+ActFocus
with the energy read from the old log-probs (its weights are computed between the forward and the loss).
The collected batch is left as it was. The pass is kept wherever the shortcut would not be exact."""

import copy
import dataclasses

import pytest
import torch
from train_helpers import FROZENLAKE

from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train.config import RLConfig, TrainConfig
from agentbench_af.train.distributed.ranks import Ranks
from agentbench_af.train.update.learner import build_learner
from agentbench_af.train.update.step import StepContext, fuses_scoring, samples_on_policy, update

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def sampled(warm_start):
    """A rollout batch as the collector leaves it (engine log-probs, not yet scored)."""
    policy = build_learner(TrainConfig(), warm_start, CPU).policy
    engine = TransformersEngine(policy.lm, policy.pad_token_id)
    torch.manual_seed(0)
    trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, FROZENLAKE, [1, 2, 3],
                             RolloutConfig(group_size=4, max_new_tokens=48))
    batch = trajectories_to_batch(trajs, "full", policy.pad_token_id)
    # returns that differ within every group, so that every advantage is non-zero
    batch.traj_return = batch.traj_return + torch.rand(batch.traj_return.shape, generator=torch.Generator().manual_seed(0))
    return batch


def _config(method: str, **rl) -> TrainConfig:
    return TrainConfig(method=method, rl=RLConfig(lr=1e-3, warmup_steps=0, **rl))


def _step(warm_start, batch, cfg: TrainConfig, shortcut: bool):
    learner = build_learner(cfg, warm_start, CPU)
    before = {k: v.clone() for k, v in vars(batch).items() if isinstance(v, torch.Tensor)}
    scored, metrics = update(learner, batch, cfg, StepContext(torch.Generator().manual_seed(0), CPU, on_policy=shortcut))
    assert all(torch.equal(getattr(batch, k), v) for k, v in before.items())  # the collected batch is unchanged
    assert fuses_scoring(cfg, learner, StepContext(torch.Generator(), CPU, on_policy=shortcut)) == shortcut
    return dict(learner.policy.lm.named_parameters()), metrics, scored


@pytest.mark.parametrize("method", ["grpo", "grpo+actfocus"])
def test_the_shortcut_gives_the_same_update_as_the_scoring_pass(warm_start, sampled, method):
    cfg = _config(method)
    assert cfg.credit.energy_source == "old"  # ActFocus weights read the old log-probs
    params, metrics, scored = _step(warm_start, sampled, cfg, shortcut=False)
    params_s, metrics_s, scored_s = _step(warm_start, sampled, cfg, shortcut=True)
    assert metrics.keys() == metrics_s.keys()
    for key in metrics:
        assert metrics_s[key] == pytest.approx(metrics[key], rel=1e-5, abs=1e-6), key
    # the update reports its token weights: GRPO weighs every generated token 1; ActFocus none 0, reasoning 0.1
    assert metrics["health/weight_zero_share"] == 0.0
    assert (metrics["health/weight_mean"] == pytest.approx(1.0)) == (method == "grpo")
    # on-policy: the ratio is exactly 1 with the shortcut
    assert metrics_s["clip_frac"] == 0.0 and metrics_s["approx_kl"] == 0.0 and metrics_s["ratio_max"] == 1.0
    for name, p in params.items():
        torch.testing.assert_close(params_s[name], p, rtol=1e-5, atol=1e-6, msg=name)
    # the scored batch the loop keeps (snapshot, saved rollouts) holds the same old log-probs
    torch.testing.assert_close(scored_s.old_logprobs, scored.old_logprobs, rtol=1e-5, atol=1e-6)
    assert not torch.equal(scored_s.old_logprobs, sampled.old_logprobs)  # no longer the engine's numbers
    assert torch.equal(scored_s.old_logprobs == 0, ~sampled.response_mask)


def test_the_shortcut_gives_the_same_lopti_update(warm_start, sampled):
    # Lopti's first pass runs on the shortcut's forward, its second on a forward of its own either way
    cfg = _config("grpo+ar", token_passes="lopti")
    params, metrics, _ = _step(warm_start, sampled, cfg, shortcut=False)
    params_s, metrics_s, _ = _step(warm_start, sampled, cfg, shortcut=True)
    assert metrics.keys() == metrics_s.keys() and 0 < metrics["lopti_low_share"] < 1
    for key in metrics:
        assert metrics_s[key] == pytest.approx(metrics[key], rel=1e-5, abs=1e-6), key
    for name, p in params.items():
        torch.testing.assert_close(params_s[name], p, rtol=1e-5, atol=1e-6, msg=name)


def test_actfocus_weights_follow_the_forward_log_probs(warm_start, sampled):
    """The shortcut's ActFocus step differs from GRPO's: the weights computed inside the update are used."""
    params_g, metrics_g, _ = _step(warm_start, sampled, _config("grpo"), shortcut=True)
    params_a, metrics_a, _ = _step(warm_start, sampled, _config("grpo+actfocus"), shortcut=True)
    assert metrics_a["pg_loss"] != pytest.approx(metrics_g["pg_loss"], rel=1e-3)
    assert any(not torch.allclose(params_a[n], params_g[n]) for n in params_g)


def test_the_pass_is_kept_where_the_shortcut_is_not_exact(warm_start):
    grpo = _config("grpo")
    learner = build_learner(grpo, warm_start, CPU)
    on = StepContext(torch.Generator(), CPU, on_policy=True)
    assert fuses_scoring(grpo, learner, on)
    assert not fuses_scoring(grpo, learner, dataclasses.replace(on, on_policy=False))
    assert not fuses_scoring(grpo, learner, dataclasses.replace(on, ranks=Ranks(0, 2, 0)))  # credit needs every rank
    assert not fuses_scoring(_config("grpo", epochs=2), learner, on)
    assert not fuses_scoring(_config("grpo", minibatches=2), learner, on)
    assert not fuses_scoring(grpo, dataclasses.replace(learner, ref_lm=copy.deepcopy(learner.policy.lm)), on)
    assert not fuses_scoring(grpo, dataclasses.replace(learner, value_head=learner.policy.ensure_value_head()), on)
    # the engine samples from the trained module itself, with the training forward's numerics
    policy = learner.policy
    assert samples_on_policy(TransformersEngine(policy.lm, policy.pad_token_id), learner)
    # rollouts sampled by another model or engine (vLLM): their log-probs are not the training forward's
    assert not samples_on_policy(TransformersEngine(copy.deepcopy(policy.lm), policy.pad_token_id), learner)
    # a bf16 copy refreshed from the trained module at every call (rollout.sampler_dtype): its current weights
    assert samples_on_policy(TransformersEngine(policy.lm, policy.pad_token_id, sample_dtype=torch.bfloat16), learner)
    assert not samples_on_policy(object(), learner)

"""`model.gradient_checkpointing`: the learner's policy is checkpointed when it is set; at its default it leaves the
config hash as it was before the field existed; it does not change which warm start a run uses; and a GRPO step
with it takes the gradients of the step without it (to float tolerance: the update's forward runs every row
in full instead of the shared prompt once)."""

import copy

import torch
from train_helpers import FROZENLAKE

from agentbench_af.config import config_hash, load_config, to_dict
from agentbench_af.models.checkpointing import is_checkpointing
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train.config import ModelConfig, RLConfig, TrainConfig
from agentbench_af.train.update.learner import build_learner
from agentbench_af.train.update.step import StepContext, update
from agentbench_af.train.warm.warm_start import warm_start_settings

CPU = torch.device("cpu")


def test_the_default_leaves_the_hash_and_the_warm_start_alone():
    cfg = load_config(TrainConfig, None, ["method=ppo", "credit.alpha=0.3"])
    assert config_hash(cfg) == "b66f6b990c51"  # as recorded before the field existed (test_config_fields)
    on = load_config(TrainConfig, None, ["method=ppo", "credit.alpha=0.3", "model.gradient_checkpointing=true"])
    assert on.model.gradient_checkpointing is True and config_hash(on) != config_hash(cfg)
    assert warm_start_settings(on) == warm_start_settings(cfg)
    assert "gradient_checkpointing" not in warm_start_settings(cfg)["model"]
    assert to_dict(cfg)["model"]["gradient_checkpointing"] is False


def test_a_checkpointed_grpo_step_takes_the_gradients_of_the_plain_one(warm_start):
    plain_cfg = TrainConfig(method="grpo", rl=RLConfig(lr=1e-3, warmup_steps=0))
    gc_cfg = TrainConfig(method="grpo", rl=RLConfig(lr=1e-3, warmup_steps=0),
                         model=ModelConfig(gradient_checkpointing=True))
    plain, checkpointed = build_learner(plain_cfg, warm_start, CPU), build_learner(gc_cfg, warm_start, CPU)
    assert is_checkpointing(checkpointed.policy.lm) and not is_checkpointing(plain.policy.lm)
    engine = TransformersEngine(plain.policy.lm, plain.policy.pad_token_id)
    torch.manual_seed(0)
    trajs = collect_rollouts(engine, plain.policy.tokenizer, plain.policy.chat, FROZENLAKE, [1, 2],
                             RolloutConfig(group_size=4, max_new_tokens=32))
    batch = trajectories_to_batch(trajs, "full", plain.policy.pad_token_id)
    batch.traj_return = batch.traj_return + torch.arange(batch.batch_size, dtype=torch.float32) / 10  # every advantage != 0
    before = copy.deepcopy(dict(plain.policy.lm.named_parameters()))
    for learner, cfg in ((plain, plain_cfg), (checkpointed, gc_cfg)):
        update(learner, batch, cfg, StepContext(torch.Generator().manual_seed(0), CPU, on_policy=True))
    moved = 0
    for name, p in plain.policy.lm.named_parameters():
        q = dict(checkpointed.policy.lm.named_parameters())[name]
        # the gradients the optimizer stepped on (AdamW's first step is about lr x sign(grad), so the weights of
        # near-zero gradients are not a float-tolerance comparison)
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-7)
        moved += int(not torch.equal(p, before[name]))
    assert moved > 0  # the step did change the weights

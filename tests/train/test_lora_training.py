"""`model.lora_rank` > 0 in training: the config fields (validation, the config hash and the warm-start key at
their defaults), a LoRA warm start (SFT moves the adapters only and is saved merged, as a plain model), a
LoRA RL step (the sampling model's adapters train, the KL reference is the plain warm start) and a LoRA run
whose checkpoints hold the adapters and their AdamW state while its final policy is saved plain. Resuming a
LoRA run is covered by tests/train/test_resume.py (case grpo-lora)."""

import json

import pytest
import torch
from train_helpers import FROZENLAKE, tiny_config

from agentbench_af.config import ConfigError, config_hash, load_config, to_dict
from agentbench_af.models.lora import LLAMA_TARGETS, has_lora, trainable_parameters
from agentbench_af.models.policy import build_policy
from agentbench_af.models.value import load_policy
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train import loop
from agentbench_af.train.bookkeeping.checkpoint import latest_checkpoint, load_checkpoint
from agentbench_af.train.config import ModelConfig, RLConfig, TrainConfig
from agentbench_af.train.update.learner import build_learner
from agentbench_af.train.update.loss import LossConfig
from agentbench_af.train.update.step import StepContext, update
from agentbench_af.train.warm.warm_start import prepare_warm_start, warm_start_settings

CPU = torch.device("cpu")
ADAPTERS = 2 * 7 * 2  # tiny-0.2m: 2 layers x 7 projections x (A, B)


def test_the_defaults_leave_the_hash_and_the_warm_start_key_alone():
    base = ["method=ppo", "credit.alpha=0.3"]
    cfg = load_config(TrainConfig, None, base)
    assert config_hash(cfg) == "b66f6b990c51"  # as recorded before the fields existed (test_config_fields)
    assert to_dict(cfg)["model"]["lora_targets"] == list(LLAMA_TARGETS) and cfg.model.lora_for(sft=True) is None
    unused = load_config(TrainConfig, None, [*base, "model.lora_alpha=32"])  # rank 0: alpha does nothing
    assert warm_start_settings(unused) == warm_start_settings(cfg)
    assert not any(k.startswith("lora_") for k in warm_start_settings(cfg)["model"])
    on = load_config(TrainConfig, None, [*base, "model.lora_rank=8", "model.lora_targets=[q_proj,v_proj]",
                                         "model.lora_dropout=0.1"])
    assert config_hash(on) != config_hash(cfg) and warm_start_settings(on) != warm_start_settings(cfg)
    assert warm_start_settings(on)["model"]["lora_rank"] == 8
    sft, rl = on.model.lora_for(sft=True), on.model.lora_for(sft=False)
    assert sft is not None and rl is not None
    assert (sft.rank, sft.alpha, sft.dropout, sft.targets) == (8, 16, 0.1, ("q_proj", "v_proj"))
    assert rl.dropout == 0.0  # RL's adapters have no dropout


@pytest.mark.parametrize(("override", "message"), [
    ("model.lora_rank=-1", "model.lora_rank must be >= 0, got -1"),
    ("model.lora_rank=2.5", "model.lora_rank: expected an integer, got 2.5"),
    ("model.lora_alpha=0", "model.lora_alpha must be > 0, got 0"),
    ("model.lora_dropout=1.0", r"model.lora_dropout must lie in \[0, 1\), got 1.0"),
    ("model.lora_targets=[]", "model.lora_targets must be a non-empty list"),
    ("model.lora_targets=[model.q_proj]", "model.lora_targets must be a non-empty list of module names without dots"),
])
def test_bad_lora_fields_name_the_key(override, message):
    with pytest.raises(ConfigError, match=message):
        load_config(TrainConfig, None, [override])


def test_bad_lora_fields_built_in_python_name_the_key():
    with pytest.raises(ValueError, match="model.lora_rank must be an integer"):
        ModelConfig(lora_rank=2.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="model.lora_targets must be a non-empty list"):
        ModelConfig(lora_targets="q_proj")  # type: ignore[arg-type]  # a string is not a list of names


@pytest.mark.parametrize(("override", "message"), [
    ("rollout.engine=vllm", "model.lora_rank > 0 needs rollout.engine=transformers"),
    ("run.parallel=fsdp2", "model.lora_rank > 0 is not supported with run.parallel=fsdp2"),
])
def test_lora_with_an_engine_or_sharding_that_cannot_take_it_is_refused(override, message):
    load_config(TrainConfig, None, [override])  # fine without LoRA
    with pytest.raises(ConfigError, match=message):
        load_config(TrainConfig, None, [override, "model.lora_rank=4"])


def test_a_lora_warm_start_moves_the_adapted_weights_only_and_is_saved_plain(tmp_path):
    cfg = tiny_config(tmp_path, model__lora_rank=4, model__lora_alpha=8, sft__steps=4, sft__lr=3e-3)
    warm = prepare_warm_start(cfg, tmp_path / "warm", CPU, show_progress=False)
    lm, _, _ = load_policy(warm)
    assert not has_lora(lm)
    fresh = build_policy(cfg.model.name, [FROZENLAKE], cfg.model.vocab_size, cfg.model.tokenizer_episodes,
                         cfg.warm_start_seed, env_kwargs={FROZENLAKE: cfg.env.overrides}).lm
    saved, init = lm.state_dict(), fresh.state_dict()
    assert set(saved) == set(init)  # plain parameter names: the adapters were merged
    moved = sorted(k for k in init if not torch.equal(saved[k], init[k]))
    assert moved == sorted(f"model.layers.{i}.{'self_attn' if t[0] in 'qkvo' else 'mlp'}.{t}.weight"
                           for i in range(2) for t in LLAMA_TARGETS)  # embeddings and norms stayed frozen


def _rollouts(learner):
    engine = TransformersEngine(learner.policy.lm, learner.policy.pad_token_id)
    torch.manual_seed(0)
    trajs = collect_rollouts(engine, learner.policy.tokenizer, learner.policy.chat, FROZENLAKE, [1, 2],
                             RolloutConfig(group_size=4, max_new_tokens=32))
    batch = trajectories_to_batch(trajs, "full", learner.policy.pad_token_id)
    batch.traj_return = batch.traj_return + torch.arange(batch.batch_size, dtype=torch.float32) / 10  # advantages != 0
    return batch


def test_a_lora_rl_step_trains_the_adapters_of_the_sampling_model(warm_start):
    cfg = TrainConfig(method="grpo", model=ModelConfig(lora_rank=4, lora_alpha=8), loss=LossConfig(kl_coef=0.05),
                      rl=RLConfig(lr=1e-3, warmup_steps=0))
    learner = build_learner(cfg, warm_start, CPU)
    lm = learner.policy.lm
    assert has_lora(lm) and learner.ref_lm is not None and not has_lora(learner.ref_lm)
    optimized = learner.optimizer.param_groups[0]["params"]
    assert len(optimized) == ADAPTERS and [id(p) for p in optimized] == [id(p) for p in trainable_parameters(lm)]
    ref_before = {k: v.clone() for k, v in learner.ref_lm.state_dict().items()}
    before = {k: v.clone() for k, v in lm.state_dict().items()}
    for _ in range(2):  # B moves on the first step, A on the second
        update(learner, _rollouts(learner), cfg, StepContext(torch.Generator().manual_seed(0), CPU, on_policy=True))
    after = lm.state_dict()
    moved = [k for k in before if not torch.equal(before[k], after[k])]
    assert any(".lora_A." in k for k in moved) and any(".lora_B." in k for k in moved)
    assert all(".lora_A." in k or ".lora_B." in k for k in moved)
    assert all(torch.equal(v, learner.ref_lm.state_dict()[k]) for k, v in ref_before.items())


def test_a_lora_run_checkpoints_the_adapters_and_saves_a_plain_final_policy(tmp_path, warm_start):
    cfg = tiny_config(tmp_path, model__lora_rank=4, run__init_from=str(warm_start), run__name="run",
                      rl__steps=2, run__checkpoint_every=1)
    loop.train(cfg, show_progress=False)
    state, _ = load_checkpoint(latest_checkpoint(tmp_path / "run"))
    lm_state = state.model["lm"]
    assert sum(".lora_A." in k or ".lora_B." in k for k in lm_state) == ADAPTERS
    assert len(state.optimizer["state"]) == ADAPTERS  # AdamW moments of the adapters only
    final, _, _ = load_policy(tmp_path / "run" / "final_policy")
    warm, _, _ = load_policy(warm_start)
    record = json.loads((tmp_path / "run" / "record.json").read_text())
    assert record["model_params"] == sum(p.numel() for p in warm.parameters())  # the model's size, adapters aside
    assert not has_lora(final) and set(final.state_dict()) == set(warm.state_dict())
    assert torch.equal(final.model.embed_tokens.weight, warm.model.embed_tokens.weight)
    assert not torch.equal(final.model.layers[0].self_attn.q_proj.weight, warm.model.layers[0].self_attn.q_proj.weight)

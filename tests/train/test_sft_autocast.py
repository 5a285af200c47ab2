"""SFT forwards under the run's autocast dtype (`model.dtype`), as RL's: bf16 forwards, fp32 weights and steps."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from train_helpers import sampled_batch, tiny_config

from agentbench_af.models.policy import Policy, build_policy
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.device import autocast_dtype
from agentbench_af.train.warm import sft as sft_module
from agentbench_af.train.warm.sft import sft_step
from agentbench_af.train.warm.warm_start import warm_start_settings

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def batch(warm_start):
    return sampled_batch(warm_start)[1]


def _with_dtype(dtype: str) -> TrainConfig:
    plain = TrainConfig()
    return dataclasses.replace(plain, model=dataclasses.replace(plain.model, dtype=dtype))


def test_the_autocast_dtype_follows_model_dtype():
    assert autocast_dtype(_with_dtype("auto"), CPU) is None
    assert autocast_dtype(_with_dtype("float32"), CPU) is None
    assert autocast_dtype(_with_dtype("bfloat16"), CPU) is torch.bfloat16
    assert autocast_dtype(_with_dtype("auto"), torch.device("cuda")) is torch.bfloat16
    assert autocast_dtype(_with_dtype("float32"), torch.device("cuda")) is None


def _step(warm_start, batch, autocast, micro_rows=0):
    policy = Policy.load(warm_start)
    params = list(policy.lm.parameters())
    before = [p.detach().clone() for p in params]
    seen: list[torch.dtype] = []
    hook = policy.lm.get_output_embeddings().register_forward_hook(lambda m, i, out: seen.append(out.dtype))
    policy.lm.train()
    loss = sft_step(policy.lm, params, torch.optim.SGD(params, lr=1.0), batch, micro_rows, autocast)
    hook.remove()
    step = torch.cat([(p.detach() - q).reshape(-1) for p, q in zip(params, before, strict=True)])
    return step, loss, seen, {p.dtype for p in params}


def test_a_bf16_sft_step_runs_its_forwards_in_bf16_and_keeps_fp32_weights(warm_start, batch):
    fp32_step, fp32_loss, fp32_seen, _ = _step(warm_start, batch, None)
    bf16_step, bf16_loss, bf16_seen, dtypes = _step(warm_start, batch, torch.bfloat16)
    assert set(fp32_seen) == {torch.float32} and set(bf16_seen) == {torch.bfloat16}
    assert dtypes == {torch.float32}  # master weights stay fp32
    # bf16 keeps 8 bits of mantissa: the loss agrees to about 1 %, the step points the same way
    assert bf16_loss == pytest.approx(fp32_loss, rel=2e-2)
    assert not torch.equal(bf16_step, fp32_step)
    cosine = torch.nn.functional.cosine_similarity(bf16_step, fp32_step, dim=0)
    assert cosine > 0.95, float(cosine)


def test_bf16_micro_batches_run_in_bf16(warm_start, batch):
    _, _, seen, _ = _step(warm_start, batch, torch.bfloat16, micro_rows=1)
    assert len(seen) == batch.batch_size and set(seen) == {torch.bfloat16}


def test_the_warm_start_passes_the_runs_autocast_to_every_step(tmp_path, monkeypatch):
    seen = []
    real = sft_module.sft_step

    def spy(*args, **kwargs):
        seen.append(args[5] if len(args) > 5 else kwargs.get("autocast"))
        return real(*args, **kwargs)

    monkeypatch.setattr(sft_module, "sft_step", spy)
    for dtype, want in (("auto", None), ("bfloat16", torch.bfloat16)):
        seen.clear()
        cfg = tiny_config(tmp_path / dtype, model__dtype=dtype)
        policy = build_policy(cfg.model.name, [cfg.env.id], cfg.model.vocab_size, cfg.model.tokenizer_episodes, 0)
        sft_module.sft_warm_start(policy.lm, policy.tokenizer, policy.chat, cfg, CPU)
        assert seen == [want] * cfg.sft.steps


def test_model_dtype_keys_the_warm_start():
    # a bf16 SFT is another warm start: model.dtype is in its key (it always was)
    assert warm_start_settings(_with_dtype("bfloat16")) != warm_start_settings(_with_dtype("auto"))

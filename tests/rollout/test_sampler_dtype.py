"""`rollout.sampler_dtype`: the transformers engine samples from a bf16 copy of the policy that follows the
trained model (refreshed at every call), keeps RoPE's frequencies and tied weights, records log-probs close to
the fp32 model's, and leaves the warm-start evaluation keys of fp32 runs as they were."""

import pytest
import torch

from agentbench_af.config import ConfigError, load_config
from agentbench_af.rollout.engine import TransformersEngine, build_engine
from agentbench_af.rollout.types import RolloutConfig, SamplingParams
from agentbench_af.sweep.spec import warm_start_key
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.warm.warm_eval import warm_eval_key
from agentbench_af.train.warm.warm_start import settings_key, warm_start_settings

PROMPTS = [[5, 6, 7, 8, 9, 10]] * 3 + [[5, 6, 7, 11]] * 3


def test_values_are_checked():
    assert RolloutConfig().sampler_dtype == "float32"
    assert load_config(TrainConfig, None, ["rollout.sampler_dtype=bfloat16"]).rollout.sampler_dtype == "bfloat16"
    with pytest.raises(ConfigError, match="rollout.sampler_dtype: 'float16' is not one of"):
        load_config(TrainConfig, None, ["rollout.sampler_dtype=float16"])
    with pytest.raises(ValueError, match="set model.dtype=bfloat16 instead"):
        RolloutConfig(engine="vllm", sampler_dtype="bfloat16")


def test_the_default_samples_from_the_model_itself(frozenlake_policy):
    engine = build_engine(RolloutConfig(), frozenlake_policy.lm, frozenlake_policy.pad_token_id)
    assert engine.sampler is frozenlake_policy.lm


def test_the_bf16_copy_casts_parameters_only(frozenlake_policy):
    lm = frozenlake_policy.lm
    engine = build_engine(RolloutConfig(sampler_dtype="bfloat16"), lm, frozenlake_policy.pad_token_id)
    copy = engine.sampler
    assert copy is not lm and all(p.dtype == torch.bfloat16 and not p.requires_grad for p in copy.parameters())
    assert copy.model.rotary_emb.inv_freq.dtype == torch.float32  # positions need fp32 frequencies
    assert copy.lm_head.weight is copy.model.embed_tokens.weight  # tied as in the model
    assert all(p.dtype == torch.float32 and p.requires_grad for p in lm.parameters())  # the model is untouched


def test_the_copy_follows_the_model_at_every_call(policy_for):
    policy = policy_for("FrozenLake-4x4-v0")  # its own policy: this test changes a weight
    engine = TransformersEngine(policy.lm, policy.pad_token_id, sample_dtype=torch.bfloat16)
    weight = policy.lm.model.norm.weight  # (H,)
    with torch.no_grad():
        weight[0] = 1.0 + 2.0**-7  # representable in bf16 (7 explicit mantissa bits)
        weight[1] = 1.0 + 2.0**-9  # rounds to 1.0 in bf16
        weight[2] = 3.0
    engine.generate(PROMPTS[:1], SamplingParams(temperature=0.0, max_new_tokens=2), [1])
    copied = engine.sampler.model.norm.weight[:3].float().tolist()
    assert copied == [1.0078125, 1.0, 3.0]


@pytest.mark.parametrize("static", [True, False], ids=["own-loop", "generate"])
def test_bf16_log_probs_are_close_to_the_fp32_models(frozenlake_policy, static):
    lm = frozenlake_policy.lm
    engine = TransformersEngine(lm, frozenlake_policy.pad_token_id, static_cache=static, sample_dtype=torch.bfloat16)
    torch.manual_seed(0)
    gens = engine.generate(PROMPTS, SamplingParams(temperature=1.0, max_new_tokens=6), [1], cache_keys=list(range(6)))
    # a second turn reuses the stored bf16 prefixes
    more = engine.generate([p + g.token_ids for p, g in zip(PROMPTS, gens, strict=True)],
                           SamplingParams(temperature=1.0, max_new_tokens=3), [1], cache_keys=list(range(6)))
    for prompt, gen in zip(PROMPTS, gens, strict=True):
        ids = torch.tensor([prompt + gen.token_ids])  # (1, T)
        with torch.no_grad():
            logp = torch.log_softmax(lm(input_ids=ids).logits[0].float(), -1)  # (T, V)
        n = len(prompt)
        fp32 = logp[n - 1 : n - 1 + len(gen.token_ids)].gather(-1, torch.tensor(gen.token_ids)[:, None]).squeeze(-1)
        assert torch.allclose(torch.tensor(gen.logprobs), fp32, atol=0.1)
    assert all(len(g.token_ids) >= 1 for g in more)


def test_fp32_runs_keep_their_keys_and_a_bf16_sampler_shares_the_warm_start():
    # the keys TrainConfig() had before the field existed: fp32 runs find their stored warm starts and evaluations
    default, bf16 = TrainConfig(), load_config(TrainConfig, None, ["rollout.sampler_dtype=bfloat16"])
    assert warm_eval_key(default, "None") == "6fe430b791cf7415"
    assert warm_start_key(default) == "FrozenLake-4x4-v0-tiny-0.2m-s0-76eff859"
    assert settings_key(warm_start_settings(default)) == "009d0721318b"
    # SFT never samples: the same warm start; its step-0 evaluation, played by the bf16 copy, is its own
    assert warm_start_key(bf16) == warm_start_key(default)
    assert settings_key(warm_start_settings(bf16)) == settings_key(warm_start_settings(default))
    assert warm_eval_key(bf16, "None") != "6fe430b791cf7415"

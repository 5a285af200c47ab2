"""The training config's fields: `Literal` choices checked once (by `_coerce`, also for configs built in
Python) with a message naming the key and the allowed values; `credit.estimator` / `credit.weighting`
derived from `method` on read; one documentation style (`#:` above each field) shown by
`agentbench-af config --explain`."""

import dataclasses
import inspect
import pickle

import pytest
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.config import ConfigError, config_hash, field_docs, load_config
from agentbench_af.credit.config import CreditConfig
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train.config import (
    DiagnosticConfig,
    EnvConfig,
    EvalConfig,
    ModelConfig,
    RLConfig,
    RunConfig,
    SFTConfig,
    TrainConfig,
)
from agentbench_af.train.update.loss import LossConfig

CHOICES = [
    ("rl.critic", RLConfig, "critic", "['detached', 'shared', 'separate']"),
    ("sft.schedule", SFTConfig, "schedule", "['constant', 'cosine']"),
    ("run.parallel", RunConfig, "parallel", "['ddp', 'fsdp2']"),
    ("model.dtype", ModelConfig, "dtype", "['auto', 'float32', 'bfloat16']"),
    ("credit.scope", CreditConfig, "scope", "['trajectory', 'turn']"),
    ("credit.energy_source", CreditConfig, "energy_source", "['old', 'ref', 'entropy']"),
    ("credit.format_role", CreditConfig, "format_role", "['reasoning', 'action']"),
    ("rollout.context_mode", RolloutConfig, "context_mode", "['full', 'window']"),
    ("rollout.engine", RolloutConfig, "engine", "['transformers', 'vllm']"),
    ("loss.agg", LossConfig, "agg", "['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum']"),
]


@pytest.mark.parametrize(("key", "cls", "name", "allowed"), CHOICES, ids=[c[0] for c in CHOICES])
def test_a_bad_choice_names_the_key_and_the_choices(key, cls, name, allowed):
    expected = f"{key}: 'bogus' is not one of {allowed}"
    with pytest.raises(ConfigError) as from_yaml:
        load_config(TrainConfig, None, [f"{key}=bogus"])
    assert str(from_yaml.value) == expected
    with pytest.raises(ConfigError) as in_python:  # the same check when the config is built in Python
        cls(**{name: "bogus"})
    assert str(in_python.value) == expected


def test_estimator_and_weighting_are_derived_from_the_method():
    cfg = TrainConfig(method="ppo+actfocus", credit=CreditConfig(alpha=0.3))
    assert (cfg.credit.estimator, cfg.credit.weighting, cfg.credit.alpha) == ("gae", "actfocus", 0.3)
    assert TrainConfig(method="ppo").credit == CreditConfig(estimator="gae")
    assert dataclasses.replace(cfg, rl=RLConfig(steps=3)).credit == cfg.credit
    assert pickle.loads(pickle.dumps(cfg)) == cfg and pickle.loads(pickle.dumps(cfg)).credit.estimator == "gae"
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.credit = CreditConfig()  # type: ignore[misc]
    with pytest.raises(ValueError, match="credit.weighting is 'top-entropy' but method 'grpo'"):
        TrainConfig(method="grpo", credit=CreditConfig(weighting="top-entropy"))
    # the hashes (and so the run names and warm-start keys) recorded before the change
    assert config_hash(load_config(TrainConfig, None, ["method=ppo", "credit.alpha=0.3"])) == "b66f6b990c51"
    assert config_hash(load_config(TrainConfig, None, ["method=grpo+actfocus", "credit.alpha=0.3"])) == "639b24bd7484"


DOCUMENTED = (TrainConfig, EnvConfig, ModelConfig, SFTConfig, RLConfig, EvalConfig, RunConfig, DiagnosticConfig,
              CreditConfig, RolloutConfig, LossConfig)


@pytest.mark.parametrize("cls", DOCUMENTED, ids=[c.__name__ for c in DOCUMENTED])
def test_every_field_has_one_doc_comment_above_it(cls):
    docs = field_docs(cls)
    assert [f.name for f in dataclasses.fields(cls) if not docs.get(f.name)] == []
    names = {f.name for f in dataclasses.fields(cls)}
    trailing = [line.strip() for line in inspect.getsourcelines(cls)[0]
                if line.strip().split(":")[0] in names and "#" in line]
    assert trailing == []  # no second style (a trailing comment) beside the `#:` lines


def test_config_explain_prints_type_default_and_doc():
    runner = CliRunner()
    res = runner.invoke(app, ["config", "rl", "--explain"])
    assert res.exit_code == 0, res.output
    assert "rl.lr: float = 0.0001\n    the policy's peak learning rate\n" in res.output
    assert "rl.critic: 'detached' | 'shared' | 'separate' = \"detached\"" in res.output
    assert "credit." not in res.output
    res = runner.invoke(app, ["config", "credit.alpha"])
    assert res.exit_code == 0 and res.output.strip() == "credit.alpha: 0.1"
    res = runner.invoke(app, ["config", "rl.bogus", "--explain"])
    assert res.exit_code == 2 and "no config section or field 'rl.bogus'" in res.output

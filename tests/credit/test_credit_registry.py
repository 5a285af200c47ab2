"""CreditConfig validation, the registries and the dispatchers."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from batch_factory import SampleSpec, build_batch

from agentbench_af.config import ConfigError, from_dict
from agentbench_af.credit import (
    ADVANTAGE_ESTIMATORS,
    TOKEN_WEIGHTINGS,
    AdvantageOutput,
    CreditConfig,
    Needs,
    compute_advantages,
    compute_token_weights,
    credit_needs,
    method_names,
    register_advantage,
    register_weighting,
)


def _builtin(table: dict) -> set[str]:
    """Names registered by this package (installed plugins may add others)."""
    return {name for name, spec in table.items() if spec.fn.__module__.startswith("agentbench_af.credit.")}


def test_builtins_are_registered():
    assert _builtin(ADVANTAGE_ESTIMATORS) == {"grpo", "rloo", "gae", "gigpo-step", "empg"}
    assert _builtin(TOKEN_WEIGHTINGS) == {
        "uniform",
        "actfocus",
        "actfocus-entropy",
        "actfocus-reasoning-only",
        "action-only",
        "top-entropy",
        "steer",
        "ar",
        "stapo",
        "aepo",
        "carl",
        "gtpo",
        "grpo-s",
    }


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (
            {"estimator": "ppo2"},
            "unknown advantage estimator 'ppo2'; registered: empg, gae, gigpo-step, grpo, rloo",
        ),
        (
            {"weighting": "focus"},
            "unknown token weighting 'focus'; registered: actfocus, actfocus-entropy, actfocus-reasoning-only",
        ),
        ({"gamma": 1.5}, "credit.gamma must be in"),
        ({"gae_lambda": -0.1}, "credit.gae_lambda must be in"),
        ({"alpha": -1.0}, "credit.alpha"),
        ({"energy_lambda": -0.5}, "credit.energy_lambda"),
        ({"tau": 0.0}, "credit.tau"),
        ({"w_max": 0.0}, "credit.w_max"),
        ({"scope": "episode"}, "credit.scope"),
        ({"energy_source": "new"}, "credit.energy_source"),
        ({"format_role": "prompt"}, "credit.format_role"),
        ({"top_entropy_fraction": 0.0}, "credit.top_entropy_fraction"),
        ({"gigpo_step_weight": float("nan")}, "credit.gigpo_step_weight must be a finite number"),
        ({"preserve_mass": 1}, "credit.preserve_mass"),
        ({"gae_whiten": "yes"}, "credit.gae_whiten"),
    ],
)
def test_config_rejects_bad_values_in_one_line(kwargs, match):
    with pytest.raises(ValueError, match=match) as info:
        CreditConfig(**kwargs)
    assert "\n" not in str(info.value)


def test_config_loads_from_a_mapping_and_is_frozen():
    cfg = from_dict(CreditConfig, {"weighting": "actfocus", "alpha": 0, "scope": "turn"})
    assert cfg.alpha == 0.0 and cfg.scope == "turn"
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.alpha = 1.0  # type: ignore[misc]
    with pytest.raises(ConfigError, match="scope"):
        from_dict(CreditConfig, {"scope": "episode"})


def tiny_batch():
    return build_batch([SampleSpec(0, "pra", logprobs=[0, -1, -2]), SampleSpec(1, "pa")], [0, 0], [1.0, 0.0])


def test_dispatcher_rejects_names_removed_after_validation():
    @register_advantage("test-temporary")
    def temporary(batch, cfg):  # pragma: no cover - never called
        raise AssertionError

    cfg = CreditConfig(estimator="test-temporary")
    del ADVANTAGE_ESTIMATORS["test-temporary"]
    with pytest.raises(
        ValueError, match="unknown advantage estimator 'test-temporary'; registered: empg, gae, gigpo-step"
    ):
        compute_advantages(tiny_batch(), cfg)


def test_a_new_method_is_one_registered_function():
    @register_weighting("test-double")
    def double(batch, cfg):
        return 2.0 * torch.ones(batch.response_mask.shape)  # deliberately ignores the mask

    @register_advantage("test-ones")
    def ones(batch, cfg):
        return AdvantageOutput(torch.ones(batch.response_mask.shape))

    try:
        batch = tiny_batch()
        cfg = CreditConfig(estimator="test-ones", weighting="test-double")
        w = compute_token_weights(batch, cfg)
        assert w.tolist() == [[0, 2, 2, 0], [0, 2, 0, 0]]  # the dispatcher zeroes outside the mask
        assert compute_advantages(batch, cfg).advantages.tolist() == [[0, 1, 1, 0], [0, 1, 0, 0]]
        with pytest.raises(ValueError, match="already registered"):
            register_weighting("test-double")(lambda batch, cfg: None)
    finally:
        TOKEN_WEIGHTINGS.pop("test-double", None)
        ADVANTAGE_ESTIMATORS.pop("test-ones", None)


def test_dispatcher_checks_the_output_shape():
    @register_weighting("test-bad-shape")
    def bad(batch, cfg):
        return torch.ones(3)

    try:
        with pytest.raises(ValueError, match="returned shape"):
            compute_token_weights(tiny_batch(), CreditConfig(weighting="test-bad-shape"))
    finally:
        TOKEN_WEIGHTINGS.pop("test-bad-shape", None)


def test_builtins_declare_what_they_need():
    assert credit_needs(CreditConfig(estimator="gae")) == Needs(critic=True)
    assert credit_needs(CreditConfig(estimator="gigpo-step")) == Needs(step_groups=True, groups=True)
    assert credit_needs(CreditConfig(estimator="grpo")) == Needs(groups=True)
    assert credit_needs(CreditConfig(estimator="rloo")) == Needs(groups=True)
    ppo = CreditConfig(estimator="gae")
    assert credit_needs(dataclasses.replace(ppo, weighting="actfocus", energy_source="ref")) == Needs(True, True)
    assert credit_needs(dataclasses.replace(ppo, weighting="actfocus", energy_source="ref", energy_lambda=0.0)) \
        == Needs(critic=True)
    assert credit_needs(dataclasses.replace(ppo, weighting="actfocus-reasoning-only", energy_source="ref")) \
        == Needs(critic=True)
    assert method_names()[:4] == ["ppo", "grpo", "rloo", "gigpo"]  # the tables' row order


def test_a_new_estimator_declares_its_needs_and_method_name():
    from agentbench_af.train.config import TrainConfig

    @register_advantage("test-critic-est", method="testcritic", needs=Needs(critic=True, reference=True))
    def est(batch, cfg):
        return AdvantageOutput(torch.ones(batch.response_mask.shape))

    try:
        cfg = TrainConfig(method="testcritic+actfocus")
        assert (cfg.credit.estimator, cfg.credit.weighting) == ("test-critic-est", "actfocus")
        assert cfg.needs_value_head and cfg.needs_reference_model
        assert "testcritic" in method_names()
        batch = tiny_batch()
        batch.values = None
        with pytest.raises(ValueError, match="'test-critic-est' declares it needs a critic, but batch.values is None"):
            compute_advantages(batch, cfg.credit)
        with pytest.raises(ValueError, match="method 'testcritic' already names"):
            register_advantage("test-other", method="testcritic")(est)
    finally:
        ADVANTAGE_ESTIMATORS.pop("test-critic-est", None)


def test_registry_does_not_import_the_config():
    """credit/config.py reads the registry; the registry never imports the config (no cycle)."""
    import ast
    from pathlib import Path

    import agentbench_af.credit.registry as registry

    tree = ast.parse(Path(registry.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not any(m and m.startswith("agentbench_af.credit") for m in imported)

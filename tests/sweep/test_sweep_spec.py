"""Sweep spec loading and grid expansion."""

from pathlib import Path

import pytest
import yaml

from agentbench_af.config import ConfigError, config_hash, from_dict, to_dict
from agentbench_af.sweep import SweepSpec, expand, load_sweep_spec


def _spec(tmp_path, base, **kw) -> SweepSpec:
    return from_dict(SweepSpec, {"base": base, "out_dir": str(tmp_path / "sw"), **kw})


def test_grid_expands_in_order_with_deterministic_names(tmp_path, tiny_base):
    spec = _spec(tmp_path, tiny_base, grid={"envs": ["FrozenLake-4x4-v0", "FrozenLake-6x6-v0"],
                                            "methods": ["grpo", "ppo+actfocus"], "seeds": [0, 1]})
    cfgs = expand(spec)
    assert [(c.env.id, c.method, c.run.seed) for c in cfgs][:4] == [
        ("FrozenLake-4x4-v0", "grpo", 0), ("FrozenLake-4x4-v0", "grpo", 1),
        ("FrozenLake-4x4-v0", "ppo+actfocus", 0), ("FrozenLake-4x4-v0", "ppo+actfocus", 1)]
    assert len(cfgs) == 8
    assert cfgs[0].run.name == "FrozenLake-4x4-v0-grpo-tiny-0.2m-s0"
    assert all(c.run.out_dir == str((tmp_path / "sw" / "runs").resolve()) for c in cfgs)
    assert all(c.run.threads == 1 and c.run.init_from is None for c in cfgs)
    assert cfgs[2].credit.weighting == "actfocus" and cfgs[2].credit.estimator == "gae"
    assert expand(spec) == cfgs  # deterministic


def test_overrides_then_per_env_and_empty_axes_keep_base(tmp_path, tiny_base):
    spec = _spec(tmp_path, tiny_base, grid={"envs": ["FrozenLake-4x4-v0", "FrozenLake-6x6-v0"]},
                 overrides=["rl.steps=3", "rl.lr=0.0002"], per_env={"FrozenLake-6x6-v0": ["rl.steps=7"]},
                 threads_per_run=2)
    a, b = expand(spec)
    assert (a.rl.steps, b.rl.steps) == (3, 7)
    assert a.rl.lr == b.rl.lr == 2e-4
    assert a.method == "grpo" and a.run.seed == 0 and a.model.name == "tiny-0.2m"
    assert a.run.threads == 2


def test_model_axis_tiny_name_or_path(tmp_path, tiny_base):
    spec = _spec(tmp_path, tiny_base, grid={"models": ["tiny-0.7m", "/models/Qwen2.5-0.5B"]})
    tiny, hf = expand(spec)
    assert tiny.model.name == "tiny-0.7m" and tiny.model.path is None
    assert hf.model.path == "/models/Qwen2.5-0.5B" and hf.run_name == "FrozenLake-4x4-v0-grpo-Qwen2.5-0.5B-s0"


def test_shared_warm_start_paths_and_hash_ignores_them(tmp_path, tiny_base):
    spec = _spec(tmp_path, tiny_base, grid={"methods": ["grpo", "rloo"], "seeds": [0, 1]}, warm_start="shared")
    cfgs = expand(spec)
    ws = (tmp_path / "sw" / "warm_starts").resolve()
    starts = [Path(c.run.init_from) for c in cfgs]
    assert all(p.parent == ws for p in starts)
    assert [p.name.rsplit("-", 1)[0] for p in starts] == ["FrozenLake-4x4-v0-tiny-0.2m-s0",
                                                          "FrozenLake-4x4-v0-tiny-0.2m-s1"] * 2
    assert starts[:2] == starts[2:]  # both methods of a seed branch from one warm start
    # seed replicates must share the config hash although their warm-start paths differ
    assert config_hash(cfgs[0]) == config_hash(cfgs[1]) != config_hash(cfgs[2])


def test_a_fixed_sft_seed_shares_one_warm_start_across_seeds(tmp_path, tiny_base):
    spec = _spec(tmp_path, tiny_base, grid={"methods": ["grpo", "rloo"], "seeds": [0, 1]}, warm_start="shared",
                 overrides=["sft.seed=7"])
    cfgs = expand(spec)
    assert len({c.run.init_from for c in cfgs}) == 1
    assert Path(cfgs[0].run.init_from).name.startswith("FrozenLake-4x4-v0-tiny-0.2m-s7-")
    assert [c.warm_start_seed for c in cfgs] == [7] * 4 and [c.run.seed for c in cfgs] == [0, 1, 0, 1]
    unset = expand(_spec(tmp_path, tiny_base, grid={"seeds": [1]}))[0]
    assert unset.warm_start_seed == 1 and "seed" not in to_dict(unset)["sft"]  # hashes of older configs unchanged


def test_base_path_relative_to_spec_file(tmp_path, tiny_base):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "base.yaml").write_text(yaml.safe_dump(tiny_base))
    (tmp_path / "conf" / "spec.yaml").write_text(yaml.safe_dump(
        {"base": "base.yaml", "grid": {"seeds": [3]}, "out_dir": str(tmp_path / "o")}))
    (cfg,) = expand(load_sweep_spec(tmp_path / "conf" / "spec.yaml"))
    assert cfg.sft.steps == 2 and cfg.run.seed == 3
    assert Path(load_sweep_spec(tmp_path / "conf" / "spec.yaml").base).is_absolute()


@pytest.mark.parametrize(
    "data, message",
    [
        ({"grid": {"seedz": [1]}}, "did you mean 'seeds'"),
        ({"grid": {"seeds": [1, 1]}}, "repeated value"),
        ({"grid": {"envs": ["FrozenLake-4x4-v0"]}, "per_env": {"Sokoban-x": ["rl.steps=1"]}}, "not in grid.envs"),
        ({"per_env": {"FrozenLake-4x4-v0": "rl.steps=1"}}, "list of key=value"),
        ({"warm_start": "sometimes"}, "not one of"),
        ({"threads_per_run": 0}, "threads_per_run"),
    ],
)
def test_bad_specs_are_one_line_errors(tmp_path, data, message):
    with pytest.raises(ConfigError, match=message):
        from_dict(SweepSpec, data)


def test_bad_values_in_grid_fail_before_any_run(tmp_path, tiny_base):
    with pytest.raises(ConfigError, match="method"):
        expand(_spec(tmp_path, tiny_base, grid={"methods": ["grpo+nothing"]}))
    with pytest.raises(ConfigError, match="base config not found"):
        expand(_spec(tmp_path, str(tmp_path / "missing.yaml")))
    with pytest.raises(ConfigError, match="conflicts with run.init_from"):
        expand(_spec(tmp_path, {**tiny_base, "run": {"init_from": "x"}}, warm_start="shared"))
    with pytest.raises(ConfigError, match="sweep spec not found"):
        load_sweep_spec(tmp_path / "nope.yaml")


def test_warm_start_key_changes_with_sft_not_with_rl(tiny_base):
    from agentbench_af.config import from_dict
    from agentbench_af.sweep.spec import warm_start_key
    from agentbench_af.train.config import TrainConfig
    from agentbench_af.train.warm.warm_start import settings_key, warm_start_settings

    base = from_dict(TrainConfig, tiny_base)
    same = from_dict(TrainConfig, {**tiny_base, "rl": {**tiny_base["rl"], "steps": 7}, "method": "ppo+actfocus"})
    other = from_dict(TrainConfig, {**tiny_base, "sft": {**tiny_base["sft"], "steps": 9}})
    fmt = from_dict(TrainConfig, {**tiny_base, "credit": {**tiny_base.get("credit", {}), "format_role": "action"}})
    assert warm_start_key(base) == warm_start_key(same) == warm_start_key(fmt)  # SFT ignores token roles
    assert warm_start_key(base) != warm_start_key(other)
    dapo = from_dict(TrainConfig, {**tiny_base, "rollout": {**tiny_base.get("rollout", {}), "dynamic_sampling": True,
                                                            "dynamic_sampling_max_rounds": 5}})
    assert warm_start_key(dapo) == warm_start_key(base)  # SFT never samples
    assert settings_key(warm_start_settings(dapo)) == settings_key(warm_start_settings(base))
    assert warm_start_key(base).startswith("FrozenLake-4x4-v0-tiny-0.2m-s0-")


def test_per_env_models_give_an_environment_its_own_model_axis(tmp_path, tiny_base):
    spec = _spec(tmp_path, tiny_base, grid={"envs": ["FrozenLake-4x4-v0", "FrozenLake-6x6-v0"],
                                            "models": ["tiny-0.12m", "tiny-0.2m"], "seeds": [0]},
                 per_env_models={"FrozenLake-6x6-v0": ["tiny-0.7m"]})
    assert [(c.env.id, c.model.name) for c in expand(spec)] == [
        ("FrozenLake-4x4-v0", "tiny-0.12m"), ("FrozenLake-4x4-v0", "tiny-0.2m"), ("FrozenLake-6x6-v0", "tiny-0.7m")]
    with pytest.raises(ConfigError, match=r"per_env_models: \['FrozenLake-8x8-v0'\] not in grid.envs"):
        _spec(tmp_path, tiny_base, grid={"envs": ["FrozenLake-4x4-v0"]}, per_env_models={"FrozenLake-8x8-v0": ["tiny-2m"]})
    with pytest.raises(ConfigError, match="per_env_models.FrozenLake-4x4-v0: expected distinct model names"):
        _spec(tmp_path, tiny_base, grid={"envs": ["FrozenLake-4x4-v0"]}, per_env_models={"FrozenLake-4x4-v0": []})


def test_per_method_overrides_and_variants_axis(tmp_path, tiny_base):
    spec = _spec(tmp_path, tiny_base, grid={"methods": ["grpo", "grpo+actfocus"], "seeds": [0]},
                 overrides=["rl.lr=0.0002"], per_method={"grpo+actfocus": ["rl.lr=0.0004"]})
    grpo, focus = expand(spec)
    assert (grpo.rl.lr, focus.rl.lr) == (2e-4, 4e-4)  # per_method wins over overrides
    swept = _spec(tmp_path, tiny_base, grid={"methods": ["grpo"], "seeds": [0, 1]}, per_method={"grpo": ["rl.lr=0.0003"]},
                  variants={"lr1e-4": ["rl.lr=0.0001"], "lr4e-4": ["rl.lr=0.0004"]})
    cfgs = expand(swept)
    # order env, model, method, variant, seed; the variant's overrides come last; names carry the variant
    assert [(c.rl.lr, c.run.seed, c.run.name) for c in cfgs] == [
        (1e-4, 0, "FrozenLake-4x4-v0-grpo-tiny-0.2m-s0-lr1e-4"), (1e-4, 1, "FrozenLake-4x4-v0-grpo-tiny-0.2m-s1-lr1e-4"),
        (4e-4, 0, "FrozenLake-4x4-v0-grpo-tiny-0.2m-s0-lr4e-4"), (4e-4, 1, "FrozenLake-4x4-v0-grpo-tiny-0.2m-s1-lr4e-4")]
    assert config_hash(cfgs[0]) == config_hash(cfgs[1]) != config_hash(cfgs[2])
    with pytest.raises(ConfigError, match=r"per_method: \['ppo'\] not in grid.methods"):
        _spec(tmp_path, tiny_base, grid={"methods": ["grpo"]}, per_method={"ppo": ["rl.lr=1"]})
    with pytest.raises(ConfigError, match="variants.a: expected a list"):
        _spec(tmp_path, tiny_base, variants={"a": "rl.lr=1"})


def test_grid_methods_may_be_labels_with_their_update_rule(tmp_path, tiny_base):
    spec = _spec(tmp_path, tiny_base, grid={"methods": ["grpo", "grpo@gspo", "grpo+ar@lopti"], "seeds": [0]},
                 per_method={"grpo@gspo": ["loss.clip_eps_low=0.0003"]})
    plain, gspo, ar = expand(spec)
    assert (plain.method, plain.loss.policy, plain.method_label) == ("grpo", "ppo-clip", "grpo")
    assert (gspo.method, gspo.loss.policy, gspo.loss.clip_eps_low) == ("grpo", "gspo", 0.0003)
    assert (ar.method, ar.rl.token_passes, ar.credit.weighting) == ("grpo+ar", "lopti", "ar")
    assert [c.run.name for c in (plain, gspo, ar)] == [
        "FrozenLake-4x4-v0-grpo-tiny-0.2m-s0", "FrozenLake-4x4-v0-grpo@gspo-tiny-0.2m-s0",
        "FrozenLake-4x4-v0-grpo+ar@lopti-tiny-0.2m-s0"]
    with pytest.raises(ConfigError, match="unknown policy loss|not registered|policy"):
        expand(_spec(tmp_path, tiny_base, grid={"methods": ["grpo@no-such-loss"]}))

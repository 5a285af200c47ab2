"""Every field with a range is checked before any work: a bad value is one line naming the key, exit 2, and
no files; GRPO-family estimators need groups of at least 2; `sweep --dry-run` checks every cell."""

import pytest
import yaml
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.config import load_config
from agentbench_af.train.config import TrainConfig

runner = CliRunner()
TINY = ["model.tokenizer_episodes=10", "sft.steps=2", "sft.batch_size=8", "sft.episodes=10", "rl.steps=2",
        "rl.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=48", "eval.episodes=2",
        "run.threads=1", "run.device=cpu", "run.name=run"]

BAD = [
    (["rollout.temperature=-1"], "rollout.temperature"),
    (["rollout.temperature=0"], "rollout.temperature"),
    (["rollout.temperature=.nan"], "rollout.temperature"),
    (["rollout.top_p=2"], "rollout.top_p"),
    (["rollout.top_p=0"], "rollout.top_p"),
    (["rollout.max_new_tokens=0"], "rollout.max_new_tokens"),
    (["rollout.max_context_tokens=40"], "rollout.max_context_tokens"),
    (["rollout.max_batch_size=0"], "rollout.max_batch_size"),
    (["rollout.group_size=0"], "rollout.group_size"),
    (["rollout.window_turns=0"], "rollout.window_turns"),
    (["method=grpo", "rollout.group_size=1"], "rollout.group_size must be >= 2 for grpo"),
    (["method=rloo+actfocus", "rollout.group_size=1"], "rollout.group_size must be >= 2 for rloo"),
    (["method=gigpo", "rollout.group_size=1"], "rollout.group_size must be >= 2 for gigpo-step"),
    (["rl.minibatches=5"], "rl.minibatches"),
    (["rl.weight_decay=.nan"], "rl.weight_decay"),
    (["eval.temperature=-0.5"], "eval.temperature"),
    (["sft.lr=-1"], "sft.lr"),
]


def _one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    return lines[0]


@pytest.mark.parametrize(("overrides", "named"), BAD, ids=[" ".join(b[0]) for b in BAD])
def test_a_value_out_of_range_is_one_line_before_any_work(tmp_path, overrides, named):
    out = tmp_path / "out"
    res = runner.invoke(app, ["train", *TINY, f"run.out_dir={out}", *overrides, "--quiet"])
    assert res.exit_code == 2, res.output
    assert named in _one_error_line(res.output)
    assert not out.exists()


def test_group_estimators_need_groups_but_ppo_does_not():
    cfg = load_config(TrainConfig, None, ["method=ppo", "rollout.group_size=1", "rl.prompts_per_step=4"])
    assert cfg.rollout.group_size == 1 and cfg.credit.estimator == "gae"
    assert load_config(TrainConfig, None, ["method=grpo", "rollout.group_size=2"]).rollout.group_size == 2


def _spec(tmp_path, **extra) -> str:
    spec = {"base": {"sft": {"steps": 2}, "rl": {"steps": 1, "prompts_per_step": 2}, "rollout": {"group_size": 2},
                     "eval": {"episodes": 2}, "env": {"id": "FrozenLake-4x4-v0"}},
            "grid": {"envs": ["FrozenLake-4x4-v0", "Nope-v9"], "methods": ["grpo"]},
            "out_dir": str(tmp_path / "sweep"), **extra}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def test_sweep_dry_run_checks_every_cell(tmp_path):
    res = runner.invoke(app, ["sweep", _spec(tmp_path), "--dry-run"])
    assert res.exit_code == 2, res.output
    line = _one_error_line(res.output)
    assert "Nope-v9-grpo" in line and "env:" in line
    res = runner.invoke(app, ["sweep", _spec(tmp_path, grid={"envs": ["FrozenLake-4x4-v0"], "methods": ["ppo", "grpo"]},
                                             overrides=["rollout.group_size=1"]), "--dry-run"])
    assert res.exit_code == 2 and "rollout.group_size must be >= 2 for grpo" in _one_error_line(res.output)
    res = runner.invoke(app, ["sweep", _spec(tmp_path, grid={"envs": ["FrozenLake-4x4-v0"]}), "--dry-run"])
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "sweep").exists()

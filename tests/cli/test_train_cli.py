"""`train` and `eval` on the command line: config errors are one line (exit 2) before any work; a tiny
run, its evaluation, and a killed run continued with `--resume`."""

import json
import shutil

import pytest
import torch
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.io import read_jsonl
from agentbench_af.train import loop

torch.set_num_threads(1)
runner = CliRunner()
TINY = [
    "model.tokenizer_episodes=10", "sft.steps=2", "sft.batch_size=8", "sft.episodes=10", "rl.steps=2",
    "rl.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=48", "eval.episodes=2",
    "run.threads=1", "run.device=cpu", "run.name=run",
]

BAD = [
    ("rl.stepz=3", "'rl.stepz'"),
    ("rl.steps=abc", "rl.steps"),
    ("method=foo", "method 'foo'"),
    ("method=grpo+nope", "weighting"),
    ("env.id=Nope-v0", "Nope-v0"),
    ("env.overrides={max_turnz: 3}", "max_turnz"),
    ("loss.clip_eps_low=2", "loss.clip_eps_low"),
    ("credit.alpha=-1", "credit.alpha"),
    ("rollout.context_mode=partial", "rollout.context_mode"),
    ("model.name=tiny-99m", "model.name"),
    ("model.path=/no/such/model", "model.path"),
    ("eval.episodes=100000", "eval.episodes"),
    ("eval.every=0", "eval.every"),
    ("run.checkpoint_every=0", "run.checkpoint_every"),
    ("rl.prompts_per_step=0", "rl.prompts_per_step"),
    ("rl.critic=joint", "rl.critic"),
    ("run.init_from=/no/such/dir", "run.init_from"),
    ("rl=3", "rl: expected a mapping"),
    ("no_such_config.yaml", "no_such_config.yaml"),
]
if not torch.cuda.is_available():
    BAD.append(("run.device=cuda", "run.device"))


def _train(out, *args):
    return runner.invoke(app, ["train", *TINY, f"run.out_dir={out}", *args, "--quiet"])


def _error_line(res) -> str:
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1, res.output
    assert lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.parametrize(("override", "named"), BAD, ids=[b[0] for b in BAD])
def test_bad_config_is_one_line_before_any_work(tmp_path, override, named):
    out = tmp_path / "out"
    args = [override] if override.endswith(".yaml") else [*TINY, f"run.out_dir={out}", override]
    res = runner.invoke(app, ["train", *args, "--quiet"])
    assert res.exit_code == 2, res.output
    assert named in _error_line(res)
    assert not out.exists()


def test_bad_key_in_a_yaml_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("rl:\n  steps: 2\n  stepz: 3\n")
    res = runner.invoke(app, ["train", str(path), f"run.out_dir={tmp_path / 'out'}"])
    assert res.exit_code == 2 and "rl.stepz" in _error_line(res)
    path.write_text("rl: [1, 2\n")
    res = runner.invoke(app, ["train", str(path)])
    assert res.exit_code == 2 and "not valid YAML" in _error_line(res)


def test_a_recipe_file_is_merged_and_checked_like_the_config(tmp_path):
    base, recipe = tmp_path / "c.yaml", tmp_path / "r.yaml"
    base.write_text("rl:\n  steps: 2\n")
    recipe.write_text("rollout:\n  dynamic_sampling: true\n  group_size: 1\n")
    # the recipe's group of one meets the base's grpo: refused before any work, naming the recipe's key
    res = runner.invoke(app, ["train", str(base), str(recipe), f"run.out_dir={tmp_path / 'out'}"])
    assert res.exit_code == 2 and "rollout.group_size" in _error_line(res)
    res = runner.invoke(app, ["train", str(base), str(tmp_path / "missing.yaml")])
    assert res.exit_code == 2 and "missing.yaml" in _error_line(res)
    assert not (tmp_path / "out").exists()


def test_train_then_eval(tmp_path):
    res = _train(tmp_path)
    assert res.exit_code == 0, res.output
    run_dir = tmp_path / "run"
    record = json.loads((run_dir / "record.json").read_text())
    assert "final-step success" in res.output and record["status"] == "completed"
    res = runner.invoke(app, ["eval", str(run_dir), "--json", "--episodes", "3"])
    assert res.exit_code == 0, res.output
    result = json.loads(res.output)
    assert result["episodes"] == 3 and 0 <= result["success"] <= 1 and set(result) >= {"valid_rate", "mean_reward"}
    res = runner.invoke(app, ["eval", str(run_dir)])
    assert res.exit_code == 0 and "success" in res.output and "over 2 episodes" in res.output
    res = runner.invoke(app, ["eval", str(tmp_path)])
    assert res.exit_code == 2 and "not a run directory" in _error_line(res)
    res = runner.invoke(app, ["eval", str(run_dir), "--json", "--episodes", "3", "--policy", "warm_start", "--reasons"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    counted = out["invalid_turns"]  # the same turns as the rates above
    assert counted["turns"] == round(3 * out["mean_turns"]) > 0
    assert counted["invalid"] == sum(counted["by_reason"].values()) == round(counted["turns"] * (1 - out["valid_rate"]))
    res = runner.invoke(app, ["eval", str(run_dir), "--episodes", "3", "--reasons"])
    assert res.exit_code == 0 and "(final_policy)" in res.output and "invalid turns:" in res.output
    res = runner.invoke(app, ["eval", str(run_dir), "--episodes", "3", "--reasons", "--rollout", "max_new_tokens=2",
                              "--json"])
    assert res.exit_code == 0, res.output
    short = json.loads(res.output)  # every response is cut at 2 tokens: none holds an answer
    assert short["rollout_settings"] == ["max_new_tokens=2"] and short["valid_rate"] == 0
    assert short["invalid_turns"]["at_limit"] == short["invalid_turns"]["turns"] > 0
    res = runner.invoke(app, ["eval", str(run_dir), "--rollout", "max_new_tokens=oops"])
    assert res.exit_code == 2 and "--rollout: max_new_tokens: expected an integer" in _error_line(res)
    res = runner.invoke(app, ["eval", str(run_dir), "--rollout", "no_such_key=1"])
    assert res.exit_code == 2 and "no_such_key" in _error_line(res)
    res = runner.invoke(app, ["eval", str(run_dir), "--policy", "best"])
    assert res.exit_code == 2 and "--policy must be final_policy or warm_start" in _error_line(res)
    res = _train(tmp_path)  # the same run again: refused, nothing overwritten
    assert res.exit_code == 2 and "already holds a finished run" in _error_line(res)


def test_resume_continues_a_killed_run(tmp_path, monkeypatch):
    real, calls = loop.collect_rollouts, []

    def dies_on_step_2(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "collect_rollouts", dies_on_step_2)
    res = _train(tmp_path, "run.checkpoint_every=1")
    assert res.exit_code != 0 and not (tmp_path / "run" / "record.json").exists()
    monkeypatch.setattr(loop, "collect_rollouts", real)
    res = _train(tmp_path, "run.checkpoint_every=1")
    assert res.exit_code == 2 and "--resume" in _error_line(res)
    res = _train(tmp_path, "run.checkpoint_every=1", "rl.lr=0.5", "--resume")
    assert res.exit_code == 2 and "different config" in _error_line(res)
    res = _train(tmp_path, "run.checkpoint_every=1", "--resume")
    assert res.exit_code == 0, res.output
    assert [r["step"] for r in read_jsonl(tmp_path / "run" / "metrics.jsonl")] == [0, 1, 2]
    record = json.loads((tmp_path / "run" / "record.json").read_text())
    res = _train(tmp_path, "run.checkpoint_every=1", "--resume")  # resuming a finished run changes nothing
    assert res.exit_code == 0, res.output
    again = json.loads((tmp_path / "run" / "record.json").read_text())
    assert again["final_metrics"] == record["final_metrics"] and again["curve"] == record["curve"]


def test_eval_of_a_branched_runs_warm_start_reads_its_init_from(tiny_run, tmp_path):
    run = tmp_path / "branched"  # the run's config alone: its warm start lives at run.init_from
    run.mkdir()
    shutil.copy(tiny_run / "config.yaml", run / "config.yaml")
    res = runner.invoke(app, ["eval", str(run), "--policy", "warm_start", "--episodes", "2", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["episodes"] == 2
    res = runner.invoke(app, ["eval", str(run), "--episodes", "2"])
    assert res.exit_code == 2 and "has no final_policy" in _error_line(res)
    (run / "config.yaml").write_text((run / "config.yaml").read_text().replace("init_from: ", "init_from: /nope"))
    res = runner.invoke(app, ["eval", str(run), "--policy", "warm_start"])
    assert res.exit_code == 2 and "nor its run.init_from /nope" in _error_line(res)

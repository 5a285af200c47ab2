"""`agentbench-af sweep`: dry run, a run on the serial backend (patched train), errors."""

import yaml
from typer.testing import CliRunner

from agentbench_af.cli import app

runner = CliRunner()


def _write_spec(tmp_path, base, **kw):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"base": base, "out_dir": str(tmp_path / "sw"),
                                    "grid": {"methods": ["grpo", "ppo"], "seeds": [0]}, **kw}))
    return path


def test_dry_run_lists_runs_and_skips(tmp_path, tiny_base, fake_train):
    spec = _write_spec(tmp_path, tiny_base)
    res = runner.invoke(app, ["sweep", str(spec), "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "FrozenLake-4x4-v0-grpo-tiny-0.2m-s0" in res.output and "FrozenLake-4x4-v0-ppo-tiny-0.2m-s0" in res.output
    assert "2 runs: 2 to run, 0 finished (skipped)" in res.output
    assert fake_train == [] and not (tmp_path / "sw").exists()

    res = runner.invoke(app, ["sweep", str(spec), "--backend", "serial", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "2 runs: 2 completed, 0 skipped, 0 failed" in res.output and len(fake_train) == 2

    res = runner.invoke(app, ["sweep", str(spec), "--dry-run"])
    assert res.output.count("skip (finished)") == 2 and "0 to run, 2 finished (skipped)" in res.output


def test_failed_runs_give_exit_code_1(tmp_path, tiny_base, monkeypatch):
    from agentbench_af.train import loop

    def boom(cfg, resume=False, show_progress=True):
        raise RuntimeError("env exploded")

    monkeypatch.setattr(loop, "train", boom)
    res = runner.invoke(app, ["sweep", str(_write_spec(tmp_path, tiny_base)), "--backend", "serial", "--quiet"])
    assert res.exit_code == 1
    assert "0 completed, 0 skipped, 2 failed" in res.output and "RuntimeError: env exploded" in res.output


def test_bad_input_is_a_one_line_error(tmp_path, tiny_base):
    res = runner.invoke(app, ["sweep", str(tmp_path / "missing.yaml")])
    assert res.exit_code == 2 and "sweep spec not found" in res.output
    res = runner.invoke(app, ["sweep", str(_write_spec(tmp_path, tiny_base, grid={"seedz": [0]}))])
    assert res.exit_code == 2 and "did you mean 'seeds'" in res.output
    res = runner.invoke(app, ["sweep", str(_write_spec(tmp_path, tiny_base)), "--backend", "slurm"])
    assert res.exit_code == 2 and "--backend must be" in res.output

"""One run folder, one run: a second process is refused (naming the holder's pid, exit 2), a folder refuses
a config other than the one it was started with, and default run names differ when configs differ."""

import os
import time

import pytest
from reliability_helpers import assert_parameters_changed, cli, run_config, run_overrides
from train_helpers import tiny_config
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.io import read_jsonl
from agentbench_af.train import loop

runner = CliRunner()


def _one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    return lines[0]


def test_a_second_process_on_the_same_run_folder_is_refused(tmp_path, warm_start):
    args = ["train", *run_overrides(tmp_path, warm_start, rl__steps=6), "--quiet"]
    first = cli(args)
    started = tmp_path / "run" / "metrics.jsonl"  # the first run is past its warm start
    deadline = time.time() + 120
    while first.poll() is None and time.time() < deadline and not started.exists():
        time.sleep(0.05)
    assert first.poll() is None, f"the first run ended too soon: {first.stderr.read()[-2000:]}"
    second = runner.invoke(app, args)  # same folder, same config: a second writer
    assert second.exit_code == 2, second.output
    line = _one_error_line(second.output)
    assert f"pid {first.pid}" in line and "in use by another run" in line
    assert first.wait(timeout=300) == 0, first.stderr.read()[-2000:]
    steps = [r["step"] for r in read_jsonl(tmp_path / "run" / "metrics.jsonl")]
    assert steps == [0, 1, 2, 3, 4, 5, 6]  # every step logged once, by the one writer
    assert_parameters_changed(tmp_path / "run" / "final_policy", warm_start)


def test_a_run_folder_refuses_another_config_unless_overwritten(tmp_path, warm_start, monkeypatch):
    real = loop.collect_rollouts

    def dies(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(loop, "collect_rollouts", dies)
    with pytest.raises(KeyboardInterrupt):  # killed before its first checkpoint: config.yaml, no checkpoint
        loop.train(run_config(tmp_path, warm_start), show_progress=False)
    monkeypatch.setattr(loop, "collect_rollouts", real)
    other = run_config(tmp_path, warm_start, rl__lr=2e-4)
    for resume in (False, True):
        with pytest.raises(FileExistsError, match="different config"):
            loop.train(other, resume=resume, show_progress=False)
    res = runner.invoke(app, ["train", *run_overrides(tmp_path, warm_start, rl__lr=2e-4), "--quiet"])
    assert res.exit_code == 2 and "--overwrite" in _one_error_line(res.output)
    record = loop.train(other, overwrite=True, show_progress=False)
    assert record.config["rl"]["lr"] == 2e-4
    rows = read_jsonl(tmp_path / "run" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4]
    assert all(r["lr"] <= 2e-4 for r in rows[1:])  # only the second config's steps
    assert_parameters_changed(tmp_path / "run" / "final_policy", warm_start)


def test_default_run_names_differ_when_configs_differ(tmp_path):
    a = tiny_config(tmp_path)
    assert a.run_name.startswith("FrozenLake-4x4-v0-grpo-tiny-0.2m-s0-")
    assert tiny_config(tmp_path / "elsewhere").run_name == a.run_name  # same config: same name
    assert tiny_config(tmp_path, rl__lr=2e-4).run_name != a.run_name
    assert tiny_config(tmp_path, sft__steps=3).run_name != a.run_name
    assert tiny_config(tmp_path, run__seed=1).run_name != a.run_name
    assert tiny_config(tmp_path, run__name="mine").run_name == "mine"


def test_a_sweep_task_on_a_busy_folder_fails_without_writing_into_it(tmp_path, warm_start):
    from agentbench_af.sweep.tasks import Task, execute
    from agentbench_af.train.bookkeeping.run_folder import RunLock

    cfg = run_config(tmp_path, warm_start)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    lock = RunLock(run_dir)
    lock.acquire()  # another run holds the folder
    try:
        result = execute(Task("run", "run", cfg, str(run_dir)))
    finally:
        lock.release()
    assert result.status == "failed" and f"pid {os.getpid()}" in result.error
    assert sorted(p.name for p in run_dir.iterdir()) == [".lock"]  # no failure record in someone else's folder


def test_resuming_from_a_checkpoint_without_a_scheduler_is_refused(tmp_path):
    from agentbench_af.train.bookkeeping.checkpoint import TrainState, save_checkpoint
    from agentbench_af.train.bookkeeping.run_folder import restore_latest

    assert restore_latest(tmp_path, learner=None) is None  # no checkpoint: nothing to restore
    save_checkpoint(tmp_path, TrainState(3, {}, {}, None, {}))  # what an SFT checkpoint looks like
    with pytest.raises(ValueError, match="no learning-rate scheduler state"):
        restore_latest(tmp_path, learner=None)  # refused before the learner is touched

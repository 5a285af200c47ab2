"""A local sweep survives a worker killed with SIGKILL: the tasks of the dead pool are resubmitted on a
fresh pool (up to `max_retries`), finished results are kept, and each result counts its retries. First
with sleeping tasks (the pool alone), then a real two-run sweep whose worker is killed mid-run."""

import json
import os
import signal
import threading
import time

import pytest
import yaml
from reliability_helpers import assert_parameters_changed, cli
from worker_tasks import attempts, sleepy

from agentbench_af.io import read_jsonl
from agentbench_af.sweep import local
from agentbench_af.sweep.local import PoolBackend
from agentbench_af.sweep.tasks import Task
from agentbench_af.train.config import TrainConfig


def _kill_first_victim(task_dir, deadline_s=120.0) -> threading.Thread:
    def kill():
        deadline = time.time() + deadline_s
        while time.time() < deadline:
            pids = attempts(task_dir, "victim")
            if pids and attempts(task_dir, "healthy"):  # both workers busy
                os.kill(pids[0], signal.SIGKILL)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=kill, daemon=True)
    thread.start()
    return thread


def _tasks(task_dir) -> list[Task]:
    cfg = TrainConfig()
    return [Task("run", name, cfg, str(task_dir)) for name in ("quick", "victim", "healthy", "queued")]


def _sweep(task_dir, monkeypatch, **retries):
    monkeypatch.setattr(local, "execute", sleepy)  # what pool workers run (spawned workers import it by name)
    killer = _kill_first_victim(task_dir)
    with PoolBackend(workers=2, threads=1, **retries) as pool:
        results = {r.name: r for r in pool.run(_tasks(task_dir))}
    killer.join(timeout=1)
    return results


def test_a_killed_worker_costs_a_retry_not_the_sweep(tmp_path, monkeypatch):
    results = _sweep(tmp_path, monkeypatch)  # the default: 2 retries
    assert {name: r.status for name, r in results.items()} == dict.fromkeys(("quick", "victim", "healthy", "queued"),
                                                                             "completed")
    assert results["victim"].retries == 1 and len(attempts(tmp_path, "victim")) == 2
    assert results["healthy"].retries == 1  # it was on the dead pool too; it ran again on the fresh one
    assert results["quick"].retries == 0 and len(attempts(tmp_path, "quick")) == 1  # finished before: kept


def test_without_retries_the_dead_pool_s_tasks_fail_with_the_reason(tmp_path, monkeypatch):
    results = _sweep(tmp_path, monkeypatch, max_retries=0)
    assert results["quick"].status == "completed"
    assert results["victim"].status == "failed" and "worker process died" in results["victim"].error
    assert "gave up after 0 retries" in results["victim"].error


@pytest.mark.slow  # two spawned pools and two real runs: about 2 minutes on a busy 2-core machine
def test_a_real_sweep_completes_after_a_worker_is_killed_mid_run(tmp_path, warm_start):
    base = {"env": {"id": "FrozenLake-4x4-v0"}, "model": {"tokenizer_episodes": 10},
            "sft": {"steps": 2, "batch_size": 8, "episodes": 10},
            "rl": {"steps": 4, "prompts_per_step": 2, "warmup_steps": 1, "lr": 1e-3},
            "rollout": {"group_size": 4, "max_new_tokens": 48}, "eval": {"episodes": 4, "every": 2},
            "credit": {"energy_source": "entropy"},
            "run": {"init_from": str(warm_start), "checkpoint_every": 2, "device": "cpu"}}
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"base": base, "grid": {"methods": ["grpo", "grpo+actfocus"]},
                                    "out_dir": str(tmp_path / "sweep")}))
    sweep = cli(["sweep", str(spec), "--workers", "2", "--quiet"])
    victim = tmp_path / "sweep" / "runs" / "FrozenLake-4x4-v0-grpo-tiny-0.2m-s0"
    deadline, killed = time.time() + 240, None
    while sweep.poll() is None and time.time() < deadline and killed is None:
        if len(read_jsonl(victim / "metrics.jsonl")) >= 2:  # step 1 done: mid-run
            killed = int((victim / ".lock").read_text())
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    assert killed is not None, f"the run was not seen mid-run: {sweep.stderr.read()[-2000:] if sweep.poll() else ''}"
    out, err = sweep.communicate(timeout=600)
    assert sweep.returncode == 0, err[-3000:]
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("FrozenLake")}
    assert rows[victim.name][1] == "completed" and rows[victim.name][3] == "1", out  # status, final success, retries
    assert "retried after a worker died" in out
    for run_dir in (tmp_path / "sweep" / "runs").iterdir():
        assert json.loads((run_dir / "record.json").read_text())["status"] == "completed"
        assert [r["step"] for r in read_jsonl(run_dir / "metrics.jsonl")] == [0, 1, 2, 3, 4]
        assert_parameters_changed(run_dir / "final_policy", warm_start)

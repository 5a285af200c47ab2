"""A local sweep survives a worker killed with SIGKILL: the tasks of the dead pool are resubmitted on a
fresh pool (up to `max_retries`), finished results are kept, and each result counts its retries."""

import os
import signal
import threading
import time

from worker_tasks import attempts, sleepy

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

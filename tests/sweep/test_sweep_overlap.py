"""Runs start as soon as their own warm start is ready, on the real process pool (fake training).

Spawned pool workers do not see the test's monkeypatches, so the pool is given `overlapping_execute`
(a module-level function it can pickle) in place of `execute`; it patches `loop` inside the worker.
"""

import os
import time
from pathlib import Path

from sweep_helpers import fake_record

from agentbench_af.config import from_dict
from agentbench_af.sweep import SweepSpec, expand, local, run_sweep
from agentbench_af.sweep.local import PoolBackend
from agentbench_af.sweep.tasks import Task, TaskResult, execute

WAIT_S = 120.0  # how long the slow warm start waits for the other warm start's run to start


def _event(cfg, name: str) -> Path:
    return Path(cfg.run.out_dir).parent / "events" / name


def _note(cfg, name: str) -> None:
    path = _event(cfg, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(repr(time.time()))


def _prepare(cfg, out_dir, device, show_progress=True):
    _note(cfg, f"warm-s{cfg.run.seed}.start")
    if cfg.run.seed == 1:  # the slow warm start: busy until the seed-0 warm start's run has started
        deadline = time.time() + WAIT_S
        while not _event(cfg, "run-s0.start").exists() and time.time() < deadline:
            time.sleep(0.05)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "policy.json").write_text("{}")
    _note(cfg, f"warm-s{cfg.run.seed}.end")
    return out_dir


def _train(cfg, resume=False, show_progress=True):
    assert (Path(cfg.run.init_from) / "policy.json").exists()  # its own warm start is ready
    _note(cfg, f"run-s{cfg.run.seed}.start")
    return fake_record(cfg)


def overlapping_execute(task: Task) -> TaskResult:
    """`execute` with fake warm starts and training; runs in a spawned pool worker."""
    from agentbench_af.train import loop

    loop.prepare_warm_start, loop.train = _prepare, _train
    return execute(task)


def dying_execute(task: Task) -> TaskResult:
    """The worker process dies on the task named "die"; every other task completes."""
    if task.name == "die":
        os._exit(1)
    return TaskResult(task.kind, task.name, "completed")


def test_a_run_starts_before_an_unrelated_slower_warm_start_ends(tmp_path, tiny_base, monkeypatch):
    monkeypatch.setattr(local, "execute", overlapping_execute)
    spec = from_dict(SweepSpec, {"base": tiny_base, "out_dir": str(tmp_path / "sw"), "warm_start": "shared",
                                 "grid": {"methods": ["grpo"], "seeds": [0, 1]}})
    out = run_sweep(spec, backend="local", workers=2, show_progress=False)
    assert [o.status for o in out] == ["completed", "completed"], [o.error for o in out]
    events = tmp_path / "sw" / "events"
    at = {path.name: float(path.read_text()) for path in events.iterdir()}
    # warm start s1 does not finish before run s0 has started (or WAIT_S ran out: the old two stages)
    assert at["run-s0.start"] < at["warm-s1.end"], "run s0 waited for the unrelated warm start s1"
    assert at["warm-s1.end"] - at["warm-s1.start"] < WAIT_S
    assert at["run-s1.start"] > at["warm-s1.end"]  # a run still waits for its own warm start


def test_follow_ups_after_a_dead_worker_get_a_fresh_pool(tmp_path, tiny_base, monkeypatch):
    monkeypatch.setattr(local, "execute", dying_execute)
    (cfg,) = expand(from_dict(SweepSpec, {"base": tiny_base, "out_dir": str(tmp_path / "sw")}))
    tasks = [Task("warm_start", "die", cfg, str(tmp_path)), Task("run", "queued", cfg, str(tmp_path))]

    def then(result: TaskResult) -> list[Task]:
        return [Task("run", "after", cfg, str(tmp_path))] if result.name == "die" else []

    with PoolBackend(workers=1, threads=1, max_retries=0) as pool:  # no retries: the break itself is seen
        results = {r.name: r for r in pool.run(tasks, then=then)}
    assert set(results) == {"die", "queued", "after"}
    assert results["die"].status == "failed" and results["die"].error.startswith("worker process died")
    assert results["queued"].status == "failed"  # it was queued in the broken pool
    assert results["after"].status == "completed"  # submitted after the break: a fresh pool ran it

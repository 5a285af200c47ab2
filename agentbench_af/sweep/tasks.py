"""One unit of sweep work (a shared warm start or a training run) and the function workers execute.

`execute(task)` never raises for a failing run: it writes a failed `record.json` (error in one line)
and `error.txt` (the traceback) into the run directory and returns a failed `TaskResult`, so the
other runs go on. It is a module-level function so process pools and Ray can pickle it.
A run whose folder another process holds (`RunFolderBusy`) fails without writing into that folder.
Left out: retrying a run that failed by itself (a re-run of the sweep retries it, from its checkpoint);
the backends retry tasks whose worker process died.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentbench_af.train.config import TrainConfig


@dataclass(frozen=True)
class Task:
    kind: Literal["warm_start", "run"]
    name: str  # run name, or warm-start directory name
    cfg: TrainConfig
    path: str  # run directory, or warm-start directory
    threads: int = 1


@dataclass(frozen=True)
class TaskResult:
    kind: str
    name: str
    status: Literal["completed", "failed"]
    final_success: float | None = None
    error: str | None = None
    wall_time_s: float = 0.0
    retries: int = 0  # times the task was resubmitted because its worker process died


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def set_threads(threads: int) -> None:
    """Pin torch (and OpenMP libraries loaded later) to `threads` threads in this process."""
    import torch

    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["MKL_NUM_THREADS"] = str(threads)
    torch.set_num_threads(threads)


def write_failure(cfg: TrainConfig, run_dir: str | Path, error: str, trace: str, wall_time_s: float = 0.0) -> None:
    """A failed run's `record.json` (final_success None) and `error.txt` (the traceback)."""
    from agentbench_af.config import config_hash, to_dict
    from agentbench_af.io import atomic_write_text
    from agentbench_af.results.fingerprint import environment_fingerprint
    from agentbench_af.results.record import RunRecord, git_commit, package_versions

    run_dir = Path(run_dir)
    atomic_write_text(run_dir / "error.txt", f"{error}\n\n{trace}")
    RunRecord(
        env_id=cfg.env.id, method=cfg.method, model=cfg.model.path or cfg.model.name, model_params=0,
        seed=cfg.run.seed, config_hash=config_hash(cfg), config=to_dict(cfg), protocol={},
        final_success=None, wall_time_s=wall_time_s, status="failed", error=error,
        git_commit=git_commit(), versions=package_versions(), fingerprint=environment_fingerprint(cfg.run.device),
    ).save(run_dir)


def clear_failure(run_dir: str | Path) -> None:
    """Remove a previous failure's record and error file before retrying the run."""
    for name in ("record.json", "error.txt"):
        (Path(run_dir) / name).unlink(missing_ok=True)


def execute(task: Task) -> TaskResult:
    """Run one task in this process; failures are recorded, not raised (KeyboardInterrupt still is)."""
    from agentbench_af.train import loop  # looked up at call time so tests can patch loop.train
    from agentbench_af.train.bookkeeping.run_folder import RunFolderBusy

    start = time.time()
    set_threads(task.threads)
    try:
        from agentbench_af.plugins import import_modules

        import_modules(task.cfg.imports)  # a fresh worker (spawned process, Ray) has not imported them yet
        if task.kind == "warm_start":
            device, _ = loop.resolve_device(task.cfg)
            loop.prepare_warm_start(task.cfg, Path(task.path), device, show_progress=False)
            return TaskResult(task.kind, task.name, "completed", wall_time_s=time.time() - start)
        clear_failure(task.path)
        record = loop.train(task.cfg, resume=True, show_progress=False)
        return TaskResult(task.kind, task.name, "completed", record.final_success, wall_time_s=time.time() - start)
    except RunFolderBusy as exc:  # another process owns the folder: write nothing into it
        return TaskResult(task.kind, task.name, "failed", error=str(exc), wall_time_s=time.time() - start)
    except Exception as exc:  # noqa: BLE001 - a failing run must not stop the sweep
        error, trace = one_line(exc), traceback.format_exc()
        elapsed = time.time() - start
        try:
            if task.kind == "run":
                write_failure(task.cfg, task.path, error, trace, elapsed)
            else:
                from agentbench_af.io import atomic_write_text

                atomic_write_text(Path(task.path).with_name(task.name + ".error.txt"), f"{error}\n\n{trace}")
        except OSError:
            pass  # the result still carries the error
        return TaskResult(task.kind, task.name, "failed", error=error, wall_time_s=elapsed)

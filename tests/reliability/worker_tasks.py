"""Task functions for pool workers in the sweep-retry tests (a module, so spawned workers can import it).

Each call appends the worker's pid to `<task.path>/<task.name>.attempts`; on its first attempt, `victim`
sleeps until the test kills its worker, `healthy` sleeps long enough to still be running then."""

from __future__ import annotations

import os
import time
from pathlib import Path

from agentbench_af.sweep.tasks import Task, TaskResult

FIRST_ATTEMPT_SLEEP = {"victim": 120.0, "healthy": 4.0}


def attempts(task_dir: Path, name: str) -> list[int]:
    path = Path(task_dir) / f"{name}.attempts"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def sleepy(task: Task) -> TaskResult:
    path = Path(task.path) / f"{task.name}.attempts"
    first = not path.exists()
    with open(path, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    time.sleep(FIRST_ATTEMPT_SLEEP.get(task.name, 0.2) if first else 0.2)
    return TaskResult(task.kind, task.name, "completed", final_success=1.0)

"""Local backends: a spawn-context process pool sized to the machine, and an in-process serial loop.

Each pool worker pins torch to `threads` threads (FINDINGS: oversubscribed OpenMP on 2 cores is
catastrophically slow), so the pool has `cores // threads` workers. One pool serves warm starts and
runs, so workers import torch once. `run(tasks, then=...)` submits the follow-up tasks `then(result)`
returns as soon as a result arrives (a run once its warm start is ready), behind the tasks already
queued. A worker that dies (killed, out of memory) breaks the pool, and every task that was on it (the
dead worker's, the other workers', the queued ones) comes back as `BrokenProcessPool`: each is resubmitted
on a fresh pool, once the old pool's workers have all exited (so their run-folder locks are free), up to
`max_retries` times per task, like Ray's `max_retries` for tasks whose worker died. A resubmitted run
resumes from its last checkpoint; finished results are kept; each result counts its retries. A task
that runs out of retries comes back failed with the reason. A sweep stopped by Ctrl-C or SIGTERM
(`stop_on_sigterm`) terminates its workers at once instead of leaving them running; their runs resume
from their last checkpoints on the next sweep. Left out: telling the worker that died from the ones
the pool took down with it (all are retried alike).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import replace

from agentbench_af.sweep.tasks import Task, TaskResult, execute, one_line, set_threads

FollowUps = Callable[[TaskResult], list[Task]]  # tasks to submit when a result arrives


def available_cores() -> int:
    """CPUs this process may run on (the affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def default_workers(threads_per_run: int) -> int:
    return max(1, available_cores() // max(1, threads_per_run))


def _init_worker(threads: int) -> None:
    set_threads(threads)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


@contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """Within the block, SIGTERM raises SystemExit(143) in the main thread, so `with` blocks clean up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _exit(signum, frame):
        sys.exit(128 + signum)

    previous = signal.signal(signal.SIGTERM, _exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class SerialBackend:
    """Run tasks one after another in this process, first in first out (debugging, tests, one core)."""

    def __enter__(self) -> SerialBackend:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def run(self, tasks: list[Task], then: FollowUps | None = None) -> Iterator[TaskResult]:
        queue = deque(tasks)
        while queue:
            result = execute(queue.popleft())
            if then is not None:
                queue.extend(then(result))
            yield result


class PoolBackend:
    """A spawn-context process pool shared by the sweep's tasks; `run` yields results as they complete.

    `function` is what workers call on each task (default `execute`, looked up when a task is submitted; a
    module-level function, so it pickles)."""

    def __init__(self, workers: int, threads: int, max_retries: int = 2,
                 function: Callable[[Task], TaskResult] | None = None) -> None:
        self.workers, self.threads, self.max_retries, self.function = max(1, workers), threads, max_retries, function
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> PoolBackend:
        return self

    def __exit__(self, exc_type=None, *rest) -> None:
        if self._pool is not None:
            if exc_type is not None:  # interrupted: stop the workers now rather than wait for their runs
                for process in list((getattr(self._pool, "_processes", None) or {}).values()):
                    process.terminate()
            self._pool.shutdown(wait=True, cancel_futures=True)  # waits until every worker has exited
            self._pool = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is not None and getattr(self._pool, "_broken", False):
            self.__exit__()  # a broken pool takes no more work: wait for its workers, then start afresh
        if self._pool is None:  # started lazily: a sweep with nothing to do spawns nothing
            ctx = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=ctx, initializer=_init_worker,
                                             initargs=(self.threads,))
        return self._pool

    def _submit(self, pending: dict[Future, Task], task: Task) -> None:
        try:
            future = self._executor().submit(self.function or execute, task)
        except BrokenProcessPool:  # the pool broke since the check: start a fresh one
            self.__exit__()
            future = self._executor().submit(self.function or execute, task)
        pending[future] = task

    def run(self, tasks: list[Task], then: FollowUps | None = None) -> Iterator[TaskResult]:
        """Yield results as they complete; `then(result)`'s tasks are submitted before the result is yielded."""
        if not tasks:
            return
        pending: dict[Future, Task] = {}
        retries: dict[tuple[str, str], int] = {}
        try:
            for task in tasks:
                self._submit(pending, task)
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    task = pending.pop(future)
                    key = (task.kind, task.name)
                    try:
                        result = future.result()
                    except (BrokenProcessPool, CancelledError) as exc:  # a worker died and took the pool down
                        if retries.get(key, 0) < self.max_retries:
                            retries[key] = retries.get(key, 0) + 1
                            self._submit(pending, task)
                            continue
                        result = TaskResult(task.kind, task.name, "failed", error=f"worker process died "
                                            f"({one_line(exc)}); gave up after {retries.get(key, 0)} retries")
                    except Exception as exc:  # noqa: BLE001 - the task could not be run at all
                        result = TaskResult(task.kind, task.name, "failed", error=f"worker error ({one_line(exc)})")
                    result = replace(result, retries=retries.get(key, 0))
                    for follow_up in then(result) if then is not None else []:
                        self._submit(pending, follow_up)
                    yield result
        finally:
            for future in pending:
                future.cancel()
        if isinstance(self._pool, ProcessPoolExecutor) and getattr(self._pool, "_broken", False):
            self.__exit__()  # a broken pool takes no more work; the next `run` starts a fresh one

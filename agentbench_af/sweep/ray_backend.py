"""Ray backend: one remote task per run, reserving `threads` CPUs (and `gpus` GPUs) each.

Joins the cluster at `address` (`--address`: `auto` for the cluster `ray start` made on this machine,
or `HOST:PORT` of its head), else at `RAY_ADDRESS` when it is set, else starts a local cluster with
`ray.init(num_cpus=...)` and shuts it down afterwards. On a cluster, run directories must be on a
filesystem every node sees, and `gpus` (`gpus_per_run`) is a Ray resource: a run waits for a node with
that many free GPUs, and Ray sets its CUDA_VISIBLE_DEVICES.
Follow-up tasks (`run(tasks, then=...)`: a run once its warm start is ready) are submitted as soon as
the result they follow arrives. A task whose worker process died (killed, out of memory, its node
lost) is retried by Ray itself up to `max_retries` times (Ray's task option of that name; a run that
fails by itself is not, as `retry_exceptions` stays off), as the local pool does; Ray does not report
how many retries a task took, so results count none. A task out of retries comes back as a failed run,
and a re-run of the sweep retries it. Left out: runtime environments (nodes need
the package installed).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from agentbench_af.sweep.tasks import Task, TaskResult, execute, one_line


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise RuntimeError("the ray backend needs the ray extra: pip install 'agentbench-af[ray]'") from exc
    return ray


class RayBackend:
    """Connects on entry (`address`, else RAY_ADDRESS, else a local cluster of `num_cpus`); shuts down
    the connection it made."""

    def __init__(self, num_cpus: int | None = None, gpus: float = 0.0, max_retries: int = 2,
                 address: str | None = None) -> None:
        if gpus < 0:
            raise ValueError(f"GPUs per run must be >= 0, got {gpus}")
        self.num_cpus, self.gpus, self.max_retries, self.address = num_cpus, gpus, max_retries, address
        self._started = False

    def __enter__(self) -> RayBackend:
        ray = _ray()
        if not ray.is_initialized():
            address = self.address or os.environ.get("RAY_ADDRESS")
            if address:
                try:
                    ray.init(address=address, log_to_driver=False)
                except (ConnectionError, RuntimeError, ray.exceptions.RayError) as exc:
                    raise RuntimeError(f"cannot join the Ray cluster at {address}: {one_line(exc)} (start one with "
                                       "`ray start --head`, or check the address)") from exc
            else:
                ray.init(num_cpus=self.num_cpus, include_dashboard=False, log_to_driver=False)
            self._started = True
        return self

    def __exit__(self, *exc) -> None:
        if self._started:
            _ray().shutdown()
            self._started = False

    def run(self, tasks: list[Task],
            then: Callable[[TaskResult], list[Task]] | None = None) -> Iterator[TaskResult]:
        """Submit every task and yield results as they complete; `then(result)`'s tasks are submitted first."""
        if not tasks:
            return
        ray = _ray()
        remote_execute = ray.remote(execute)
        pending = {}

        def submit(task: Task) -> None:
            options = {"num_cpus": task.threads, "num_gpus": self.gpus, "max_retries": self.max_retries, "name": f"{task.kind}:{task.name}"}
            pending[remote_execute.options(**options).remote(task)] = task

        try:
            for task in tasks:
                submit(task)
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    task = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except Exception as exc:  # noqa: BLE001 - the worker died, not the run
                        result = TaskResult(task.kind, task.name, "failed", error=f"ray task died ({one_line(exc)})")
                    for follow_up in then(result) if then is not None else []:
                        submit(follow_up)
                    yield result
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)

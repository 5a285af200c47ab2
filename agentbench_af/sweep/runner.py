"""Plan and run a sweep: skip finished runs, resume half-finished ones, shared warm starts first.

`plan_sweep(spec)` looks at each run directory: `done` (record.json completed with the same config
hash: skipped), `resume` (a checkpoint of the same config), `retry` (a failed record), `new`, or
`conflict` (the directory holds another config: the sweep refuses to start rather than mix them).
`run_sweep` submits the shared warm starts first, and each run as soon as its own warm start is ready
(so no worker idles while an unrelated warm start finishes); it returns one `RunOutcome` per run in grid
order. Left out: cross-run scheduling priorities (ready runs go in grid order, the others in the order
their warm starts finish).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from tqdm.auto import tqdm

from agentbench_af.config import ConfigError, config_hash, to_dict
from agentbench_af.io import atomic_write_text
from agentbench_af.sweep.spec import SweepSpec, expand, load_sweep_spec, warm_start_key
from agentbench_af.sweep.tasks import Task, TaskResult, write_failure
from agentbench_af.train.config import TrainConfig, train_config_from_dict

Backend = Literal["local", "ray", "serial"]


class SweepError(RuntimeError):
    """The sweep cannot start (conflicting run directories, unknown backend); one-line message."""


@dataclass(frozen=True)
class PlannedRun:
    cfg: TrainConfig
    run_dir: Path
    config_hash: str
    state: Literal["new", "resume", "retry", "done", "conflict"]
    detail: str = ""

    @property
    def name(self) -> str:
        return self.cfg.run_name


@dataclass(frozen=True)
class SweepPlan:
    spec: SweepSpec
    runs: list[PlannedRun]
    warm_starts: list[Task]  # shared warm starts still to prepare (only for runs that will execute)

    @property
    def todo(self) -> list[PlannedRun]:
        return [r for r in self.runs if r.state in ("new", "resume", "retry")]

    @property
    def conflicts(self) -> list[PlannedRun]:
        return [r for r in self.runs if r.state == "conflict"]


@dataclass(frozen=True)
class RunOutcome:
    name: str
    run_dir: str
    env_id: str
    method: str
    model: str
    seed: int
    status: Literal["completed", "skipped", "failed"]
    final_success: float | None = None
    error: str | None = None
    wall_time_s: float = 0.0
    retries: int = 0  # resubmissions after its worker process died


def _stored_hash(path: Path) -> str | None:
    try:
        return config_hash(train_config_from_dict(yaml.safe_load(path.read_text()) or {}))
    except (OSError, yaml.YAMLError, ConfigError):
        return None


def plan_run(cfg: TrainConfig) -> PlannedRun:
    from agentbench_af.train.bookkeeping.checkpoint import latest_checkpoint

    run_dir = Path(cfg.run.out_dir) / cfg.run_name
    h = config_hash(cfg)
    record_path = run_dir / "record.json"
    if record_path.exists():
        try:
            record = json.loads(record_path.read_text())
        except (OSError, json.JSONDecodeError):
            record = {}
        if record.get("status") == "completed":
            if record.get("config_hash") == h:
                return PlannedRun(cfg, run_dir, h, "done", f"final success {record.get('final_success')}")
            return PlannedRun(cfg, run_dir, h, "conflict",
                              f"holds a completed run of config {record.get('config_hash')}, the sweep's is {h}")
    stored = _stored_hash(run_dir / "config.yaml") if (run_dir / "config.yaml").exists() else h
    ckpt = latest_checkpoint(run_dir) if run_dir.exists() else None
    has_ckpt = ckpt is not None
    if stored != h and has_ckpt:
        return PlannedRun(cfg, run_dir, h, "conflict", f"holds a checkpoint of config {stored}, the sweep's is {h}")
    if record_path.exists():
        return PlannedRun(cfg, run_dir, h, "retry", "failed before; resumes from its checkpoint" if has_ckpt else "failed before")
    if ckpt is not None:
        return PlannedRun(cfg, run_dir, h, "resume", f"from {ckpt.name}")
    return PlannedRun(cfg, run_dir, h, "new")


def check_cells(cfgs: list[TrainConfig], shared_warm_starts: bool = False) -> None:
    """`check_runnable` on every cell of the grid (each distinct check once); ConfigError names the run.
    Shared warm starts are built by the sweep, so their `run.init_from` folders need not exist yet."""
    from agentbench_af.train.preflight import check_runnable

    seen: set[str] = set()
    for cfg in cfgs:
        if shared_warm_starts:
            cfg = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, init_from=None))
        data = to_dict(cfg)
        key = json.dumps([data["env"], data["model"], data["eval"], cfg.run.init_from, cfg.run.device], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        try:
            check_runnable(cfg)
        except ConfigError as exc:
            raise ConfigError(f"run {cfg.run_name}: {exc}") from exc


def plan_sweep(spec: SweepSpec | str | Path) -> SweepPlan:
    """Expand the grid, check every cell (`check_runnable`) and classify every run directory; nothing is written."""
    spec = spec if isinstance(spec, SweepSpec) else load_sweep_spec(spec)
    cfgs = expand(spec)
    check_cells(cfgs, shared_warm_starts=spec.warm_start == "shared")
    runs = [plan_run(cfg) for cfg in cfgs]
    warm: dict[str, Task] = {}
    if spec.warm_start == "shared":
        for r in runs:
            if r.state in ("new", "resume", "retry") and r.cfg.run.init_from:
                path = Path(r.cfg.run.init_from)
                if not (path / "policy.json").exists() and path.name not in warm:
                    warm[path.name] = Task("warm_start", path.name, r.cfg, str(path), spec.threads_per_run)
    return SweepPlan(spec, runs, list(warm.values()))


def uses_cuda(cfgs: list[TrainConfig]) -> bool:
    import torch

    return any(c.run.device.startswith("cuda") or (c.run.device == "auto" and torch.cuda.is_available()) for c in cfgs)


def make_backend(backend: Backend, workers: int | None, spec: SweepSpec, n_tasks: int, cfgs: list[TrainConfig],
                 address: str | None = None):
    """The backend context manager. Local workers default to cores // threads_per_run, or to one when
    runs use CUDA (every local worker would share one device; for several GPUs use Ray with gpus_per_run).
    `address`: the Ray cluster to join (ray backend only)."""
    if address is not None and backend != "ray":
        raise SweepError(f"an address ({address}) is for the ray backend, not {backend!r}")
    if workers is not None and workers < 1:
        raise SweepError(f"workers must be >= 1, got {workers}")
    if backend == "serial":
        from agentbench_af.sweep.local import SerialBackend

        return SerialBackend()
    if backend == "local":
        from agentbench_af.sweep.local import PoolBackend, default_workers

        default = 1 if uses_cuda(cfgs) else default_workers(spec.threads_per_run)
        return PoolBackend(min(workers or default, max(n_tasks, 1)), spec.threads_per_run, spec.max_retries)
    if backend == "ray":
        from agentbench_af.sweep.ray_backend import RayBackend

        return RayBackend(workers * spec.threads_per_run if workers else None, spec.gpus_per_run, spec.max_retries,
                          address)
    raise SweepError(f"unknown backend {backend!r}; choose local, ray or serial")


class _Bar:
    """A tqdm bar over one kind of task that shows the failures so far and the last task's name."""

    def __init__(self, bar: tqdm) -> None:
        self.bar, self.failed = bar, 0

    def tick(self, name: str, failed: bool, n: int = 1) -> None:
        self.failed += n if failed else 0
        self.bar.update(n)
        self.bar.set_postfix_str(f"failed {self.failed}, last {name}", refresh=True)


@contextmanager
def _bars(n_warm: int, n_runs: int, show_progress: bool) -> Iterator[tuple[_Bar, _Bar]]:
    """One bar for warm starts and one for runs, open together (runs start while warm starts go on)."""
    off = not show_progress
    with (tqdm(total=n_warm, desc="warm starts", unit="run", position=0, disable=off or not n_warm) as warm,
          tqdm(total=n_runs, desc="runs", unit="run", position=1 if n_warm else 0, disable=off or not n_runs) as runs):
        yield _Bar(warm), _Bar(runs)


def _run_task(run: PlannedRun, spec: SweepSpec) -> Task:
    return Task("run", run.name, run.cfg, str(run.run_dir), spec.threads_per_run)


def _outcome(run: PlannedRun, status: str, result: TaskResult | None = None, final: float | None = None) -> RunOutcome:
    c = run.cfg
    return RunOutcome(
        name=run.name, run_dir=str(run.run_dir), env_id=c.env.id, method=c.method,
        model=c.model.path or c.model.name, seed=c.run.seed, status=status,  # type: ignore[arg-type]
        final_success=result.final_success if result else final,
        error=result.error if result else None, wall_time_s=result.wall_time_s if result else 0.0,
        retries=result.retries if result else 0,
    )


def run_sweep(spec: SweepSpec | str | Path, backend: Backend = "local", workers: int | None = None,
              show_progress: bool = True, address: str | None = None) -> list[RunOutcome]:
    """Run every unfinished run of `spec` (a SweepSpec or a YAML path); one outcome per run, grid order.
    `address`: the Ray cluster to join (`auto`, or the head's HOST:PORT; ray backend only)."""
    plan = plan_sweep(spec)
    spec = plan.spec
    if plan.conflicts:
        first = plan.conflicts[0]
        raise SweepError(f"{len(plan.conflicts)} run dir(s) hold another config, e.g. {first.run_dir}: {first.detail}; "
                         "use another out_dir or remove them")
    backend_cm = make_backend(backend, workers, spec, max(len(plan.todo), len(plan.warm_starts)),
                              [r.cfg for r in plan.todo], address)
    atomic_write_text(Path(spec.out_dir) / "sweep.yaml", yaml.safe_dump(to_dict(spec), sort_keys=False))
    outcomes: dict[str, RunOutcome] = {}
    results: dict[str, TaskResult] = {}
    if plan.todo:
        from agentbench_af.sweep.local import stop_on_sigterm

        waiting: dict[str, list[PlannedRun]] = {task.name: [] for task in plan.warm_starts}
        ready: list[Task] = []
        for run in plan.todo:
            key = Path(run.cfg.run.init_from).name if spec.warm_start == "shared" and run.cfg.run.init_from else None
            if key in waiting:
                waiting[key].append(run)
            else:  # per-run warm start, or the shared one is already on disk
                ready.append(_run_task(run, spec))

        def then(result: TaskResult) -> list[Task]:
            """The runs a finished warm start unblocks; a failed one fails them (record.json, error.txt)."""
            runs = waiting.get(result.name, []) if result.kind == "warm_start" else []
            if result.status == "completed":
                return [_run_task(run, spec) for run in runs]
            error = f"warm start {result.name} failed: {result.error}"
            for run in runs:
                write_failure(run.cfg, run.run_dir, error, error)
                outcomes[run.name] = _outcome(run, "failed", TaskResult("run", run.name, "failed", error=error))
            return []

        with (stop_on_sigterm(), backend_cm as runner,
              _bars(len(plan.warm_starts), len(plan.todo), show_progress) as (warm_bar, run_bar)):
            for result in runner.run(plan.warm_starts + ready, then=then):
                failed = result.status == "failed"
                if result.kind == "warm_start":
                    warm_bar.tick(result.name, failed)
                    if failed and waiting.get(result.name):
                        run_bar.tick(waiting[result.name][-1].name, True, len(waiting[result.name]))
                else:
                    results[result.name] = result
                    run_bar.tick(result.name, failed)
    for run in plan.todo:
        result = results.get(run.name)
        if result is None:
            continue
        if result.status == "failed" and not _has_failure_record(run.run_dir):
            write_failure(run.cfg, run.run_dir, result.error or "unknown error", result.error or "")
        outcomes[run.name] = _outcome(run, result.status, result)
    out = []
    for run in plan.runs:
        if run.state == "done":
            out.append(_outcome(run, "skipped", final=json.loads((run.run_dir / "record.json").read_text())["final_success"]))
        else:
            out.append(outcomes[run.name])
    return out


def _has_failure_record(run_dir: Path) -> bool:
    try:
        return json.loads((run_dir / "record.json").read_text()).get("status") == "failed"
    except (OSError, json.JSONDecodeError):
        return False


__all__ = ["RunOutcome", "SweepError", "SweepPlan", "PlannedRun", "plan_sweep", "run_sweep", "warm_start_key"]

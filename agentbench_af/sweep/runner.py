"""Plan and run a sweep: skip finished runs, resume half-finished ones, shared warm starts first.

`plan_sweep(spec)` looks at each run directory: `done` (record.json completed with the same config
hash: skipped), `resume` (a checkpoint of the same config), `retry` (a failed record), `new`, or
`conflict` (the directory holds another config: the sweep refuses to start rather than mix them).
`run_sweep` runs the shared warm starts as their own parallel stage, then the runs, and returns one
`RunOutcome` per run in grid order. Left out: cross-run scheduling priorities (runs go in grid order).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from tqdm.auto import tqdm

from agentbench_af.config import ConfigError, config_hash, from_dict, to_dict
from agentbench_af.io import atomic_write_text
from agentbench_af.sweep.spec import SweepSpec, expand, load_sweep_spec, warm_start_key
from agentbench_af.sweep.tasks import Task, TaskResult, write_failure
from agentbench_af.train.config import TrainConfig

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


def _stored_hash(path: Path) -> str | None:
    try:
        return config_hash(from_dict(TrainConfig, yaml.safe_load(path.read_text()) or {}))
    except (OSError, yaml.YAMLError, ConfigError):
        return None


def plan_run(cfg: TrainConfig) -> PlannedRun:
    from agentbench_af.train.checkpoint import latest_checkpoint

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
    has_ckpt = run_dir.exists() and latest_checkpoint(run_dir) is not None
    if stored != h and has_ckpt:
        return PlannedRun(cfg, run_dir, h, "conflict", f"holds a checkpoint of config {stored}, the sweep's is {h}")
    if record_path.exists():
        return PlannedRun(cfg, run_dir, h, "retry", "failed before; resumes from its checkpoint" if has_ckpt else "failed before")
    if has_ckpt:
        return PlannedRun(cfg, run_dir, h, "resume", f"from {latest_checkpoint(run_dir).name}")
    return PlannedRun(cfg, run_dir, h, "new")


def plan_sweep(spec: SweepSpec | str | Path) -> SweepPlan:
    """Expand the grid and classify every run directory; nothing is written."""
    spec = spec if isinstance(spec, SweepSpec) else load_sweep_spec(spec)
    runs = [plan_run(cfg) for cfg in expand(spec)]
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


def make_backend(backend: Backend, workers: int | None, spec: SweepSpec, n_tasks: int, cfgs: list[TrainConfig]):
    """The backend context manager. Local workers default to cores // threads_per_run, or to one when
    runs use CUDA (every local worker would share one device; for several GPUs use Ray with gpus_per_run)."""
    if workers is not None and workers < 1:
        raise SweepError(f"workers must be >= 1, got {workers}")
    if backend == "serial":
        from agentbench_af.sweep.local import SerialBackend

        return SerialBackend()
    if backend == "local":
        from agentbench_af.sweep.local import PoolBackend, default_workers

        default = 1 if uses_cuda(cfgs) else default_workers(spec.threads_per_run)
        return PoolBackend(min(workers or default, max(n_tasks, 1)), spec.threads_per_run)
    if backend == "ray":
        from agentbench_af.sweep.ray_backend import RayBackend

        return RayBackend(workers * spec.threads_per_run if workers else None, spec.gpus_per_run)
    raise SweepError(f"unknown backend {backend!r}; choose local, ray or serial")


def _stage(runner, tasks: list[Task], desc: str, show_progress: bool) -> dict[str, TaskResult]:
    """Run one stage's tasks; a tqdm bar over tasks shows the time left."""
    results: dict[str, TaskResult] = {}
    failed = 0
    with tqdm(total=len(tasks), desc=desc, unit="run", disable=not show_progress or not tasks) as bar:
        for result in runner.run(tasks):
            results[result.name] = result
            failed += result.status == "failed"
            bar.update(1)
            bar.set_postfix_str(f"failed {failed}, last {result.name}", refresh=True)
    return results


def _outcome(run: PlannedRun, status: str, result: TaskResult | None = None, final: float | None = None) -> RunOutcome:
    c = run.cfg
    return RunOutcome(
        name=run.name, run_dir=str(run.run_dir), env_id=c.env.id, method=c.method,
        model=c.model.path or c.model.name, seed=c.run.seed, status=status,  # type: ignore[arg-type]
        final_success=result.final_success if result else final,
        error=result.error if result else None, wall_time_s=result.wall_time_s if result else 0.0,
    )


def run_sweep(spec: SweepSpec | str | Path, backend: Backend = "local", workers: int | None = None,
              show_progress: bool = True) -> list[RunOutcome]:
    """Run every unfinished run of `spec` (a SweepSpec or a YAML path); one outcome per run, grid order."""
    plan = plan_sweep(spec)
    spec = plan.spec
    if plan.conflicts:
        first = plan.conflicts[0]
        raise SweepError(f"{len(plan.conflicts)} run dir(s) hold another config, e.g. {first.run_dir}: {first.detail}; "
                         "use another out_dir or remove them")
    backend_cm = make_backend(backend, workers, spec, max(len(plan.todo), len(plan.warm_starts)),
                              [r.cfg for r in plan.todo])
    atomic_write_text(Path(spec.out_dir) / "sweep.yaml", yaml.safe_dump(to_dict(spec), sort_keys=False))
    outcomes: dict[str, RunOutcome] = {}
    results: dict[str, TaskResult] = {}
    if plan.todo:
        from agentbench_af.sweep.local import stop_on_sigterm

        with stop_on_sigterm(), backend_cm as runner:
            warm = _stage(runner, plan.warm_starts, "warm starts", show_progress)
            bad_warm = {k: r for k, r in warm.items() if r.status == "failed"}
            tasks = []
            for run in plan.todo:
                key = Path(run.cfg.run.init_from).name if spec.warm_start == "shared" else None
                if key in bad_warm:
                    error = f"warm start {key} failed: {bad_warm[key].error}"
                    write_failure(run.cfg, run.run_dir, error, error)
                    outcomes[run.name] = _outcome(run, "failed", TaskResult("run", run.name, "failed", error=error))
                else:
                    tasks.append(Task("run", run.name, run.cfg, str(run.run_dir), spec.threads_per_run))
            results = _stage(runner, tasks, "runs", show_progress)
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

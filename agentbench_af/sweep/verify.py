"""`verify`: re-run cells of a leaderboard from their recorded configs and compare them with the records.

A cell is one `record.json` under the leaderboard (named by its folder). Each chosen cell's config is
re-run as the sweep ran it: its shared warm start (the folder the record's `run.init_from` names) is
rebuilt from the same config first, once for the cells that share it, then the run, on the sweep's
backends (a process pool, or in this process). Everything is written under a work folder outside the
leaderboard, which is never written to. Left out: reusing the warm starts of an earlier `reproduce`
(they may come from other code; rebuilding them is part of what is checked).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agentbench_af.config import ConfigError, from_dict, to_dict
from agentbench_af.results.fingerprint import environment_fingerprint
from agentbench_af.results.record import RunRecord
from agentbench_af.results.reproduction import CellCheck, check_cell
from agentbench_af.sweep.spec import warm_start_key
from agentbench_af.sweep.tasks import Task, TaskResult
from agentbench_af.train.config import TrainConfig


class VerifyError(RuntimeError):
    """The check cannot start (no records, unknown cell names, a work folder inside the leaderboard)."""


@dataclass(frozen=True)
class Cell:
    name: str
    path: Path  # its record.json
    record: RunRecord


def find_cells(leaderboard: Path) -> list[Cell]:
    """The completed records under `leaderboard`, named by their folders, sorted by name."""
    if not leaderboard.is_dir():
        raise VerifyError(f"no such leaderboard folder: {leaderboard}")
    cells = []
    for path in sorted(leaderboard.rglob("record.json")):
        try:
            record = RunRecord.load(path)
        except (OSError, ValueError, TypeError) as exc:
            raise VerifyError(f"{path}: unreadable record ({str(exc).splitlines()[0] if str(exc) else exc})") from exc
        if record.status == "completed":
            cells.append(Cell(path.parent.name, path, record))
    names = [c.name for c in cells]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise VerifyError(f"{leaderboard}: two records share the folder name {dup[0]}")
    if not cells:
        raise VerifyError(f"no completed record.json under {leaderboard}")
    return sorted(cells, key=lambda c: c.name)


def choose_cells(cells: list[Cell], runs: int, seed: int, names: list[str] | None = None) -> list[Cell]:
    """The named cells (in the order given), else `runs` cells drawn at random with `seed`, sorted by name."""
    by_name = {c.name: c for c in cells}
    if names:
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise VerifyError(f"no completed cell named {unknown[0]!r}; e.g. {', '.join(list(by_name)[:3])}")
        return [by_name[n] for n in dict.fromkeys(names)]
    if runs < 1:
        raise VerifyError(f"--runs must be >= 1, got {runs}")
    chosen = random.Random(seed).sample(sorted(by_name), min(runs, len(by_name)))
    return [by_name[n] for n in sorted(chosen)]


def rerun_config(record: RunRecord, work: Path) -> TrainConfig:
    """The record's config with its run folder (and shared warm start, if it had one) moved under `work`."""
    data = to_dict(from_dict(TrainConfig, record.config))
    init_from = data["run"].get("init_from")
    run = {"out_dir": str((work / "runs").resolve())}
    if init_from:
        key = Path(init_from).name or warm_start_key(from_dict(TrainConfig, data))
        run["init_from"] = str((work / "warm_starts" / key).resolve())
    return from_dict(TrainConfig, {**data, "run": {**data["run"], **run}})


def _threads(cfg: TrainConfig) -> int:
    from agentbench_af.sweep.local import available_cores

    return cfg.run.threads if cfg.run.threads > 0 else available_cores()


def _backend(backend: str, workers: int | None, n_tasks: int, threads: int):
    if backend == "serial":
        from agentbench_af.sweep.local import SerialBackend

        return SerialBackend()
    if backend == "local":
        from agentbench_af.sweep.local import PoolBackend, default_workers

        return PoolBackend(min(workers or default_workers(threads), max(n_tasks, 1)), threads)
    raise VerifyError(f"--backend must be local or serial, got {backend!r}")


Progress = Callable[[str, int], object]  # (task name, cells finished by it); what it returns is ignored


def rerun_cells(cells: list[Cell], work: Path, backend: str = "local", workers: int | None = None,
                progress: Progress | None = None) -> dict[str, RunRecord | str]:
    """Re-run every cell under `work`; per cell name its new record, or the error that stopped it.
    `progress(name, n)` is called as each task comes back (n: cells it finished, a failed warm start's too)."""
    out: dict[str, RunRecord | str] = {}
    runs: dict[str, Task] = {}
    warm: dict[str, Task] = {}
    waiting: dict[str, list[Task]] = {}
    for cell in cells:
        try:
            cfg = rerun_config(cell.record, work)
        except ConfigError as exc:
            out[cell.name] = f"the recorded config does not load here: {exc}"
            continue
        task = Task("run", cell.name, cfg, str(Path(cfg.run.out_dir) / cfg.run_name), _threads(cfg))
        runs[cell.name] = task
        if cfg.run.init_from:
            key = Path(cfg.run.init_from).name
            warm.setdefault(key, Task("warm_start", key, cfg, cfg.run.init_from, _threads(cfg)))
            waiting.setdefault(key, []).append(task)
    ready = [t for t in runs.values() if not t.cfg.run.init_from]

    def then(result: TaskResult) -> list[Task]:
        if result.kind != "warm_start":
            return []
        if result.status == "completed":
            return waiting.get(result.name, [])
        for task in waiting.get(result.name, []):
            out[task.name] = f"warm start {result.name} failed: {result.error}"
        return []

    tasks = list(warm.values()) + ready
    threads = max([t.threads for t in tasks] or [1])
    with _backend(backend, workers, len(runs), threads) as runner:
        for result in runner.run(tasks, then=then):
            finished = 0
            if result.kind == "run":
                out[result.name] = _load_rerun(runs[result.name], result)
                finished = 1
            elif result.status != "completed":
                finished = len(waiting.get(result.name, []))
            if progress is not None:
                progress(result.name, finished)
    return out


def _load_rerun(task: Task, result: TaskResult) -> RunRecord | str:
    if result.status != "completed":
        return f"the re-run failed: {result.error}"
    try:
        return RunRecord.load(Path(task.path) / "record.json")
    except (OSError, ValueError, TypeError) as exc:
        return f"the re-run's record is unreadable: {exc}"


def verify_cells(cells: list[Cell], work: Path, backend: str = "local", workers: int | None = None,
                 progress: Progress | None = None) -> list[CellCheck]:
    """Re-run `cells` under `work` and compare each with its record, in the order given."""
    reruns = rerun_cells(cells, work, backend, workers, progress)
    checks = []
    for cell in cells:
        rerun = reruns.get(cell.name, "the re-run did not come back")
        device = (cell.record.config.get("run") or {}).get("device", "cpu")
        if isinstance(rerun, str):
            checks.append(CellCheck(cell=cell.name, recorded_final=cell.record.final_success,
                                    recorded_warm=cell.record.warm_start_success, error=rerun))
        else:
            checks.append(check_cell(cell.name, cell.record, rerun, environment_fingerprint(device)))
    return checks

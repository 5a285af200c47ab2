"""`agentbench-af sweep SPEC.yaml [--backend local|ray|serial] [--workers N] [--address auto] [--gpus-per-run G] [--max-retries N] [--dry-run]`.

Left out: editing a spec from the command line (write a second spec file).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import typer
from tabulate import tabulate

from agentbench_af.cli.app import app


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def plan_table(plan) -> str:
    """The expanded runs: name, env, model, method, seed, config hash, what the sweep will do."""
    action = {"new": "run", "resume": "resume", "retry": "retry", "done": "skip (finished)", "conflict": "CONFLICT"}
    rows = [[r.name, r.cfg.env.id, r.cfg.model.path or r.cfg.model.name, r.cfg.method, r.cfg.run.seed, r.config_hash,
             action[r.state] + (f": {r.detail}" if r.detail and r.state != "new" else "")] for r in plan.runs]
    return tabulate(rows, headers=["run", "env", "model", "method", "seed", "config", "action"])


@app.command("sweep")
def sweep_command(
    spec: Path = typer.Argument(..., help="Sweep spec YAML (base config, grid, overrides, out_dir)."),
    backend: str = typer.Option("local", help="local (process pool), ray (--address, RAY_ADDRESS or a local cluster), serial."),
    workers: int = typer.Option(None, help="Parallel runs (default: cores // threads_per_run)."),
    address: str = typer.Option(None, help="Ray only: the cluster to join, `auto` (started here by `ray start`) or HEAD_IP:PORT."),
    gpus_per_run: float = typer.Option(None, help="Ray only: GPUs each run reserves (default: the spec's gpus_per_run, 0)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check every run's config; print the runs and what would be skipped."),
    max_retries: int = typer.Option(None, "--max-retries", min=0,
                                    help="Resubmissions of a run whose worker process died (default: the spec's, 2)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bars."),
) -> None:
    """Run a grid of training runs; finished runs are skipped, killed ones resume."""
    from agentbench_af.config import ConfigError
    from agentbench_af.io import WriteError
    from agentbench_af.sweep import SweepError, load_sweep_spec, plan_sweep, run_sweep

    if backend not in ("local", "ray", "serial"):
        raise _fail(f"--backend must be local, ray or serial, got {backend!r}")
    if (address is not None or gpus_per_run is not None) and backend != "ray":
        raise _fail("--address and --gpus-per-run are for --backend ray")
    try:
        loaded = load_sweep_spec(spec)
        if gpus_per_run is not None:
            loaded = dataclasses.replace(loaded, gpus_per_run=gpus_per_run)
        if max_retries is not None:
            loaded = dataclasses.replace(loaded, max_retries=max_retries)
        plan = plan_sweep(loaded)
    except ConfigError as exc:
        raise _fail(str(exc)) from exc
    if dry_run:
        typer.echo(plan_table(plan))
        n_done = sum(r.state == "done" for r in plan.runs)
        typer.echo(f"{len(plan.runs)} runs: {len(plan.todo)} to run, {n_done} finished (skipped), "
                   f"{len(plan.conflicts)} conflicting; {len(plan.warm_starts)} shared warm starts to prepare; "
                   f"out_dir {Path(plan.spec.out_dir).resolve()}")
        if plan.conflicts:
            raise typer.Exit(1)
        return
    try:
        outcomes = run_sweep(plan.spec, backend=backend, workers=workers, show_progress=not quiet,  # type: ignore[arg-type]
                             address=address)
    except (SweepError, ConfigError, RuntimeError, WriteError) as exc:
        raise _fail(str(exc)) from exc
    rows = [[o.name, o.status, "" if o.final_success is None else f"{o.final_success:.3f}", o.retries, o.error or ""]
            for o in outcomes]
    typer.echo(tabulate(rows, headers=["run", "status", "final success", "retries", "error"]))
    failed = sum(o.status == "failed" for o in outcomes)
    retried = sum(o.retries > 0 for o in outcomes)
    typer.echo(f"{len(outcomes)} runs: {sum(o.status == 'completed' for o in outcomes)} completed, "
               f"{sum(o.status == 'skipped' for o in outcomes)} skipped, {failed} failed, "
               f"{retried} retried after a worker died; records under {Path(plan.spec.out_dir).resolve() / 'runs'}")
    if failed:
        raise typer.Exit(1)

"""`agentbench-af reproduce --preset NAME`: run a preset sweep, then write its leaderboard (the README's main job).

Presets live in `baselines/presets/` (`agentbench-af reproduce --list`). `--env/--model/--method/--seed`
run a subset of a preset's grid and `--set key=value` overrides any setting (last word), e.g. a CPU
smoke test of the paper preset on a small local model:

    agentbench-af reproduce --preset paper --model-dir DIR --env FrozenLake-4x4-slippery-v0 \
        --model Qwen2.5-0.5B-Instruct --method grpo --set run.device=cpu --set rl.steps=2

Left out: grid values a preset does not have (copy its YAML, edit it, pass the path as --preset).
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from agentbench_af.cli.app import app
from agentbench_af.cli.train import IMPORT_HELP


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


@app.command("reproduce")
def reproduce_command(
    preset: str = typer.Option("cpu-quick", "--preset", help="A preset name (see --list) or a sweep spec YAML path."),
    out: Path | None = typer.Option(None, "--out", help="Leaderboard folder (default: leaderboards/<preset>)."),
    work_dir: Path = typer.Option(None, "--work-dir", help="Checkpoints and policies (default: runs/reproduce/<preset>)."),
    model_dir: Path = typer.Option(None, "--model-dir", help="Folder with one sub-folder per Hugging Face model (paper preset)."),
    envs: list[str] = typer.Option([], "--env", help="Run only this environment of the preset (repeatable)."),
    models: list[str] = typer.Option([], "--model", help="Run only this model of the preset (repeatable)."),
    methods: list[str] = typer.Option([], "--method", help="Run only this method of the preset (repeatable)."),
    seeds: list[int] = typer.Option([], "--seed", help="Run only this seed of the preset (repeatable)."),
    overrides: list[str] = typer.Option([], "--set", help="key=value applied to every run, after the preset's settings (repeatable)."),
    backend: str = typer.Option("local", help="local (process pool), ray, or serial."),
    workers: int = typer.Option(None, help="Parallel runs (default: cores // threads per run)."),
    list_presets: bool = typer.Option(False, "--list", help="List the presets and exit."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Say what would run, run nothing."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bars."),
    allow_dirty: bool = typer.Option(False, "--allow-dirty", help="Run from a checkout with uncommitted changes "
                                     "(records name the -dirty commit; the table notes them)."),
    imports: list[str] = typer.Option(None, "--import", metavar="MODULE", help=IMPORT_HELP),
) -> None:
    """Run a preset (warm starts, then every method from the same warm start) and write table and plots."""
    from agentbench_af.config import ConfigError
    from agentbench_af.io import WriteError
    from agentbench_af.sweep import SweepError
    from agentbench_af.sweep.reproduce import (
        ReproduceConfig,
        ReproduceError,
        describe,
        preset_names,
        reproduce,
    )

    if list_presets:
        typer.echo("\n".join(preset_names()))
        return
    if backend not in ("local", "ray", "serial"):
        raise _fail(f"--backend must be local, ray or serial, got {backend!r}")
    cfg = ReproduceConfig(preset=preset, out_dir=out, work_dir=work_dir, backend=backend,  # type: ignore[arg-type]
                          workers=workers, model_dir=model_dir, envs=tuple(envs), models=tuple(models),
                          methods=tuple(methods), seeds=tuple(seeds), overrides=tuple(overrides),
                          imports=tuple(imports or ()), allow_dirty=allow_dirty)
    start = time.time()
    try:
        typer.echo(describe(cfg))
        if dry_run:
            return
        outcomes = reproduce(cfg, show_progress=not quiet)
    except (ReproduceError, SweepError, ConfigError, WriteError) as exc:
        raise _fail(str(exc)) from exc
    from agentbench_af.cli.results import plot_command, table_command

    failed = [o for o in outcomes if o.status == "failed"]
    if len(failed) == len(outcomes):
        raise _fail(f"all {len(outcomes)} runs failed, e.g. {failed[0].name}: {failed[0].error}", 1)
    table_command([cfg.leaderboard], out=None, fmt="all")
    plot_command([cfg.leaderboard], out=None)
    typer.echo(f"preset {cfg.name}: {len(outcomes)} runs ({len(failed)} failed) in {(time.time() - start) / 60:.1f} min; "
               f"leaderboard in {cfg.leaderboard}")
    if failed:
        raise typer.Exit(1)

"""`agentbench-af verify LEADERBOARD_DIR [--runs N] [--seed S] [--cells NAME ...] [--json PATH]`.

Re-runs cells of a leaderboard from their records (warm start included) in a work folder, never in the
leaderboard, and reports per cell the recorded and re-run success, whether an exact match was expected
and met, or the difference in standard errors. Exit status 1 when a cell fails, 2 on bad input.
Left out: re-running a whole leaderboard in one go (that is `agentbench-af reproduce`).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import typer
from tabulate import tabulate

from agentbench_af.cli.app import app


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def _z(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}"


def checks_table(checks) -> str:
    """One row per cell: success recorded -> re-run (final, warm start) in %, z scores, verdict."""
    rows = [[c.cell, c.episodes or "-", f"{_pct(c.recorded_final)} -> {_pct(c.rerun_final)}",
             f"{_pct(c.recorded_warm)} -> {_pct(c.rerun_warm)}", _z(c.z_final), _z(c.z_warm),
             "yes" if c.exact_expected else "no", c.verdict] for c in checks]
    return tabulate(rows, headers=["cell", "episodes", "final % (record -> re-run)", "warm start %", "SE diff final",
                                   "SE diff warm", "exact expected", "result"], disable_numparse=True)


def _reason_lines(checks) -> list[str]:
    groups: dict[tuple[str, ...], list[str]] = {}
    for c in checks:
        if not c.exact_expected and not c.error:
            groups.setdefault(tuple(c.reasons), []).append(c.cell)
    return [f"exact match not expected ({len(cells)} cell{'s' * (len(cells) != 1)}): {'; '.join(reasons)}"
            for reasons, cells in groups.items()]


def _split_names(values: list[str] | None) -> list[str]:
    return [n.strip() for v in values or [] for n in v.split(",") if n.strip()]


@app.command("verify")
def verify_command(
    leaderboard: Path = typer.Argument(..., help="A leaderboard folder (its runs/*/record.json are the cells)."),
    runs: int = typer.Option(3, "--runs", help="How many cells to re-run, drawn at random."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random draw of cells."),
    cells: list[str] = typer.Option(None, "--cells", help="Re-run these cells (folder names; repeat or comma-separate) "
                                                          "instead of a random draw."),
    json_path: Path = typer.Option(None, "--json", help="Also write the report as JSON here."),
    work_dir: Path = typer.Option(None, "--work-dir", help="Work folder for the re-runs (default: a new "
                                                           "runs/verify-<leaderboard>-* folder, removed afterwards)."),
    keep_work: bool = typer.Option(False, "--keep-work", help="Keep the default work folder (checkpoints, policies)."),
    backend: str = typer.Option("local", help="local (process pool) or serial (in this process)."),
    workers: int = typer.Option(None, help="Parallel re-runs (default: cores // threads per run)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress bar."),
) -> None:
    """Re-run leaderboard cells from their records and check that the numbers come back."""
    from tqdm.auto import tqdm

    from agentbench_af.io import atomic_write_json
    from agentbench_af.results.reproduction import MAX_Z
    from agentbench_af.sweep.verify import VerifyError, choose_cells, find_cells, verify_cells

    if backend not in ("local", "serial"):
        raise _fail(f"--backend must be local or serial, got {backend!r}")
    if workers is not None and workers < 1:
        raise _fail(f"--workers must be >= 1, got {workers}")
    board = leaderboard.resolve()
    try:
        all_cells = find_cells(leaderboard)
        chosen = choose_cells(all_cells, runs, seed, _split_names(cells))
    except VerifyError as exc:
        raise _fail(str(exc)) from exc
    if work_dir is not None:
        work, remove = work_dir, False
        if work.exists() and any(work.iterdir()):
            raise _fail(f"--work-dir {work} is not empty (re-runs need a fresh folder)")
    else:
        Path("runs").mkdir(exist_ok=True)
        work, remove = Path(tempfile.mkdtemp(prefix=f"verify-{board.name}-", dir="runs")), not keep_work
    if work.resolve().is_relative_to(board):
        if remove:
            shutil.rmtree(work, ignore_errors=True)
        raise _fail(f"the work folder {work} is inside the leaderboard {leaderboard}; choose another --work-dir")
    picked = "named" if cells else f"drawn with seed {seed}"
    typer.echo(f"verify {leaderboard}: {len(chosen)} of {len(all_cells)} cells ({picked}); work folder {work}")
    try:
        with tqdm(total=len(chosen), desc="verify", unit="cell", disable=quiet) as bar:

            def show(name: str, n: int) -> None:
                bar.update(n)
                bar.set_postfix_str(name, refresh=True)

            checks = verify_cells(chosen, work, backend, workers, progress=show)
    finally:
        if remove:
            shutil.rmtree(work, ignore_errors=True)
    typer.echo(checks_table(checks))
    for line in _reason_lines(checks):
        typer.echo(line)
    for c in checks:
        if c.error:
            typer.echo(f"{c.cell}: {c.error}")
    failed = [c for c in checks if not c.passed]
    exact = sum(bool(c.exact) and c.passed for c in checks)
    typer.echo(f"{len(checks)} cells: {len(checks) - len(failed)} passed ({exact} exact), {len(failed)} failed "
               f"(tolerance {MAX_Z:g} SE where no exact match is expected)")
    if json_path is not None:
        atomic_write_json(json_path, {
            "leaderboard": str(leaderboard), "cells_total": len(all_cells), "seed": seed, "runs": runs,
            "named": _split_names(cells), "max_z": MAX_Z, "passed": not failed,
            "checks": [c.to_dict() for c in checks],
        })
    if failed:
        raise typer.Exit(1)

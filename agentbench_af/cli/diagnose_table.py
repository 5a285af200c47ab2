"""`agentbench-af diagnose-table DIR...`: one table of several `diagnose` output folders (a row each:
headline with interval and null, groups, role token shares and entropies), as diagnose-table.md / .csv."""

from __future__ import annotations

from pathlib import Path

import typer

from agentbench_af.cli.app import app


@app.command("diagnose-table")
def diagnose_table_command(
    dirs: list[Path] = typer.Argument(..., help="`agentbench-af diagnose` output folders, in row order."),
    label: list[str] = typer.Option([], "--label", help="Row label per folder, in order (repeat it once per "
                                    "folder; default: each folder's name), e.g. zero-shot, warm start."),
    out: Path = typer.Option(Path("."), "--out", help="Folder for diagnose-table.md and diagnose-table.csv."),
) -> None:
    """Side by side: several diagnostics (stages of one model, or environments), copied from their reports."""
    from agentbench_af.results.diagnose_table import diagnostic_row, to_markdown, write_diagnose_table

    if label and len(label) != len(dirs):
        typer.echo(f"error: {len(label)} --label for {len(dirs)} folders; give one per folder or none", err=True)
        raise typer.Exit(2)
    labels: list[str | None] = list(label) if label else [None] * len(dirs)
    try:
        rows = [diagnostic_row(d, lab) for d, lab in zip(dirs, labels, strict=True)]
    except ValueError as exc:
        typer.echo(f"error: {str(exc).splitlines()[0]}", err=True)
        raise typer.Exit(2) from exc
    write_diagnose_table(rows, out)
    typer.echo(to_markdown(rows), nl=False)

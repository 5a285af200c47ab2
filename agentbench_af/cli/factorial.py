"""`agentbench-af factorial DIR...`: a 2 x 2 analysis (treated vs base method x two values of one config
key) of run records, paired by seed, written as factorial.md and factorial.csv."""

from __future__ import annotations

from pathlib import Path

import typer

from agentbench_af.cli.app import app


@app.command("factorial")
def factorial_command(
    dirs: list[Path] = typer.Argument(..., help="Folders (searched recursively) or record.json files."),
    base: str = typer.Option(..., "--base", help="The base method, e.g. grpo."),
    treated: str = typer.Option(..., "--treated", help="The treated method, e.g. grpo+actfocus."),
    factor: str = typer.Option("rl.lr", "--factor", help="Dotted config key whose two values cross the methods."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: the first DIR)."),
) -> None:
    """Treatment effect at each level, level effect per method, interaction and change from the warm start,
    paired by seed; Holm-corrected across the primary contrasts (treatment effect at each level, T = 1)."""
    from agentbench_af.results.factorial import FactorialSpec, contrasts, factorial_records, to_markdown

    spec = FactorialSpec(base=base, treated=treated, factor=factor)
    try:
        frame = factorial_records(dirs, spec)
        table = contrasts(frame, spec)
    except (FileNotFoundError, KeyError, ValueError) as exc:
        typer.echo(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", err=True)
        raise typer.Exit(2) from exc
    out_dir = out or (dirs[0] if dirs[0].is_dir() else dirs[0].parent)
    from agentbench_af.io import atomic_write_text

    text = to_markdown(table, spec)
    atomic_write_text(out_dir / "factorial.md", text)
    atomic_write_text(out_dir / "factorial.csv", table.to_csv(index=False, float_format="%.6g"))
    typer.echo(text, nl=False)

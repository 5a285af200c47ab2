"""`agentbench-af study DIR...`: a paired study's analysis of run records (does each base method learn
from its warm start; each weighting against its base, Holm-corrected), written as study.md and study.csv."""

from __future__ import annotations

from pathlib import Path

import typer

from agentbench_af.cli.app import app


def _pair(text: str) -> tuple[str, str]:
    treated, sep, base = text.partition(":")
    if not sep or not treated or not base:
        raise typer.BadParameter(f"expected TREATED:BASE (e.g. grpo+actfocus:grpo), got {text!r}")
    return treated, base


@app.command("study")
def study_command(
    dirs: list[Path] = typer.Argument(..., help="Folders (searched recursively) or record.json files."),
    pair: list[str] = typer.Option([], "--pair", help="TREATED:BASE, repeatable (default: every "
                                   "<base>+<weighting> whose base ran too)."),
    out: Path = typer.Option(None, "--out", help="Output folder (default: the first DIR)."),
    rerun_bases: list[Path] = typer.Option([], "--rerun-bases", help="Folder of base runs rerun from a rebuilt "
                                           "warm start (repeatable): paired with the runs of that warm start, "
                                           "left out of the learning table."),
) -> None:
    """Change from the warm start per method (with the learnable-benchmark bar for base methods) and each
    weighting's paired gain over its base: SE, t, sign and Wilcoxon p, Holm across the T = 1 contrasts."""
    from agentbench_af.io import atomic_write_text
    from agentbench_af.results.study import StudySpec, contrasts, learning, study_records, to_markdown

    spec = StudySpec(pairs=tuple(_pair(p) for p in pair))
    try:
        frame = study_records(dirs, contrast_only=rerun_bases)
        if frame.empty:
            raise ValueError("no completed run record")
        learned = learning(frame)
        table = contrasts(frame, spec, learned)
    except (FileNotFoundError, KeyError, ValueError) as exc:
        typer.echo(f"error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}", err=True)
        raise typer.Exit(2) from exc
    out_dir = out or (dirs[0] if dirs[0].is_dir() else dirs[0].parent)
    text = to_markdown(learned, table, spec, frame)
    atomic_write_text(out_dir / "study.md", text)
    atomic_write_text(out_dir / "study.csv", table.to_csv(index=False, float_format="%.6g"))
    atomic_write_text(out_dir / "study-learning.csv", learned.to_csv(index=False, float_format="%.6g"))
    typer.echo(text, nl=False)

"""`agentbench-af table DIR...` and `agentbench-af plot DIR...`: tables and plots from run records only;
`agentbench-af embed FILE.md`: refresh the copies of generated tables that a README holds.

Outputs carry no timestamps or paths, so regenerating them from committed records is byte-identical.
Left out: filtering records by env or method (point the commands at the folders you want).
"""

from __future__ import annotations

from pathlib import Path

import typer

from agentbench_af.cli.app import app


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _load(dirs: list[Path]):
    """Record paths, their frame and the success table, or a one-line error."""
    from agentbench_af.results.collect_records import find_records, records_frame
    from agentbench_af.results.table import build_table

    try:
        paths = find_records(dirs)
    except FileNotFoundError as exc:
        raise _fail(str(exc)) from exc
    if not paths:
        raise _fail(f"no record.json found under {', '.join(str(d) for d in dirs)}")
    try:
        frame = records_frame(paths)
        table = build_table(frame)
    except (ValueError, KeyError, TypeError) as exc:
        raise _fail(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
    return paths, frame, table


@app.command("table")
def table_command(
    dirs: list[Path] = typer.Argument(..., help="Folders (searched recursively) or record.json files."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default: the first DIR)."),
    fmt: str = typer.Option("all", "--format", help="md, csv, tex or all."),
) -> None:
    """Final-step success table (mean ± SE over seeds) from run records: table.md / .csv / .tex, and the
    Action Bottleneck table (bottleneck.md / .csv) when records carry a bottleneck field."""
    from agentbench_af.results import bottleneck_table as bt
    from agentbench_af.results.table import FORMATS, to_markdown, write_table

    if fmt not in (*FORMATS, "all"):
        raise _fail(f"--format must be one of {', '.join(FORMATS)}, all; got {fmt!r}")
    _, frame, table = _load(dirs)
    out_dir = out or (dirs[0] if dirs[0].is_dir() else dirs[0].parent)
    formats = FORMATS if fmt == "all" else (fmt,)
    written = write_table(table, out_dir, formats)
    typer.echo(to_markdown(table), nl=False)
    bottleneck = bt.build_bottleneck_table(frame)
    if bottleneck is not None:
        written += bt.write_bottleneck_table(bottleneck, out_dir, formats)
        typer.echo("\n" + bt.to_markdown(bottleneck), nl=False)
    typer.echo(f"\nwrote {', '.join(str(p) for p in written)}")


@app.command("plot")
def plot_command(
    dirs: list[Path] = typer.Argument(..., help="Folders (searched recursively) or record.json files."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default: the first DIR)."),
) -> None:
    """Success curves per environment (curve-<env>.png/svg) and final-step bars (final-success.png/svg)."""
    from agentbench_af.results.plots import curves_frame, plot_curves, plot_final_bars

    paths, _, table = _load(dirs)
    out_dir = out or (dirs[0] if dirs[0].is_dir() else dirs[0].parent)
    written = plot_curves(curves_frame(paths), out_dir) + plot_final_bars(table, out_dir)
    typer.echo(f"wrote {len(written)} files: {', '.join(p.name for p in written)} in {out_dir}")


@app.command("embed")
def embed_command(
    markdown: Path = typer.Argument(Path("README.md"), help="Markdown file holding generated blocks."),
    check: bool = typer.Option(False, "--check", help="Change nothing; exit 1 if a copy is out of date."),
) -> None:
    """Rewrite every `<!-- generated: PATH -->` ... `<!-- end generated -->` block of a Markdown file with
    the table lines of PATH (relative to the file), e.g. after `agentbench-af table` regenerated them."""
    from agentbench_af.io import atomic_write_text
    from agentbench_af.results.embedded_tables import embedded_tables, refresh_embedded_tables

    if not markdown.is_file():
        raise _fail(f"no such file: {markdown}")
    text = markdown.read_text()
    if not embedded_tables(text):
        raise _fail(f"{markdown} holds no '<!-- generated: PATH -->' block")
    try:
        new_text, changed = refresh_embedded_tables(text, markdown.parent)
    except (FileNotFoundError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    if not changed:
        typer.echo(f"{markdown}: every generated block is up to date")
        return
    if check:
        typer.echo(f"{markdown}: out of date: {', '.join(changed)}", err=True)
        raise typer.Exit(1)
    atomic_write_text(markdown, new_text)
    typer.echo(f"{markdown}: refreshed {', '.join(changed)}")

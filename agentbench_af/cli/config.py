"""`config [SECTION] [--explain]`: the training config's defaults, or every field's type, default and
documentation (the `#:` comments above the fields), for the whole config or one section or field."""

from __future__ import annotations

import textwrap

import typer
import yaml

from agentbench_af.cli.app import app


@app.command("config")
def config_command(
    section: str = typer.Argument(None, help="A section (rl, credit, ...) or a field (rl.lr); omit for all."),
    explain: bool = typer.Option(False, "--explain", help="Each field's type, default and documentation."),
) -> None:
    """Print the training config's defaults as YAML, or explain its fields (`--explain`)."""
    from agentbench_af.config import explain as explain_rows
    from agentbench_af.config import to_dict
    from agentbench_af.train.config import TrainConfig

    rows = explain_rows(TrainConfig)
    if section:
        rows = [r for r in rows if r[0] == section or r[0].startswith(section + ".")]
        if not rows:
            sections = sorted({r[0].split(".")[0] for r in explain_rows(TrainConfig)})
            typer.echo(f"error: no config section or field {section!r}; sections: {', '.join(sections)}", err=True)
            raise typer.Exit(2)
    if not explain:
        node = to_dict(TrainConfig())
        for part in section.split(".") if section else []:
            node = node[part]
        typer.echo(yaml.safe_dump(node, sort_keys=False).rstrip() if isinstance(node, dict) else f"{section}: {node}")
        return
    for key, kind, default, doc in rows:
        typer.echo(f"{key}  ({kind})" if kind == "section" else f"{key}: {kind} = {default}")
        if doc:
            typer.echo(textwrap.fill(doc, 100, initial_indent="    ", subsequent_indent="    "))

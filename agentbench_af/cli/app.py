"""The shared typer application that every command module registers on."""

import typer

app = typer.Typer(
    name="agentbench-af",
    help="Multi-turn text environments and a PPO / GRPO / ActFocus training harness.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

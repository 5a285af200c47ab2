"""The shared typer application that every command module registers on."""

import typer
from transformers.utils import logging as hf_logging

# transformers' own bars ("Loading weights", "Writing model shards") drown the run's progress bar
hf_logging.disable_progress_bar()

app = typer.Typer(
    name="agentbench-af",
    help="Multi-turn text environments and a PPO / GRPO / ActFocus training harness.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

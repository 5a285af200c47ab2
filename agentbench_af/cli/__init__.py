"""The `agentbench-af` command line (typer). Each command group lives in its own module."""

from importlib import import_module

from agentbench_af.cli.app import app

_COMMAND_MODULES = ("envs", "train", "config", "diagnose", "diagnose_table", "results", "factorial", "study", "sweep", "reproduce",
                    "verify", "methods")

for _name in _COMMAND_MODULES:
    try:
        import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as exc:  # a command module not present in this checkout
        if exc.name != f"{__name__}.{_name}":
            raise

__all__ = ["app"]

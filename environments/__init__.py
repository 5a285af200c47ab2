"""The environment suite (installed as `agentbench_af.environments`). Importing it registers every id."""

from importlib import import_module

_ENV_PACKAGES = ("frozenlake", "sokoban", "sudoku", "webshop", "textworld", "alfworld")

for _name in _ENV_PACKAGES:
    try:
        import_module(f"{__name__}.{_name}.variants")
    except ModuleNotFoundError as exc:  # a package not yet present in this checkout
        if exc.name != f"{__name__}.{_name}" and exc.name != f"{__name__}.{_name}.variants":
            raise

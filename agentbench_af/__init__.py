"""agentbench-af: multi-turn text environments with delimited action tokens, and a harness that trains
PPO, GRPO and ActFocus policies on them."""

from agentbench_af.api import (
    ActionOutcome,
    ExpertTurn,
    StepInfo,
    TextEnv,
    Variant,
    list_envs,
    make,
    register,
    spec,
)

__version__ = "0.1.0"


def check_env(env_or_id, **kwargs):
    """Run the contract checker on an environment or id (see `agentbench_af.api.checker`)."""
    from agentbench_af.api.checker import check_env as _check

    return _check(env_or_id, **kwargs)


__all__ = [
    "ActionOutcome", "ExpertTurn", "StepInfo", "TextEnv", "Variant",
    "check_env", "list_envs", "make", "register", "spec", "__version__",
]

# register every id (the suite and installed plugins) here and in Gymnasium as `agentbench_af/<id>`
from agentbench_af.api.registry import _ensure_loaded  # noqa: E402

_ensure_loaded()


def _check_editable_layout() -> None:
    """Warn (one line) when `environments/` is served from another checkout than this package: an
    editable install made in checkout A maps it to A's folder even when checkout B's code runs."""
    import logging
    import sys
    from pathlib import Path

    envs = sys.modules.get("agentbench_af.environments")  # loaded by _ensure_loaded (the registry's load)
    here = Path(__file__).resolve().parent.parent
    served = Path(envs.__file__).resolve().parent.parent if envs is not None and envs.__file__ else here
    if (here / "environments").is_dir() and served != here:
        logging.getLogger("agentbench_af").warning(
            "agentbench_af comes from %s but agentbench_af.environments from %s (an editable install of another "
            "checkout); run `pip install -e .` in %s or use its own virtual environment", here, served, here)


_check_editable_layout()

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

"""The text-environment API: base class, typed info, registry."""

from agentbench_af.api.env import TextEnv
from agentbench_af.api.registry import EnvSpec, list_envs, make, register, spec
from agentbench_af.api.types import ActionOutcome, ExpertTurn, StepInfo, Variant

__all__ = [
    "ActionOutcome", "EnvSpec", "ExpertTurn", "StepInfo", "TextEnv", "Variant",
    "list_envs", "make", "register", "spec",
]

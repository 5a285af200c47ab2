"""Checks a run's config must pass before any work starts, beyond its own types and ranges.

The dataclasses check every field's range when built (`TrainConfig` and its sections); this adds what
needs the outside world: the environment id and overrides make an environment, the tiny model name
exists (or `model.path` is a folder), `run.init_from` is a folder, the device exists, and the evaluation
episodes fit the environment's evaluation seeds. Each failure is a one-line `ConfigError` naming the key.
Left out: checks that need the model loaded (a Hugging Face `model.path`'s files are read by the run).
"""

from __future__ import annotations

from pathlib import Path

from agentbench_af.config import ConfigError
from agentbench_af.train.config import TrainConfig, demonstration_overrides


def check_runnable(cfg: TrainConfig) -> None:
    """Raise ConfigError (one line) when `cfg` cannot run on this machine."""
    import agentbench_af
    from agentbench_af.evaluate.evaluate import eval_seeds
    from agentbench_af.train.device import resolve_device
    from agentbench_af.train.warm.demos import check_draws_vary

    try:
        agentbench_af.make(cfg.env.id, **cfg.env.overrides)
    except (KeyError, TypeError, ValueError, ImportError) as exc:
        raise ConfigError(f"env: {exc.args[0] if exc.args else exc}") from exc
    if cfg.sft.env_overrides:
        try:
            agentbench_af.make(cfg.env.id, **demonstration_overrides(cfg))
        except (KeyError, TypeError, ValueError, ImportError) as exc:
            raise ConfigError(f"sft.env_overrides: {exc.args[0] if exc.args else exc}") from exc
    if cfg.sft.steps > 0:
        try:
            check_draws_vary(cfg.env.id, demonstration_overrides(cfg), cfg.sft.demo_draws or 1)
        except ValueError as exc:
            raise ConfigError(f"sft.demo_draws: {exc}") from exc
    if not cfg.model.path:
        from agentbench_af.models.names import is_named_model, model_names
        from agentbench_af.models.packaged import PACKAGED_MODELS, gguf_sha256

        if not is_named_model(cfg.model.name):
            raise ConfigError(f"model.name: unknown model {cfg.model.name!r}; choose one of {model_names()} "
                              "or set model.path")
        if cfg.model.name in PACKAGED_MODELS:
            try:
                gguf_sha256(cfg.model.name)  # the wheel is installed and holds the expected file
            except (ImportError, ValueError) as exc:
                raise ConfigError(str(exc)) from exc
    if cfg.model.path and cfg.model.path.startswith(("/", ".", "~")) and not Path(cfg.model.path).expanduser().is_dir():
        raise ConfigError(f"model.path: no directory {cfg.model.path}")
    if cfg.run.init_from and not Path(cfg.run.init_from).is_dir():
        raise ConfigError(f"run.init_from: {cfg.run.init_from} is not a directory")
    try:
        resolve_device(cfg)
    except RuntimeError as exc:
        raise ConfigError(str(exc)) from exc
    try:
        eval_seeds(cfg.env.id, cfg.eval.episodes, cfg.env.overrides)
    except ValueError as exc:
        raise ConfigError(f"eval.episodes: {exc}") from exc

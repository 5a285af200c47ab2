"""What a run directory written by `train` offers its readers: its config, saved rollouts, a policy.

    cfg = run_config(run_dir)                    # TrainConfig from config.yaml (ValueError: not a run dir)
    paths = saved_rollout_paths(run_dir)         # rollouts/step-*.pt, by step
    policy_dir = run_policy_dir(run_dir, cfg)    # final_policy, else warm_start, else run.init_from
    policy_dir = named_policy_dir(run_dir, cfg, "warm_start")  # its own, else the run.init_from it branched from
    cfg = config_near_policy(policy_dir)         # the run config of a run's final_policy / warm_start
Errors are ValueErrors with one line of text. Left out: runs of other harnesses.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from agentbench_af.config import ConfigError
from agentbench_af.models.policy import Policy, is_model_dir
from agentbench_af.rollout.engine import SAMPLER_DTYPES, TransformersEngine
from agentbench_af.train.config import TrainConfig, train_config_from_dict
from agentbench_af.train.device import pin_threads


def _read_config(path: Path, key: str | None = None) -> TrainConfig:
    try:
        data = yaml.safe_load(path.read_text())
        return train_config_from_dict(data[key] if key else data)  # imports the run's plugins first
    except (OSError, yaml.YAMLError, ConfigError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a run config: {str(exc).splitlines()[0] if str(exc) else exc!r}") from exc


def run_config(run_dir: Path) -> TrainConfig:
    if not run_dir.is_dir():
        raise ValueError(f"no such run directory: {run_dir}")
    if not (run_dir / "config.yaml").is_file():
        raise ValueError(f"{run_dir} is not a run directory (no config.yaml)")
    return _read_config(run_dir / "config.yaml")


def saved_rollout_paths(run_dir: Path) -> list[Path]:
    """The run's saved rollout samples, in step order (names are step-<6 digits>.pt)."""
    return sorted((run_dir / "rollouts").glob("step-*.pt"))


def run_policy_dir(run_dir: Path, cfg: TrainConfig) -> Path | None:
    """The run's final policy, else its warm start (`run_warm_start_dir`)."""
    final = run_dir / "final_policy"
    return final if is_model_dir(final) else run_warm_start_dir(run_dir, cfg)


def run_warm_start_dir(run_dir: Path, cfg: TrainConfig) -> Path | None:
    """The run's own warm start, else the `run.init_from` it branched from; None when neither is a model."""
    candidates = [run_dir / "warm_start"] + ([Path(cfg.run.init_from)] if cfg.run.init_from else [])
    return next((p for p in candidates if is_model_dir(p)), None)


def named_policy_dir(run_dir: Path, cfg: TrainConfig, name: str) -> Path:
    """`<run>/<name>`; for "warm_start" the run's own warm start, else the `run.init_from` it branched from
    (`<run>/warm_start` when neither is a model, for the caller's "not found")."""
    if name == "warm_start":
        return run_warm_start_dir(run_dir, cfg) or run_dir / name
    return run_dir / name


def load_for_play(run_dir: Path, cfg: TrainConfig, name: str) -> tuple[Policy, TransformersEngine]:
    """The run's `name` policy (`named_policy_dir`) in eval mode, and an engine that plays it at the run's
    `rollout.max_batch_size`, on the CPU, with torch pinned to the run's `run.threads` (0: all cores); a run
    trained with `run.device=cuda` is read here too."""
    pin_threads(cfg)
    policy = Policy.load(named_policy_dir(run_dir, cfg, name))
    policy.lm.eval()
    return policy, TransformersEngine(policy.lm, policy.pad_token_id, cfg.rollout.max_batch_size,
                                   sample_dtype=SAMPLER_DTYPES[cfg.rollout.sampler_dtype])


def config_near_policy(policy_dir: Path) -> TrainConfig | None:
    """The run config saved with a policy directory: `<run>/config.yaml` beside a run's final_policy or
    warm_start, else the config inside `warm_start.yaml`; None for any other model directory."""
    if (policy_dir.parent / "config.yaml").is_file() and policy_dir.name in ("final_policy", "warm_start"):
        return _read_config(policy_dir.parent / "config.yaml")
    if (policy_dir / "warm_start.yaml").is_file():
        return _read_config(policy_dir / "warm_start.yaml", "config")
    return None

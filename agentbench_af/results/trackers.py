"""Experiment trackers (`run.report_to`): the same per-step metrics as metrics.jsonl, through the libraries.

    trackers = open_trackers(cfg, run_dir)   # before the first step (nothing when report_to is empty)
    trackers.log(row)                        # each metrics row, as appended to metrics.jsonl
    trackers.close()

A row's numbers are flattened with `/` (`eval/success`, `tokens_by_role/action`) and logged at
`row["step"]`. `tensorboard` writes event files with torch's `SummaryWriter` to `<run_dir>/tensorboard`
(extra `tensorboard`); `wandb` runs offline (no network; `wandb sync <run_dir>/wandb/offline-run-*`
uploads later) in `<run_dir>/wandb`, with the run's config (extra `wandb`). A missing library is a
one-line ImportError naming the extra, raised before any training. metrics.jsonl stays the source of
the records; a tracker never feeds them.
Left out: MLflow, Comet and other trackers; logging media (histograms, rollouts, plots).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol


class Tracker(Protocol):
    def log(self, metrics: dict[str, float], step: int) -> None: ...

    def close(self) -> None: ...


def flatten_metrics(row: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """Numbers of a metrics row (nested mappings joined with `/`); the step, text and None are left out."""
    out: dict[str, float] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten_metrics(value, f"{name}/"))
        elif isinstance(value, (bool, int, float)) and name != "step" and math.isfinite(float(value)):
            out[name] = float(value)
    return out


def _require(module: str, extra: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"run.report_to: {extra} needs {exc.name}: pip install 'agentbench-af[{extra}]'") from exc


class TensorBoardTracker:
    def __init__(self, log_dir: Path) -> None:
        _require("tensorboard", "tensorboard")
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(log_dir))

    def log(self, metrics: dict[str, float], step: int) -> None:
        for name, value in metrics.items():
            self.writer.add_scalar(name, value, global_step=step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbTracker:
    def __init__(self, run_dir: Path, name: str, run_id: str, config: dict[str, Any]) -> None:
        wandb = _require("wandb", "wandb")
        run_dir.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(mode="offline", dir=str(run_dir), project="agentbench-af", name=name, id=run_id,
                              resume="allow", config=config)

    def log(self, metrics: dict[str, float], step: int) -> None:
        self.run.log(metrics, step=step)

    def close(self) -> None:
        self.run.finish()


class Trackers:
    """The trackers of one run; `log` takes a metrics row as written to metrics.jsonl."""

    def __init__(self, trackers: list[Tracker]) -> None:
        self.trackers = trackers

    def log(self, row: Mapping[str, Any]) -> None:
        if not self.trackers:
            return
        metrics, step = flatten_metrics(row), int(row["step"])
        for tracker in self.trackers:
            tracker.log(metrics, step)

    def close(self) -> None:
        for tracker in self.trackers:
            tracker.close()


def open_trackers(cfg, run_dir: Path) -> Trackers:
    """Start the trackers `cfg.run.report_to` names (a `TrainConfig`), writing under `run_dir`."""
    from agentbench_af.config import config_hash, to_dict

    trackers: list[Tracker] = []
    for name in cfg.run.report_to:
        if name == "tensorboard":
            trackers.append(TensorBoardTracker(Path(run_dir) / "tensorboard"))
        elif name == "wandb":
            run_id = f"{config_hash(cfg)}-s{cfg.run.seed}"  # stable: a resumed run continues the same W&B run
            trackers.append(WandbTracker(Path(run_dir), cfg.run_name, run_id, to_dict(cfg)))
        else:  # RunConfig validates the names; a new tracker must be added here
            raise ValueError(f"run.report_to: unknown tracker {name!r}")
    return Trackers(trackers)

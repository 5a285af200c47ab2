"""Atomic training checkpoints: model, optimizer, scheduler and RNG states, plus the loop position.

A checkpoint is one file of tensors and plain data (`tensor_files`), written atomically, so a run
killed while saving keeps its previous checkpoint, and read with `weights_only=True`, so a planted
file cannot run code. RNG states are stored as plain data (numpy's key as a list of ints) and restore
exactly. `latest` is whichever `ckpt-<step>.pt` has the highest step; older ones are pruned to `keep`.
Left out: sharded or distributed checkpoints.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agentbench_af.results.tensor_files import UnsafeFileError, load_tensor_file, save_tensor_file


@dataclass
class TrainState:
    step: int  # updates completed (RL updates, or SFT steps for a warm start's checkpoint)
    model: dict[str, Any]
    optimizer: dict[str, Any]
    scheduler: dict[str, Any] | None
    extra: dict[str, Any]  # loop bookkeeping: token counts, curve, wall time so far (SFT: loss, sampler)


def rng_states() -> dict[str, Any]:
    return {
        "python": random.getstate(),
        "numpy": _numpy_state(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }


def _numpy_state() -> dict[str, Any]:
    """numpy's global MT19937 state as plain data (the key array as a list of ints)."""
    name, key, pos, has_gauss, gauss = np.random.get_state()
    return {"name": str(name), "key": [int(k) for k in key], "pos": int(pos), "has_gauss": int(has_gauss),
            "gauss": float(gauss)}


def _numpy_state_tuple(state: dict[str, Any]) -> tuple:
    return (state["name"], np.asarray(state["key"], dtype=np.uint32), state["pos"], state["has_gauss"], state["gauss"])


def restore_rng_states(states: dict[str, Any]) -> None:
    random.setstate(states["python"])
    np.random.set_state(_numpy_state_tuple(states["numpy"]))
    torch.set_rng_state(states["torch"])
    if states.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(states["cuda"])


def write_state(path: Path, state: TrainState) -> Path:
    """Write `state` and the current RNG states to `path` atomically (read back by `load_checkpoint`)."""
    payload = {
        "step": state.step,
        "model": state.model,
        "optimizer": state.optimizer,
        "scheduler": state.scheduler,
        "extra": state.extra,
        "rng": rng_states(),
    }
    return save_tensor_file(payload, path)


def save_checkpoint(run_dir: Path, state: TrainState, keep: int = 2) -> Path:
    ckpt_dir = Path(run_dir) / "checkpoints"
    path = write_state(ckpt_dir / f"ckpt-{state.step:06d}.pt", state)
    for old in sorted(ckpt_dir.glob("ckpt-*.pt"))[:-keep]:
        old.unlink(missing_ok=True)
    return path


def latest_checkpoint(run_dir: Path) -> Path | None:
    found = sorted((Path(run_dir) / "checkpoints").glob("ckpt-*.pt"))
    return found[-1] if found else None


def load_checkpoint(path: Path) -> tuple[TrainState, dict[str, Any]]:
    payload = load_tensor_file(path)
    if not isinstance(payload, dict) or not {"step", "model", "optimizer", "scheduler", "extra", "rng"} <= set(payload):
        raise UnsafeFileError(f"cannot read {path}: not a checkpoint written by agentbench-af")
    state = TrainState(payload["step"], payload["model"], payload["optimizer"], payload["scheduler"], payload["extra"])
    return state, payload["rng"]

"""Shared helpers: a tiny run config whose RL steps change the weights, and the check that they did."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file
from train_helpers import tiny_config, tiny_overrides

# 4 RL steps at lr 1e-3 from the 30-step warm start: at least one step has a non-zero gradient
RUN = {"rl__steps": 4, "run__checkpoint_every": 2, "eval__every": 2, "method": "grpo+actfocus",
       "credit__energy_source": "entropy"}


def run_overrides(out_dir: Path, warm_start: Path, **extra) -> list[str]:
    return tiny_overrides(out_dir, **{**RUN, "run__init_from": str(warm_start), "run__name": "run", **extra})


def run_config(out_dir: Path, warm_start: Path, **extra):
    return tiny_config(out_dir, **{**RUN, "run__init_from": str(warm_start), "run__name": "run", **extra})


def assert_parameters_changed(policy_dir: Path, warm_start: Path) -> None:
    """The run's policy differs from its warm start: its updates did something."""
    after = load_file(str(Path(policy_dir) / "model.safetensors"))
    before = load_file(str(Path(warm_start) / "model.safetensors"))
    assert after.keys() == before.keys()
    assert any(not torch.equal(after[k], before[k]) for k in after), "no parameter changed"


def cli(args: list[str], **kwargs) -> subprocess.Popen:
    """`agentbench-af ARGS` in a fresh process (one torch thread)."""
    cmd = [sys.executable, "-c", "from agentbench_af.cli import app; app()", *args]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)

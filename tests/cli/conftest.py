"""Fixtures for the CLI tests: a tiny finished FrozenLake run with saved rollout samples (seconds)."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))  # the shared tiny-run helpers

from train_helpers import frozenlake_warm_start, tiny_config  # noqa: E402

from agentbench_af.train.loop import train  # noqa: E402


@pytest.fixture(scope="session")
def cli_warm_start(tmp_path_factory) -> Path:
    """A FrozenLake policy SFT'd for 30 steps (rewards vary between its rollouts)."""
    return frozenlake_warm_start(tmp_path_factory.mktemp("cli-warm"))


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory, cli_warm_start) -> Path:
    """A finished 2-step grpo run branched from `cli_warm_start`, saving rollouts at steps 1 and 2."""
    torch.set_num_threads(1)
    cfg = tiny_config(tmp_path_factory.mktemp("cli-run"), run__init_from=str(cli_warm_start), run__name="run",
                      run__save_rollouts_every=1)
    train(cfg, show_progress=False)
    return Path(cfg.run.out_dir) / "run"

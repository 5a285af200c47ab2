"""Fixtures for the reliability tests: one thread, and a FrozenLake warm start whose RL updates move weights."""

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "train"))  # the shared tiny-run helpers

from train_helpers import frozenlake_warm_start  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def warm_start(tmp_path_factory) -> Path:
    """A FrozenLake policy SFT'd for 30 steps: rewards vary between its rollouts, so updates have gradients."""
    return frozenlake_warm_start(tmp_path_factory.mktemp("reliability-warm"))

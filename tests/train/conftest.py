import pytest
import torch
from train_helpers import frozenlake_warm_start


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def warm_start(tmp_path_factory):
    """Path of a shared SFT'd FrozenLake warm start (use as run.init_from)."""
    return frozenlake_warm_start(tmp_path_factory.mktemp("warm"))

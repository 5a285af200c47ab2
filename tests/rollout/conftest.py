import pytest
import torch
from rollout_helpers import tiny_policy

from agentbench_af.models.policy import Policy


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def policy_for():
    return tiny_policy


@pytest.fixture(scope="session")
def frozenlake_policy() -> Policy:
    return tiny_policy("FrozenLake-4x4-v0")

import json

import pytest
import torch
from sweep_helpers import TINY_BASE, fake_record


@pytest.fixture(scope="session", autouse=True)
def _one_thread():
    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _clean_checkout(monkeypatch):
    """`reproduce` refuses a checkout with uncommitted changes; tests run in one while it is being edited."""
    from agentbench_af.sweep import reproduce

    monkeypatch.setattr(reproduce, "git_commit", lambda: "0" * 40)


@pytest.fixture
def tiny_base() -> dict:
    return json.loads(json.dumps(TINY_BASE))


@pytest.fixture
def fake_train(monkeypatch):
    """Patch loop.train (serial backend runs in this process) to record calls and write completed records."""
    from agentbench_af.train import loop

    calls: list = []

    def train(cfg, resume=False, show_progress=True):
        calls.append(cfg)
        return fake_record(cfg, 0.25 * (cfg.run.seed + 1))

    monkeypatch.setattr(loop, "train", train)
    return calls

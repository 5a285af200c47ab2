import pytest
import torch

from agentbench_af.models.corpus import environment_corpus
from agentbench_af.models.tokenizer import build_tokenizer


@pytest.fixture(scope="session", autouse=True)
def _few_threads():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def corpus() -> list[str]:
    return environment_corpus(["FrozenLake-4x4-v0"], episodes_per_env=60, seed=0)


@pytest.fixture(scope="session")
def tok(corpus):
    return build_tokenizer(corpus)

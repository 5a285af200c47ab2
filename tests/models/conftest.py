import pytest
import torch

from agentbench_af.formats.roles import Role
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


@pytest.fixture(scope="session")
def expected_roles():
    """An independent oracle for `token_roles` on a clean response: each id's decoded piece is located
    in `response` by its character offsets and takes the span holding most of its characters (ties:
    action, reasoning, format); tag characters are format. `prefix`: text before the response."""

    def roles(tok, ids, response, prefix=""):
        response = prefix + response  # text forced into the prompt (e.g. "<think>") opens a span
        kind = [Role.FORMAT] * len(response)
        for open_tag, close_tag, role in (("<think>", "</think>", Role.REASONING), ("<answer>", "</answer>", Role.ACTION)):
            start = response.find(open_tag)
            if start < 0:
                continue
            start += len(open_tag)
            end = response.find(close_tag, start)
            for c in range(start, len(response) if end < 0 else end):
                kind[c] = role
        out, pos = [], len(prefix)
        for i in ids:
            piece = tok.decode([i])
            assert response.startswith(piece, pos), (piece, pos)
            span = kind[pos : pos + len(piece)]
            pos += len(piece)
            counts = {r: span.count(r) for r in (Role.ACTION, Role.REASONING, Role.FORMAT)}
            out.append(max(counts, key=lambda r: counts[r]))  # dict order breaks ties: action first
        assert pos == len(response)
        return out

    return roles

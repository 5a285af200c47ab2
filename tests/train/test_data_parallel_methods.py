"""Two gloo ranks, each on its half of the prompts of a synthetic batch, compute the advantages, token
weights and policy-loss gradient of one process on the whole batch, for every registered estimator,
weighting and policy loss (the built-ins and two test plugins that take a batch statistic), with no
special case per name. The per-rank statistic without the reduction differs (the check can fail)."""

from __future__ import annotations

import pickle
import socket

import pytest
import torch
import torch.multiprocessing as mp
from dp_methods import methods, reference, share

from agentbench_af.credit import CreditConfig, compute_token_weights
from agentbench_af.credit.reduce import LOCAL, using_reduce
from agentbench_af.train.distributed.ranks import Ranks
from tests.credit.batch_factory import random_batch


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def batch():
    return random_batch(11, n_groups=4, max_group_size=3, max_turns=3)


@pytest.fixture(scope="module")
def results(batch, tmp_path_factory):
    from dp_methods import rank_main

    work = tmp_path_factory.mktemp("dpm")
    data = work / "batch.pkl"
    data.write_bytes(pickle.dumps(batch))
    mp.spawn(rank_main, args=(2, _free_port(), str(data), str(work)), nprocs=2, join=True)
    return reference(batch), [torch.load(work / f"rank-{r}.pt", weights_only=False) for r in range(2)]


NAMES = [name for name, _, _ in methods()]


@pytest.mark.parametrize("name", NAMES)
def test_two_ranks_equal_one_process(name, results):
    ref, ranks = results
    for rank in ranks:
        rows = rank["rows"]["rows"]
        for key in ("advantages", "weights", "grad"):
            want, got = ref[name][key][rows], rank[name][key]
            assert torch.allclose(got, want, atol=1e-5, rtol=1e-4), (name, key, float((got - want).abs().max()))
    moved = ref[name]["grad"].abs().max()
    assert moved > 0, f"{name}: the loss must have a gradient for the comparison to mean anything"


def test_the_plugins_statistic_is_per_rank_without_the_reduction(batch, results):
    ref, _ = results
    part, rows = share(batch, Ranks(0, 2, 0))
    with using_reduce(LOCAL):  # what a rank would compute on its own share
        alone = compute_token_weights(part, CreditConfig(weighting="test-dp-entropy-share"))
    assert not torch.allclose(alone, ref["weighting-test-dp-entropy-share"]["weights"][rows], atol=1e-3)

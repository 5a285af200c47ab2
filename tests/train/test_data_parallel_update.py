"""Two gloo ranks, each updating on its half of the prompts of a fixed batch, end with the parameters of one
process updating on the whole batch (DDP and FSDP2; GRPO, GRPO+ActFocus, top-entropy, PPO with each critic;
every loss aggregation; KL and entropy terms; a policy loss with batch statistics: clip-cov; gspo,
sapo, steer, stapo and the empg estimator; Lopti's two passes; AEPO's loss; every registered method on synthetic tensors:
test_data_parallel_methods), and the naive per-rank mean does not (the check can fail)."""

from __future__ import annotations

import pickle
import socket

import pytest
import torch
import torch.multiprocessing as mp
from dp_helpers import Case, rank_main, reference
from train_helpers import FROZENLAKE

from agentbench_af.models.policy import Policy
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train.distributed.ranks import Ranks, ranks_from_env, share

GROUP = 2
CASES = [
    Case("grpo"),
    Case("grpo-actfocus", weighting="actfocus", credit={"energy_lambda": 1.0, "alpha": 0.5}),
    Case("grpo-actfocus-seq-mean-token-mean", weighting="actfocus", agg="seq-mean-token-mean"),
    Case("grpo-actfocus-seq-mean-token-sum", weighting="actfocus", agg="seq-mean-token-sum"),
    Case("grpo-top-entropy", weighting="top-entropy"),
    Case("grpo-kl-entropy", kl_coef=0.1, entropy_coef=0.01),
    Case("grpo-steer-gspo", weighting="steer", loss={"policy": "gspo"}),
    Case("grpo-clip-cov", loss={"policy": "clip-cov", "clip_cov_ratio": 0.05, "cov_clip_low": 0.2}),
    # kl-cov is left to test_data_parallel_methods: on-policy, log r is rounding noise around 0 here, and
    # the gradient of its |log r| penalty is the sign of that noise (+-1), which differs between any two
    # forward passes of different padding
    Case("empg-stapo-sapo", estimator="empg", weighting="stapo", loss={"policy": "sapo"}),
    Case("grpo-ar-lopti", weighting="ar", lopti=0.5),  # two optimizer steps, the second off-policy
    Case("grpo-aepo-aepo", weighting="aepo", loss={"policy": "aepo"}),
    Case("ppo-shared-lopti", estimator="gae", critic="shared", lopti=0.5),
    Case("ppo-detached", estimator="gae", critic="detached"),
    Case("ppo-shared-seq-mean-token-sum", estimator="gae", critic="shared", agg="seq-mean-token-sum"),
    Case("ppo-separate", estimator="gae", critic="separate"),
    Case("fsdp2-grpo-actfocus", weighting="actfocus", strategy="fsdp2"),
    Case("fsdp2-ppo-separate", estimator="gae", critic="separate", strategy="fsdp2"),
    Case("naive-grpo", synced=False),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def updates(warm_start, tmp_path_factory):
    """(one-process results, [rank 0's, rank 1's]) for every case."""
    policy = Policy.load(warm_start)
    engine = TransformersEngine(policy.lm, policy.pad_token_id)
    torch.manual_seed(0)
    trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, FROZENLAKE, [1, 2, 3, 4],
                             RolloutConfig(group_size=GROUP, max_new_tokens=48))
    work = tmp_path_factory.mktemp("dp")
    data = work / "data.pkl"
    data.write_bytes(pickle.dumps({"warm_start": str(warm_start), "trajs": trajs, "group_size": GROUP, "cases": CASES}))
    mp.spawn(rank_main, args=(2, _free_port(), str(data), str(work)), nprocs=2, join=True)
    ranks = [torch.load(work / f"rank-{r}.pt", weights_only=False) for r in range(2)]
    return reference(str(warm_start), trajs, GROUP, CASES), ranks


def _gaps(case: str, updates) -> dict[str, tuple[float, float]]:
    """Per module (lm, value_head, critic): (max |two ranks - one process|, max |one process - before|)."""
    ref, ranks = updates
    out = {}
    for module in ("lm", "value_head", "critic"):
        keys = [k for k in ref[case] if k.startswith(module + ".")]
        if keys:
            out[module] = (max(float((ranks[0][case][k] - ref[case][k]).abs().max()) for k in keys),
                           max(float((ref[case][k] - ref[case]["init." + k]).abs().max()) for k in keys))
    return out


@pytest.mark.parametrize("case", [c.name for c in CASES if c.synced])
def test_two_ranks_on_halves_equal_one_process_on_the_whole_batch(case, updates):
    ref, ranks = updates
    gaps = _gaps(case, updates)
    assert ("value_head" in gaps or "critic" in gaps) == case.startswith(("ppo", "fsdp2-ppo"))
    for module, (gap, step) in gaps.items():
        assert step > 1e-3, f"{module}: the update must move it for the comparison to mean anything"
        assert gap <= 1e-4 * step + 1e-7, (module, gap, step)
    for k in ranks[0][case]:  # both ranks hold the same weights (and metrics) after the step
        assert torch.allclose(ranks[0][case][k], ranks[1][case][k], atol=1e-7), k
    for name in ("metric.pg_loss", "metric.value_loss", "metric.grad_norm", "metric.critic_grad_norm"):
        assert (name in ref[case]) == (name in ranks[0][case])
        if name in ref[case]:
            assert float(ranks[0][case][name]) == pytest.approx(float(ref[case][name]), rel=1e-4, abs=1e-5), name


def test_the_per_rank_mean_without_global_denominators_differs(updates):
    gap, step = _gaps("naive-grpo", updates)["lm"]
    assert gap > 1e-3 * step, (gap, step)


def test_share_splits_prompts_in_contiguous_blocks():
    prompts = list(range(8))
    assert [share(prompts, Ranks(r, 2, r)) for r in range(2)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert sum((share(prompts, Ranks(r, 4, r)) for r in range(4)), []) == prompts
    with pytest.raises(ValueError, match="do not split evenly over 3 processes"):
        share(prompts, Ranks(0, 3, 0))


def test_ranks_come_from_torchrun_variables():
    assert ranks_from_env({}) == Ranks(0, 1, 0)
    assert ranks_from_env({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}) == Ranks(3, 4, 1)
    with pytest.raises(ValueError, match="bad torchrun ranks"):
        ranks_from_env({"RANK": "4", "WORLD_SIZE": "4"})

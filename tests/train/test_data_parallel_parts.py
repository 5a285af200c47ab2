"""The pieces of data parallelism worked out by hand on one process: loss denominators, whitening,
evaluation seed blocks and merged counts, the world-size check, and gathering ranks' batches into the
one-process batch."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from train_helpers import FROZENLAKE, tiny_config

from agentbench_af.credit.reduce import LOCAL, whiten
from agentbench_af.evaluate.evaluate import EvalCounts
from agentbench_af.models.policy import Policy
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.concat import concat_batches
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig
from agentbench_af.train.distributed.data_parallel import DataParallel, TrainModules
from agentbench_af.train.distributed.evaluation import seed_block
from agentbench_af.train.distributed.ranks import (
    SINGLE,
    Ranks,
    UpdateSync,
    broadcast_from_main,
    check_world,
    rank_seed,
    reduce_metrics,
)

MASK = torch.tensor([[1, 1, 0], [1, 0, 0], [0, 0, 0]], dtype=torch.bool)


def test_one_process_denominators_are_the_batch_counts():
    sync = UpdateSync(SINGLE)
    assert float(sync.denominator(MASK, "token-mean")) == 3.0  # tokens
    assert float(sync.denominator(MASK, "seq-mean-token-mean")) == 2.0  # rows with a token
    assert float(sync.denominator(torch.zeros_like(MASK), "token-mean")) == 1.0  # never 0
    assert [c.tolist() for c in sync.split(torch.arange(5), 2)] == [[0, 1, 2], [3, 4]]
    with pytest.raises(ValueError, match="rl.minibatches=6 but a rank holds only 5 samples"):
        sync.split(torch.arange(5), 6)


class _WithAnotherShare:
    """A reduction whose sum adds another share's [count, sum, sum of squares] (whiten's one statistic)."""

    def __init__(self, other: torch.Tensor) -> None:
        o = other.double()
        self.stats = torch.stack([o.new_tensor(float(o.numel())), o.sum(), (o * o).sum()])

    def sum(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.stats


def test_whiten_on_one_process_and_over_two_shares():
    values = torch.tensor([[1.0, 2.0, 9.0], [3.0, 7.0, 7.0], [5.0, 5.0, 5.0]])
    # 1, 2, 3: mean 2, Bessel variance 1 -> -1, 0, 1 (over sqrt(1 + 1e-8))
    assert whiten(values[MASK], reduce=LOCAL).tolist() == pytest.approx([-1.0, 0.0, 1.0], abs=1e-6)
    assert whiten(torch.tensor([4.0]), reduce=LOCAL).tolist() == [0.0]  # a single entry has no variance
    # shares [1, 2] and [3, 6]: mean 3, Bessel variance (4 + 1 + 0 + 9) / 3 = 14 / 3 -> (x - 3) / 2.160247
    mine = whiten(torch.tensor([1.0, 2.0]), reduce=_WithAnotherShare(torch.tensor([3.0, 6.0])))  # type: ignore[arg-type]
    assert mine.tolist() == pytest.approx([-0.9258201, -0.4629100], abs=1e-6)


def test_seed_blocks_cover_the_seeds_once():
    seeds = list(range(100, 107))
    blocks = [seed_block(seeds, Ranks(r, 3, r)) for r in range(3)]
    assert blocks == [[100, 101, 102], [103, 104], [105, 106]]
    assert seed_block(seeds, SINGLE) == seeds
    assert [seed_block([1], Ranks(r, 2, r)) for r in range(2)] == [[1], []]


def test_merged_counts_are_the_whole_evaluation():
    parts = [EvalCounts(episodes=3, successes=2, reward=1.5, turns=9, valid=6, effective=3),
             EvalCounts(episodes=2, successes=0, reward=-1.0, turns=11, valid=4, effective=4)]
    result = sum(parts, EvalCounts()).result()  # what evaluate_on_ranks does with the ranks' counts
    assert result.episodes == 5 and result.success == pytest.approx(2 / 5)
    assert result.mean_reward == pytest.approx(0.5 / 5) and result.mean_turns == pytest.approx(20 / 5)
    assert result.valid_rate == pytest.approx(10 / 20) and result.effective_rate == pytest.approx(7 / 20)
    assert EvalCounts().result().success == 0.0  # no episodes: rates of 0, not a division by zero


def test_rank_seeds_and_one_process_metrics():
    assert rank_seed(1234, SINGLE) == 1234 and rank_seed(1234, Ranks(0, 2, 0)) == 1234
    assert len({rank_seed(1234, Ranks(r, 4, r)) for r in range(4)}) == 4
    assert reduce_metrics({"pg_loss": 0.5, "ratio_max": 2.0}, SINGLE) == {"pg_loss": 0.5, "ratio_max": 2.0}


def test_broadcast_from_main_returns_rank_0s_object_and_needs_one():
    assert broadcast_from_main({"a": 1}, SINGLE, "summary") == {"a": 1}
    with pytest.raises(RuntimeError, match="no warm start"):
        broadcast_from_main(None, SINGLE, "warm start")


def test_data_parallel_reads_modules_after_wrap_and_loads_every_trained_module():
    parallel = DataParallel(SINGLE, "ddp", torch.device("cpu"))
    with pytest.raises(RuntimeError, match="wrap"):
        parallel.model_state()
    lm, head = torch.nn.Linear(2, 2), torch.nn.Linear(2, 1)
    assert parallel.wrap(TrainModules(lm, value_head=head)).named() == {"lm": lm, "value_head": head}
    state = parallel.model_state()
    assert set(state) == {"lm", "value_head"}
    with pytest.raises(ValueError, match="value_head"):
        parallel.load_model_state({"lm": state["lm"], "value_head": None})
    zero = {k: torch.zeros_like(v) for k, v in state["value_head"].items()}
    parallel.load_model_state({"lm": state["lm"], "value_head": zero})
    assert float(head.weight.detach().abs().sum()) == 0.0


def test_the_world_size_must_divide_the_prompts(tmp_path):
    cfg = tiny_config(tmp_path, rl__prompts_per_step=4)
    check_world(cfg, SINGLE)
    check_world(cfg, Ranks(0, 4, 0))
    with pytest.raises(ValueError, match=r"rl.prompts_per_step=4 does not split evenly over 3 processes"):
        check_world(cfg, Ranks(0, 3, 0))
    with pytest.raises(ValueError, match=r"rl.minibatches=9 is more than the 2 x 4 rollouts"):
        check_world(tiny_config(tmp_path, rl__prompts_per_step=4, rl__minibatches=9), Ranks(0, 2, 0))


@pytest.mark.parametrize("mode", ["full", "window"])
def test_ranks_batches_concatenate_to_the_one_process_batch(warm_start, mode):
    policy = Policy.load(warm_start)
    torch.manual_seed(0)
    trajs = collect_rollouts(TransformersEngine(policy.lm, policy.pad_token_id), policy.tokenizer, policy.chat,
                             FROZENLAKE, [1, 2, 3], RolloutConfig(group_size=2, max_new_tokens=48, context_mode=mode))
    pad = policy.pad_token_id
    whole = trajectories_to_batch(trajs, mode, pad)
    # rank 1 collects prompts 2 and 3 as its own groups 0 and 1
    second = [dataclasses.replace(t, group=t.group - 1) for t in trajs[2:]]
    halves = [trajectories_to_batch(trajs[:2], mode, pad), trajectories_to_batch(second, mode, pad)]
    joined = concat_batches(halves, pad)
    for name, value in vars(whole).items():
        other = getattr(joined, name)
        assert (value is None) == (other is None), name
        if value is not None:
            assert value.dtype == other.dtype and torch.equal(value, other), name
    assert math.isclose(float(joined.traj_return.sum()), sum(t.total_reward for t in trajs), abs_tol=1e-5)

"""Hand-worked checks of the per-step health metrics (`agentbench_af.train.bookkeeping.health`)."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import pytest
import torch

from agentbench_af.formats.roles import Role
from agentbench_af.train.bookkeeping.health import (
    group_stats,
    health_metrics,
    token_weight_metrics,
    z_of_flagged,
)
from tests.credit.batch_factory import SampleSpec, build_batch


def _batch():
    samples = [
        SampleSpec(0, "prraf", entropy=[0, 1.0, 2.0, 0.5, 0.1], logprobs=[0, -1, -1, -2, -0.5],
                   ref_logprobs=[0, -1.5, -0.5, -1, -0.5]),
        SampleSpec(1, "pra", entropy=[0, 3.0, 1.5], logprobs=[0, -1, -3], ref_logprobs=[0, -2, -3]),
        SampleSpec(2, "pa", entropy=[0, 0.0], logprobs=[0, -0.2], ref_logprobs=[0, -0.2]),
        SampleSpec(3, "pa", entropy=[0, 1.0], logprobs=[0, -0.4], ref_logprobs=[0, -0.1]),
    ]
    return build_batch(samples, traj_group=[0, 0, 1, 1], traj_return=[1.0, 0.0, -0.5, -0.5],
                       traj_success=[True, False, False, False])


def _trajs():
    def turn(valid: bool, n: int):
        return SimpleNamespace(valid=valid, response_ids=[7] * n)
    return [SimpleNamespace(turns=[turn(True, 3), turn(True, 1)]), SimpleNamespace(turns=[turn(False, 2)]),
            SimpleNamespace(turns=[turn(True, 1)]), SimpleNamespace(turns=[turn(False, 1)])]


def test_health_metrics_by_hand():
    m = health_metrics(_batch(), _trajs())
    # entropy: reasoning (1 + 2 + 3) / 3; action (0.5 + 1.5 + 0 + 1) / 4; format 0.1
    assert m["health/entropy_reasoning"] == pytest.approx(2.0)
    assert m["health/entropy_action"] == pytest.approx(0.75)
    assert m["health/entropy_format"] == pytest.approx(0.1)
    # log pi_old - log pi_warm: r 0.5, -0.5, 1; a -1, 0, 0, -0.3; f 0 -> all -0.3 / 8
    assert m["health/kl_warm"] == pytest.approx(-0.0375)
    assert m["health/kl_warm_reasoning"] == pytest.approx(1 / 3)
    assert m["health/kl_warm_action"] == pytest.approx(-0.325)
    assert m["health/kl_warm_format"] == pytest.approx(0.0)
    # group 1 has equal returns (-0.5, -0.5) and no success
    assert m["health/zero_adv_groups"] == 0.5 and m["health/no_success_groups"] == 0.5
    # 2 invalid of 5 turns; 3 + 1 + 2 + 1 + 1 tokens over 5 turns
    assert m["health/invalid_rate"] == pytest.approx(0.4)
    assert m["health/tokens_per_turn"] == pytest.approx(1.6)
    # group 0 returns (1, 0): z = (+1, -1); trajectory 1 is the invalid one; group 1 has no spread
    assert m["health/z_invalid"] == pytest.approx(-1.0)


def test_kl_left_out_without_reference():
    batch = dataclasses.replace(_batch(), ref_logprobs=None)
    m = health_metrics(batch, _trajs())
    assert not any(k.startswith("health/kl_warm") for k in m)
    assert m["health/entropy_reasoning"] == pytest.approx(2.0)


def test_z_of_flagged_three_returns():
    # returns -0.5, -0.1, -0.3: mean -0.3, population std sqrt(0.08 / 3); the flagged one is +0.2 above
    z = z_of_flagged(torch.tensor([-0.5, -0.1, -0.3]), torch.tensor([4, 4, 4]), torch.tensor([False, True, False]))
    assert z == pytest.approx(math.sqrt(1.5))
    assert z_of_flagged(torch.tensor([1.0, 1.0]), torch.tensor([0, 0]), torch.tensor([True, False])) is None


def test_group_stats_all_groups_with_spread():
    out = group_stats(torch.tensor([0.0, 10.0, -0.1, -0.2]), torch.tensor([0, 0, 1, 1]),
                      torch.tensor([False, True, False, False]))
    assert out == {"zero_adv_groups": 0.0, "no_success_groups": 0.5}


def test_token_weight_metrics_by_hand():
    batch = _batch()
    # reasoning 0, action 2, format 0.5; prompt and padding 7 (not generated, so not counted)
    weights = torch.full(batch.roles.shape, 7.0)
    weights[batch.roles == Role.REASONING] = 0.0
    weights[batch.roles == Role.ACTION] = 2.0
    weights[batch.roles == Role.FORMAT] = 0.5
    m = token_weight_metrics(weights, batch)
    # generated: r r a f | r a | a | a -> (0 + 0 + 2 + 0.5 + 0 + 2 + 2 + 2) / 8, three of eight at 0
    assert m == {"health/weight_mean": pytest.approx(8.5 / 8), "health/weight_zero_share": pytest.approx(3 / 8)}
    empty = dataclasses.replace(batch, response_mask=torch.zeros_like(batch.response_mask))
    assert token_weight_metrics(weights, empty) == {}

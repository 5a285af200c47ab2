"""The example plugin's policy loss (`centred-clip`, examples/plugin): found through the entry point, right
on a hand-worked case, and trained two steps through the `train` CLI with `loss.policy=centred-clip`, with
nothing inside agentbench_af naming it."""

from __future__ import annotations

import json
import math
from importlib.metadata import entry_points

import pytest
import torch
from train_helpers import tiny_overrides  # tests/train, put on the path by conftest
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.plugins import CREDIT_GROUP
from agentbench_af.train.update.loss import LossConfig, policy_loss_terms


def test_entry_point_registers_the_policy_loss():
    assert "agentbench_lightsout.policy_loss" in {ep.value for ep in entry_points(group=CREDIT_GROUP)}
    cfg = LossConfig(policy="centred-clip")  # the lookup loads the installed plugins
    from agentbench_af.credit import POLICY_LOSSES

    assert POLICY_LOSSES[cfg.policy].fn.__module__ == "agentbench_lightsout.policy_loss"


def test_centred_clip_by_hand():
    # A = 2, 0, 1: batch mean 1, centred 1, -1, 0. r = 1.5, 1, 1 (eps 0.2): token 0 clipped at 1.2 with a
    # positive centred advantage: -1.2 and no gradient; token 1: -(-1) * 1 = 1, gradient +1; token 2: 0.
    # token-mean: (-1.2 + 1 + 0) / 3 = -0.066667; gradients 0, 1/3, 0
    lp = torch.tensor([[math.log(1.5), 0.0, 0.0]], requires_grad=True)
    mask = torch.ones(1, 3, dtype=torch.bool)
    loss, metrics = policy_loss_terms(lp, torch.zeros(1, 3), torch.tensor([[2.0, 0.0, 1.0]]), torch.ones(1, 3), mask,
                                      LossConfig(policy="centred-clip"))
    loss.backward()
    assert float(loss.detach()) == pytest.approx(-0.2 / 3, abs=1e-6)
    assert torch.allclose(lp.grad, torch.tensor([[0.0, 1 / 3, 0.0]]), atol=1e-6)
    assert metrics == {"advantage_mean": 1.0}


def test_train_cli_two_steps_with_the_plugin_policy_loss(tmp_path):
    overrides = tiny_overrides(tmp_path, method="grpo", run__name="cc", loss__policy="centred-clip")
    res = CliRunner().invoke(app, ["train", *overrides, "--quiet"])
    assert res.exit_code == 0, res.output
    record = json.loads((tmp_path / "cc" / "record.json").read_text())
    assert record["config"]["loss"]["policy"] == "centred-clip"
    rows = [json.loads(line) for line in (tmp_path / "cc" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert all(math.isfinite(r["pg_loss"]) for r in rows if "pg_loss" in r)
    assert any("pg_loss" in r for r in rows)

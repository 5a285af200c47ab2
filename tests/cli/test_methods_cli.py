"""`agentbench-af methods` lists every registered estimator, weighting and policy loss with its source."""

import json
from typing import get_args, get_type_hints

from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.credit import ADVANTAGE_ESTIMATORS, POLICY_LOSSES, TOKEN_WEIGHTINGS
from agentbench_af.train.config import RLConfig


def test_methods_table_and_json():
    runner = CliRunner()
    res = runner.invoke(app, ["methods"])
    assert res.exit_code == 0, res.output
    for name in [*ADVANTAGE_ESTIMATORS, *TOKEN_WEIGHTINGS, *POLICY_LOSSES]:
        assert name in res.output, name
    assert "GSPO, arXiv 2507.18071" in res.output and "Policy losses (loss.policy = <name>):" in res.output
    rows = json.loads(runner.invoke(app, ["methods", "--json"]).output)
    assert [r["name"] for r in rows["policy_losses"]] == list(POLICY_LOSSES)
    ppo = next(r for r in rows["estimators"] if r["name"] == "gae")
    assert ppo == {"name": "gae", "method": "ppo", "needs": "critic", "source": "GAE, arXiv 1506.02438; PPO, arXiv 1707.06347"}
    dr = next(r for r in rows["policy_losses"] if r["name"] == "dr-grpo")
    assert dr["agg"] == "seq-mean-token-sum" and dr["needs"] == ""
    assert next(r for r in rows["policy_losses"] if r["name"] == "aepo")["needs"] == "entropy"
    assert [r["name"] for r in rows["token_passes"]] == ["one", "lopti"] == list(get_args(get_type_hints(RLConfig)["token_passes"]))
    assert "Lopti, arXiv 2505.12929" in res.output
    assert all(r["source"] for table in rows.values() for r in table)

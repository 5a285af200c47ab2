"""Every method runs 2 RL steps end to end and writes a complete record (seconds per run)."""

import dataclasses
import json
import math

import pytest
from train_helpers import FROZENLAKE, REGISTERED_PAPER_ENVS, tiny_config

from agentbench_af.config import to_dict
from agentbench_af.io import read_jsonl
from agentbench_af.models.policy import Policy
from agentbench_af.results.record import RunRecord
from agentbench_af.results.rollout_store import load_rollouts
from agentbench_af.results.snapshot import bottleneck_snapshot
from agentbench_af.train.config import parse_method
from agentbench_af.train.loop import train

PAPER_METHODS = ("ppo", "grpo", "ppo+actfocus", "grpo+actfocus")
FROZENLAKE_EXTRA = ("rloo", "gigpo", "grpo+actfocus-reasoning-only", "grpo+action-only", "grpo+top-entropy")
CASES = [(env, m) for env in REGISTERED_PAPER_ENVS for m in PAPER_METHODS] + [(FROZENLAKE, m) for m in FROZENLAKE_EXTRA]
RECORD_KEYS = {f.name for f in dataclasses.fields(RunRecord)}


@pytest.mark.parametrize(("env_id", "method"), CASES, ids=[f"{e}-{m}" for e, m in CASES])
def test_method_runs_two_steps(tmp_path, warm_start, env_id, method):
    extra = {"run__init_from": str(warm_start)} if env_id == FROZENLAKE else {}
    cfg = tiny_config(tmp_path, env_id, method=method, **extra)
    record = train(cfg, show_progress=False)
    run_dir = tmp_path / cfg.run_name
    data = json.loads((run_dir / "record.json").read_text())
    assert set(data) == RECORD_KEYS
    assert data["status"] == "completed" and data["error"] is None
    assert data["env_id"] == env_id and data["method"] == method
    assert (data["config"]["credit"]["estimator"], data["config"]["credit"]["weighting"]) == parse_method(method)
    assert 0.0 <= data["final_success"] <= 1.0 and data["final_success"] == record.final_success
    assert [row["step"] for row in data["curve"]] == [0, 2]
    assert data["final_metrics"]["episodes"] == 4 and data["protocol"]["rl_steps"] == 2
    assert data["model_params"] > 0 and len(data["config_hash"]) == 12
    rows = read_jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    for row in rows[1:]:
        for key in ("pg_loss", "grad_norm", "approx_kl", "clip_frac", "rollout_success", "rollout_return"):
            assert math.isfinite(row[key]), key
        assert ("value_loss" in row) == method.startswith("ppo")
        assert row["response_tokens"] == sum(row["tokens_by_role"].values()) > 0
    assert sum(data["tokens_by_role"].values()) == sum(r["response_tokens"] for r in rows[1:])
    assert (run_dir / "final_policy" / "policy.json").exists()
    assert (run_dir / "checkpoints" / "ckpt-000002.pt").exists()
    if method.startswith("ppo"):  # GAE always has non-zero advantages (returns - values): a real update
        assert all(r["grad_norm"] > 0 for r in rows[1:])
    _check_bottleneck(data["bottleneck"], final_step=2)


def _check_bottleneck(field, final_step):
    """Warm start (step 0) and final snapshots, a ratio or None with its reason for `old` and `entropy`."""
    assert field["sources"] == ["old", "entropy"]
    for when, step in (("warm_start", 0), ("final", final_step)):
        snap = field[when]
        assert snap["step"] == step and snap["n_generated_tokens"] > 0
        assert 0 <= snap["n_groups_used"] <= snap["n_groups"] == 2
        for s in snap["sources"].values():
            assert (s["ratio"] is None) == (s["reason"] is not None)
            if snap["n_groups_used"] == 0:
                assert s["reason"] == "no group with reward variance (2 groups)"
            elif s["ratio"] is not None:
                assert math.isclose(s["ratio"], s["action_signal_share"] / s["action_token_share"])
            assert set(s["pearson"]) == {"reasoning", "action", "format"}
        h = snap["headline"]  # measured with the policy of the moment: a ratio, or None with its reason
        assert (h["ratio"] is None) == (h["reason"] is not None)
        if snap["n_groups_used"] == 0:
            assert h["reason"] == "no group with reward variance (2 groups)"
        else:
            assert h["n_groups_measured"] == snap["n_groups_used"] and set(h["roles"]) == {"action", "reasoning"}


def test_warm_start_bottleneck_is_the_first_batch(tmp_path, warm_start):
    """The record's warm-start figure is the diagnostic of step 1's batch (saved: every group of it)."""
    cfg = tiny_config(tmp_path, method="grpo", run__init_from=str(warm_start), run__save_rollouts_every=1,
                      rl__prompts_per_step=4, rollout__group_size=4)
    record = train(cfg, show_progress=False)
    _, first = load_rollouts(tmp_path / cfg.run_name / "rollouts" / "step-000001.pt")
    policy = Policy.load(warm_start)  # the headline's gradients are the warm-start policy's
    expected = bottleneck_snapshot(first, 0, lm=policy.lm, temperature=cfg.rollout.temperature,
                                   format_role=cfg.credit.format_role, settings=to_dict(cfg.diagnostic)).to_dict()
    assert record.bottleneck["warm_start"] == expected and expected["headline"]["roles"]
    assert record.bottleneck["final"]["step"] == 2 and record.bottleneck["final"]["n_groups"] == 4

"""The neighbourhood's methods and the policy losses train 2 RL steps end to end through `train` (seconds per
run), each pair a `method` and a `loss.policy` (Lopti and dynamic sampling with one of them), and the
record keeps the policy loss."""

import json
import math

import pytest
from train_helpers import tiny_config

from agentbench_af.io import read_jsonl
from agentbench_af.train.loop import train

CASES = [
    ("empg+steer", {"loss__policy": "clip-cov"}),
    ("grpo+stapo", {"loss__policy": "sapo"}),
    ("rloo+carl", {"loss__policy": "cispo"}),
    ("grpo+grpo-s", {"loss__policy": "gspo", "loss__clip_eps_low": 3e-4, "loss__clip_eps_high": 4e-4}),
    ("grpo+gtpo", {"loss__policy": "kl-cov"}),
    ("grpo+ar", {"loss__policy": "dr-grpo", "loss__agg": "seq-mean-token-sum", "credit__grpo_norm_by_std": False}),
    ("ppo+aepo", {"loss__policy": "ppo-clip"}),
    ("grpo+aepo", {"loss__policy": "aepo"}),  # AEPO's two halves
    # Lopti with its AR pairing, under DAPO's dynamic sampling
    ("grpo+ar", {"loss__policy": "ppo-clip", "rl__token_passes": "lopti", "rollout__dynamic_sampling": True}),
]
LOSS_METRIC = {"clip-cov": "cov_detached", "kl-cov": "cov_penalised", "aepo": "aepo_kept_grad"}


@pytest.mark.parametrize(("method", "loss"), CASES, ids=[f"{m}-{kw['loss__policy']}" for m, kw in CASES])
def test_method_and_policy_loss_train_two_steps(tmp_path, warm_start, method, loss):
    cfg = tiny_config(tmp_path, method=method, run__init_from=str(warm_start), **loss)
    train(cfg, show_progress=False)
    run_dir = tmp_path / cfg.run_name
    data = json.loads((run_dir / "record.json").read_text())
    assert data["status"] == "completed" and data["method"] == method
    assert data["config"]["loss"]["policy"] == loss["loss__policy"]
    rows = read_jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    for row in rows[1:]:
        for key in ("pg_loss", "grad_norm", "approx_kl"):
            assert math.isfinite(row[key]), key
        assert ("lopti_low_share" in row) == ("rl__token_passes" in loss)
        own = LOSS_METRIC.get(loss["loss__policy"])  # a policy loss's own metric reaches metrics.jsonl
        if own is not None:
            assert 0.0 <= row[own] <= 1.0, own
        if "rollout__dynamic_sampling" in loss:
            assert 1 <= row["rollout/sampling_rounds"] <= 3
            assert row["rollout/groups_kept"] <= 2 <= row["rollout/groups_drawn"]

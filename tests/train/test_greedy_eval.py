"""`eval.also_greedy`: a greedy evaluation at step 0 and after the last update, beside the sampled one,
that changes neither the config hash nor anything training computes."""

import json

from train_helpers import tiny_config

from agentbench_af.config import config_hash
from agentbench_af.train import loop
from agentbench_af.train.warm.warm_eval import warm_eval_key


def _metrics(out_dir):
    (path,) = out_dir.rglob("metrics.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    drop = ("time", "seconds", "_s", "eval")
    return [{k: v for k, v in r.items() if not any(d in k for d in drop)} for r in rows]


def test_greedy_rows_at_step_0_and_last_and_training_unchanged(tmp_path, warm_start):
    kw = {"method": "grpo", "rl__steps": 2, "eval__every": 1, "eval__temperature": 1.0, "run__init_from": str(warm_start)}
    plain = loop.train(tiny_config(tmp_path / "plain", **kw), show_progress=False)
    greedy_cfg = tiny_config(tmp_path / "greedy", eval__also_greedy=True, **kw)
    greedy = loop.train(greedy_cfg, show_progress=False)
    assert [sorted(k for k in row if k.startswith("greedy_")) for row in greedy.curve] == [
        ["greedy_effective_rate", "greedy_mean_reward", "greedy_mean_turns", "greedy_success", "greedy_valid_rate"],
        [],  # step 1: the curve stays sampled only
        ["greedy_effective_rate", "greedy_mean_reward", "greedy_mean_turns", "greedy_success", "greedy_valid_rate"],
    ]
    assert greedy.final_metrics["greedy_success"] == greedy.curve[-1]["greedy_success"]
    # the sampled evaluations and every training metric are those of the run without it
    assert [{k: v for k, v in r.items() if not k.startswith("greedy_")} for r in greedy.curve] == plain.curve
    assert _metrics(tmp_path / "greedy") == _metrics(tmp_path / "plain")
    assert greedy.config_hash == plain.config_hash == config_hash(greedy_cfg)
    # the warm start's stored step-0 evaluation without greedy keys is not reused for a greedy run
    assert warm_eval_key(greedy_cfg, "None") != warm_eval_key(tiny_config(tmp_path / "plain", **kw), "None")


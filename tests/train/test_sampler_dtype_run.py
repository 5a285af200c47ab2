"""A run whose rollouts a bf16 copy samples (`rollout.sampler_dtype=bfloat16`) trains 2 GRPO steps end to end;
its old log-probs are the trained model's (the update's own forward, as with an fp32 sampler)."""

import json

from train_helpers import tiny_config

from agentbench_af.io import read_jsonl
from agentbench_af.train.loop import train


def test_a_bf16_sampler_trains_two_steps(tmp_path, warm_start):
    cfg = tiny_config(tmp_path, method="grpo", run__init_from=str(warm_start), rollout__sampler_dtype="bfloat16",
                      rl__prompts_per_step=4)
    train(cfg, show_progress=False)
    run_dir = tmp_path / cfg.run_name
    data = json.loads((run_dir / "record.json").read_text())
    assert data["status"] == "completed" and data["config"]["rollout"]["sampler_dtype"] == "bfloat16"
    rows = read_jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    # a step whose groups all have equal returns has no gradient; with 4 groups a step, some step has one that differs
    assert any(r["grad_norm"] > 0 for r in rows[1:])


def test_a_bf16_lora_run_trains_two_steps_and_says_what_its_update_reads(tmp_path, warm_start, capsys):
    # LoRA adapters sampled from a merged bf16 copy, updated under bf16 autocast: the note names the gap
    cfg = tiny_config(tmp_path, method="grpo", run__init_from=str(warm_start), rollout__sampler_dtype="bfloat16",
                      model__dtype="bfloat16", model__lora_rank=4, rl__prompts_per_step=4)
    train(cfg, show_progress=False)
    assert "note: the update runs LoRA adapters under bf16 autocast" in capsys.readouterr().err
    rows = read_jsonl(tmp_path / cfg.run_name / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2] and any(r["grad_norm"] > 0 for r in rows[1:])

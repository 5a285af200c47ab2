"""A GRPO run with `rollout.engine=vllm` (tiny-0.2m-h32, 2 RL steps) completes, records the per-step
rollout/trainer log-prob mismatch, and resumes after being killed during step 2."""

import json

import pytest
from train_helpers import tiny_config

from agentbench_af.io import read_jsonl
from agentbench_af.train import loop
from agentbench_af.train.bookkeeping.checkpoint import latest_checkpoint

pytestmark = pytest.mark.vllm


class Killed(RuntimeError):
    pass


def test_grpo_with_vllm_completes_and_resumes(tmp_path, monkeypatch, vllm_available):
    cfg = tiny_config(tmp_path, method="grpo", model__name="tiny-0.2m-h32", rollout__engine="vllm",
                      rollout__max_context_tokens=1024, rollout__vllm_memory_fraction=0.1,
                      rollout__vllm_kv_cache_gib=0.25, run__checkpoint_every=1, run__name="run")
    real, calls = loop.collect_rollouts, []

    def dies_on_step_2(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise Killed
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "collect_rollouts", dies_on_step_2)
    with pytest.raises(Killed):
        loop.train(cfg, show_progress=False)
    run_dir = tmp_path / "run"
    assert latest_checkpoint(run_dir).name == "ckpt-000001.pt"
    monkeypatch.setattr(loop, "collect_rollouts", real)
    record = loop.train(cfg, resume=True, show_progress=False)
    rows = read_jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    for row in rows[1:]:
        assert row["response_tokens"] > 0
        # vLLM's float32 log-probs of the sampled tokens against the trainer's forward pass
        assert 0 <= row["rollout/logprob_mismatch_max"] < 1e-3
    saved = json.loads((run_dir / "record.json").read_text())
    assert saved["config"]["rollout"]["engine"] == "vllm" and record.curve[-1]["step"] == 2

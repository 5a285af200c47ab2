"""Real (tiny) training through the sweep: the process pool, skipping, and resuming a killed run."""

from pathlib import Path

import pytest

from agentbench_af.config import from_dict
from agentbench_af.io import read_jsonl
from agentbench_af.results.record import RunRecord
from agentbench_af.sweep import SweepSpec, plan_sweep, run_sweep
from agentbench_af.sweep.local import PoolBackend
from agentbench_af.train import loop


def test_process_pool_runs_then_rerun_skips(tmp_path, tiny_base, monkeypatch):
    spec = from_dict(SweepSpec, {"base": tiny_base, "out_dir": str(tmp_path / "sw"), "warm_start": "shared",
                                 "grid": {"methods": ["grpo", "grpo+actfocus"], "seeds": [0]}})
    out = run_sweep(spec, backend="local", workers=2, show_progress=False)
    assert [o.status for o in out] == ["completed", "completed"], [o.error for o in out]
    records = [RunRecord.load(o.run_dir) for o in out]
    assert [r.method for r in records] == ["grpo", "grpo+actfocus"]
    assert all(r.status == "completed" and 0.0 <= r.final_success <= 1.0 for r in records)
    assert all(r.config["run"]["threads"] == 1 for r in records)
    assert records[0].protocol["sft_steps"] == 2  # the shared warm start is built with the runs' own sft settings
    # both methods branched from the same warm start, so they start from the same evaluation
    assert records[0].warm_start_success == records[1].warm_start_success

    def no_pool(self):
        raise AssertionError("a sweep with nothing to do must not start workers")

    monkeypatch.setattr(PoolBackend, "_executor", no_pool)
    again = run_sweep(spec, backend="local", workers=2, show_progress=False)
    assert [o.status for o in again] == ["skipped", "skipped"]
    assert [o.final_success for o in again] == [r.final_success for r in records]


def test_killed_run_resumes_from_its_checkpoint(tmp_path, tiny_base, monkeypatch):
    base = {**tiny_base, "rl": {"steps": 2, "prompts_per_step": 2}, "run": {"checkpoint_every": 1}}
    spec = from_dict(SweepSpec, {"base": base, "out_dir": str(tmp_path / "sw")})
    (cfg,) = [r.cfg for r in plan_sweep(spec).runs]

    real_update, updates = loop.update, []

    def update_then_die(*args, **kwargs):
        updates.append(1)
        if len(updates) == 2:
            raise KeyboardInterrupt  # the sweep process is killed during RL step 2
        return real_update(*args, **kwargs)

    monkeypatch.setattr(loop, "update", update_then_die)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(spec, backend="serial", show_progress=False)
    run_dir = Path(cfg.run.out_dir) / cfg.run_name
    assert not (run_dir / "record.json").exists()
    assert [r.state for r in plan_sweep(spec).runs] == ["resume"]

    monkeypatch.setattr(loop, "update", lambda *a, **k: updates.append(1) or real_update(*a, **k))
    (out,) = run_sweep(spec, backend="serial", show_progress=False)
    assert out.status == "completed"
    assert len(updates) == 3  # step 1 was not redone
    assert [row["step"] for row in read_jsonl(run_dir / "metrics.jsonl")] == [0, 1, 2]
    assert [p["step"] for p in RunRecord.load(run_dir).curve] == [0, 2]

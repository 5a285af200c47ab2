"""Scheduling logic on the in-process serial backend, with `loop.train` patched (see conftest)."""

import json
from pathlib import Path

import pytest
from sweep_helpers import fake_record

from agentbench_af.config import from_dict
from agentbench_af.results.record import RunRecord
from agentbench_af.sweep import SweepError, SweepSpec, expand, plan_sweep, run_sweep
from agentbench_af.train import loop


def _spec(tmp_path, base, **kw) -> SweepSpec:
    grid = kw.pop("grid", {"methods": ["grpo", "rloo"], "seeds": [0, 1]})
    return from_dict(SweepSpec, {"base": base, "out_dir": str(tmp_path / "sw"), "grid": grid, **kw})


def test_runs_everything_then_skips_by_config_hash(tmp_path, tiny_base, fake_train):
    spec = _spec(tmp_path, tiny_base)
    out = run_sweep(spec, backend="serial", show_progress=False)
    assert [o.status for o in out] == ["completed"] * 4
    assert [o.final_success for o in out] == [0.25, 0.5, 0.25, 0.5]
    assert len(fake_train) == 4
    again = run_sweep(spec, backend="serial", show_progress=False)
    assert [o.status for o in again] == ["skipped"] * 4 and len(fake_train) == 4
    assert [o.final_success for o in again] == [0.25, 0.5, 0.25, 0.5]
    assert (tmp_path / "sw" / "sweep.yaml").exists()


def test_a_changed_config_is_refused_not_mixed(tmp_path, tiny_base, fake_train):
    run_sweep(_spec(tmp_path, tiny_base), backend="serial", show_progress=False)
    changed = _spec(tmp_path, tiny_base, overrides=["rl.steps=2"])
    assert [r.state for r in plan_sweep(changed).runs] == ["conflict"] * 4
    with pytest.raises(SweepError, match="hold another config"):
        run_sweep(changed, backend="serial", show_progress=False)
    assert len(fake_train) == 4


def test_a_failing_run_is_recorded_and_the_others_go_on(tmp_path, tiny_base, monkeypatch):
    def train(cfg, resume=False, show_progress=True):
        if cfg.method == "rloo" and cfg.run.seed == 0:
            raise ValueError("reward went NaN\nsecond line")
        return fake_record(cfg)

    monkeypatch.setattr(loop, "train", train)
    out = run_sweep(_spec(tmp_path, tiny_base), backend="serial", show_progress=False)
    assert [o.status for o in out] == ["completed", "completed", "failed", "completed"]
    assert out[2].error == "ValueError: reward went NaN"
    failed_dir = Path(out[2].run_dir)
    record = RunRecord.load(failed_dir)
    assert (record.status, record.final_success, record.error) == ("failed", None, "ValueError: reward went NaN")
    assert record.method == "rloo" and record.seed == 0
    assert "Traceback" in (failed_dir / "error.txt").read_text()
    # a re-run retries only the failed run; a success replaces the failure files
    assert [r.state for r in plan_sweep(_spec(tmp_path, tiny_base)).runs] == ["done", "done", "retry", "done"]
    calls = []
    monkeypatch.setattr(loop, "train", lambda cfg, resume=False, show_progress=True: calls.append(resume) or fake_record(cfg))
    out = run_sweep(_spec(tmp_path, tiny_base), backend="serial", show_progress=False)
    assert [o.status for o in out] == ["skipped", "skipped", "completed", "skipped"] and calls == [True]
    assert RunRecord.load(failed_dir).status == "completed" and not (failed_dir / "error.txt").exists()


def test_shared_warm_start_prepared_once_per_env_model_seed(tmp_path, tiny_base, monkeypatch):
    prepared, trained = [], []

    def prepare(cfg, out_dir, device, show_progress=True):
        prepared.append(out_dir.name)
        out_dir.mkdir(parents=True)
        (out_dir / "policy.json").write_text("{}")
        return out_dir

    def train(cfg, resume=False, show_progress=True):
        assert (Path(cfg.run.init_from) / "policy.json").exists()  # ready before the run starts
        trained.append((cfg.method, Path(cfg.run.init_from).name))
        return fake_record(cfg)

    monkeypatch.setattr(loop, "prepare_warm_start", prepare)
    monkeypatch.setattr(loop, "train", train)
    spec = _spec(tmp_path, tiny_base, warm_start="shared",
                 grid={"methods": ["grpo", "grpo+actfocus", "ppo"], "seeds": [0, 1], "models": ["tiny-0.2m"]})
    assert len(plan_sweep(spec).warm_starts) == 2
    out = run_sweep(spec, backend="serial", show_progress=False)
    assert [o.status for o in out] == ["completed"] * 6
    stem = [name.rsplit("-", 1)[0] for name in prepared]  # <env>-<model>-s<seed>-<warm-start hash>
    assert stem == ["FrozenLake-4x4-v0-tiny-0.2m-s0", "FrozenLake-4x4-v0-tiny-0.2m-s1"]
    assert sorted(trained) == sorted((m, name) for m in ("grpo", "grpo+actfocus", "ppo") for name in prepared)
    # seed replicates share a hash (the table averages them) though their warm starts differ
    hashes = [json.loads((Path(o.run_dir) / "record.json").read_text())["config_hash"] for o in out]
    assert hashes[0] == hashes[1] and hashes[0] != hashes[2]
    assert plan_sweep(spec).warm_starts == []


def test_a_failed_warm_start_fails_only_its_runs(tmp_path, tiny_base, monkeypatch, fake_train):
    def prepare(cfg, out_dir, device, show_progress=True):
        if cfg.run.seed == 1:
            raise RuntimeError("tokenizer training failed")
        out_dir.mkdir(parents=True)
        (out_dir / "policy.json").write_text("{}")
        return out_dir

    monkeypatch.setattr(loop, "prepare_warm_start", prepare)
    out = run_sweep(_spec(tmp_path, tiny_base, warm_start="shared"), backend="serial", show_progress=False)
    assert [o.status for o in out] == ["completed", "failed", "completed", "failed"]
    failed_start = Path(out[1].run_dir).parent.parent / "warm_starts"
    (error_file,) = failed_start.glob("FrozenLake-4x4-v0-tiny-0.2m-s1-*.error.txt")
    name = error_file.name.removesuffix(".error.txt")
    assert out[1].error == f"warm start {name} failed: RuntimeError: tokenizer training failed"
    assert RunRecord.load(out[3].run_dir).status == "failed"
    assert [c.run.seed for c in fake_train] == [0, 0]


def test_warm_starts_go_first_then_ready_runs_then_runs_as_their_warm_start_finishes(tmp_path, tiny_base,
                                                                                    monkeypatch):
    order = []

    def prepare(cfg, out_dir, device, show_progress=True):
        order.append(f"warm s{cfg.run.seed}")
        out_dir.mkdir(parents=True)
        (out_dir / "policy.json").write_text("{}")
        return out_dir

    def train(cfg, resume=False, show_progress=True):
        order.append(f"{cfg.method} s{cfg.run.seed}")
        return fake_record(cfg)

    monkeypatch.setattr(loop, "prepare_warm_start", prepare)
    monkeypatch.setattr(loop, "train", train)
    spec = _spec(tmp_path, tiny_base, warm_start="shared", grid={"methods": ["grpo", "ppo"], "seeds": [0, 1, 2]})
    on_disk = Path(plan_sweep(spec).runs[2].cfg.run.init_from)  # seed 2's warm start is already there
    on_disk.mkdir(parents=True)
    (on_disk / "policy.json").write_text("{}")
    assert [t.cfg.run.seed for t in plan_sweep(spec).warm_starts] == [0, 1]
    out = run_sweep(spec, backend="serial", show_progress=False)
    assert [o.status for o in out] == ["completed"] * 6
    assert order == ["warm s0", "warm s1", "grpo s2", "ppo s2", "grpo s0", "ppo s0", "grpo s1", "ppo s1"]


def test_plan_states_new_resume_retry(tmp_path, tiny_base):
    spec = _spec(tmp_path, tiny_base, grid={"seeds": [0, 1, 2]})
    c0, c1, _ = expand(spec)
    fake_record(c0)
    d1 = Path(c1.run.out_dir) / c1.run_name
    (d1 / "checkpoints").mkdir(parents=True)
    (d1 / "checkpoints" / "ckpt-000001.pt").write_bytes(b"")
    assert [r.state for r in plan_sweep(spec).runs] == ["done", "resume", "new"]


def test_workers_must_be_positive(tmp_path, tiny_base, fake_train):
    with pytest.raises(SweepError, match="workers"):
        run_sweep(_spec(tmp_path, tiny_base), backend="local", workers=0, show_progress=False)
    with pytest.raises(SweepError, match="unknown backend"):
        run_sweep(_spec(tmp_path, tiny_base), backend="slurm", show_progress=False)  # type: ignore[arg-type]


def test_local_workers_default_to_cores_or_one_per_gpu(tmp_path, tiny_base, monkeypatch):
    import torch

    from agentbench_af.sweep import local
    from agentbench_af.sweep.runner import make_backend

    spec = _spec(tmp_path, tiny_base, threads_per_run=2)
    cfgs = expand(spec)
    monkeypatch.setattr(local, "available_cores", lambda: 16)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert make_backend("local", None, spec, 20, cfgs).workers == 8  # 16 cores // 2 threads
    assert make_backend("local", None, spec, 3, cfgs).workers == 3  # never more workers than tasks
    assert make_backend("local", 5, spec, 20, cfgs).workers == 5
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert make_backend("local", None, spec, 20, cfgs).workers == 1  # runs share one GPU

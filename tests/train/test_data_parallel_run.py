"""`torchrun --nproc-per-node 2 -m agentbench_af.cli train ...` on CPU (gloo): the run finishes, rank 0
alone writes the run folder and its record names the world size; a checkpoint of the 2-process run
resumes in 2 processes to exactly the uninterrupted result, and in 1 process to a finished run. The same
run under FSDP2 finishes, its first update matches DDP's, and its (full) checkpoint resumes in 1 process.
A run with dynamic sampling and Lopti finishes in 2 processes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file
from train_helpers import tiny_config, tiny_overrides

from agentbench_af.io import read_jsonl
from agentbench_af.train import loop

SETTINGS = {"method": "ppo", "rl__steps": 2, "run__checkpoint_every": 1, "eval__every": 1, "run__name": "dp"}
VOLATILE = ("time_rollout_s", "time_step_s")


def _torchrun(out_dir, warm_start, *flags: str, **extra) -> subprocess.CompletedProcess:
    overrides = tiny_overrides(out_dir, run__init_from=str(warm_start), **{**SETTINGS, **extra})
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "agentbench_af.cli", "train", *overrides, "--quiet", *flags]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _rewind(src, dst):
    """A copy of run folder `src` as it was after step 1: the step-2 checkpoint, record and policy removed."""
    shutil.copytree(src, dst)
    (dst / "checkpoints" / "ckpt-000002.pt").unlink()
    (dst / "record.json").unlink()
    shutil.rmtree(dst / "final_policy")
    return dst


def _outcome(run_dir):
    record = json.loads((run_dir / "record.json").read_text())
    rows = [{k: v for k, v in r.items() if k not in VOLATILE} for r in read_jsonl(run_dir / "metrics.jsonl")]
    keep = ("final_success", "final_metrics", "curve", "tokens_by_role", "config_hash", "bottleneck", "parallel")
    return {k: record[k] for k in keep}, rows, load_file(str(run_dir / "final_policy" / "model.safetensors"))


@pytest.fixture(scope="module")
def two_process_run(tmp_path_factory, warm_start):
    out = tmp_path_factory.mktemp("dp2")
    done = _torchrun(out, warm_start)
    return out, done


def test_two_processes_finish_and_the_record_names_the_world_size(two_process_run):
    out, done = two_process_run
    run_dir = out / "dp"
    record = json.loads((run_dir / "record.json").read_text())
    assert record["parallel"] == {"world_size": 2, "strategy": "ddp"}
    assert done.stdout.count("final-step success") == 1 and "on 2 processes (ddp)" in done.stdout
    rows = read_jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]  # one row per step: rank 0 alone writes
    # the row covers both ranks' shares: 2 prompts x 4 rollouts, every generated token counted
    assert all(sum(r["tokens_by_role"].values()) == r["response_tokens"] > 0 for r in rows[1:])
    assert all(r["eval"]["episodes"] == 4 for r in rows[1:])  # the evaluation seeds of both ranks
    assert record["bottleneck"]["final"]["n_groups"] == 2  # the final batch gathered from both ranks
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == ["ckpt-000001.pt", "ckpt-000002.pt"]


def test_two_processes_resume_to_the_uninterrupted_result(two_process_run, warm_start, tmp_path):
    out, _ = two_process_run
    resumed = _rewind(out / "dp", tmp_path / "dp")
    _torchrun(tmp_path, warm_start, "--resume")
    (rec_a, rows_a, params_a), (rec_b, rows_b, params_b) = _outcome(out / "dp"), _outcome(resumed)
    assert rec_a == rec_b and rows_a == rows_b
    assert params_a.keys() == params_b.keys() and all(torch.equal(params_a[k], params_b[k]) for k in params_a)


def test_one_process_resumes_a_two_process_checkpoint(two_process_run, warm_start, tmp_path):
    out, _ = two_process_run
    resumed = _rewind(out / "dp", tmp_path / "dp")
    cfg = tiny_config(tmp_path, run__init_from=str(warm_start), **SETTINGS)
    record = loop.train(cfg, resume=True, show_progress=False)
    assert record.parallel == {"world_size": 1, "strategy": None}
    rows = read_jsonl(resumed / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert rows[:2] == read_jsonl(out / "dp" / "metrics.jsonl")[:2]  # step 1 is the 2-process run's


def test_fsdp2_run_matches_ddp_and_resumes_in_one_process(two_process_run, warm_start, tmp_path):
    out, _ = two_process_run
    _torchrun(tmp_path / "fsdp2", warm_start, run__parallel="fsdp2")
    run_dir = tmp_path / "fsdp2" / "dp"
    assert json.loads((run_dir / "record.json").read_text())["parallel"] == {"world_size": 2, "strategy": "fsdp2"}
    ddp_rows, fsdp_rows = read_jsonl(out / "dp" / "metrics.jsonl"), read_jsonl(run_dir / "metrics.jsonl")
    assert fsdp_rows[1]["response_tokens"] == ddp_rows[1]["response_tokens"]  # the same rollouts at step 1
    for key in ("pg_loss", "value_loss", "grad_norm", "critic_grad_norm"):
        assert fsdp_rows[1][key] == pytest.approx(ddp_rows[1][key], rel=1e-4, abs=1e-6), key
    resumed = _rewind(run_dir, tmp_path / "one" / "dp")
    cfg = tiny_config(tmp_path / "one", run__init_from=str(warm_start), **SETTINGS, run__parallel="fsdp2")
    record = loop.train(cfg, resume=True, show_progress=False)
    assert record.parallel == {"world_size": 1, "strategy": None}
    assert [r["step"] for r in read_jsonl(resumed / "metrics.jsonl")] == [0, 1, 2]


def test_two_processes_run_dynamic_sampling_and_lopti(warm_start, tmp_path):
    # each rank refills its own share (1 prompt of 2) from a disjoint slice of the step's refill seeds
    _torchrun(tmp_path, warm_start, method="grpo+ar", run__name="dapo", rl__token_passes="lopti",
              rollout__dynamic_sampling=True)
    rows = read_jsonl(tmp_path / "dapo" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    for row in rows[1:]:
        assert 2 <= row["rollout/groups_drawn"] <= 6 and row["rollout/groups_kept"] <= 2
        assert 1 <= row["rollout/sampling_rounds"] <= 3 and 0 <= row["lopti_low_share"] <= 1
    assert json.loads((tmp_path / "dapo" / "record.json").read_text())["status"] == "completed"

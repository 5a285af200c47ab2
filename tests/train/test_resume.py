"""A killed-and-resumed run ends exactly where an uninterrupted run with the same config ends.

Run A runs 4 steps. Run B has the same config (only `run.out_dir` differs) and is killed while
collecting step 4 (after the step-2 checkpoint and the step-3 metrics row), then resumed. A second
variant kills a CLI process with SIGKILL once the step-2 checkpoint exists (during step 3 or 4)."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from safetensors.torch import load_file
from train_helpers import tiny_config, tiny_overrides

from agentbench_af.io import read_jsonl
from agentbench_af.train import loop
from agentbench_af.train.bookkeeping.checkpoint import latest_checkpoint, load_checkpoint

# case name -> config: ppo-separate also checks that a separate critic network is checkpointed and restored;
# grpo-lora that LoRA adapters (model.lora_rank) and their AdamW state are
CASES = {"ppo": {"method": "ppo"}, "grpo+actfocus": {"method": "grpo+actfocus"},
         "ppo-separate": {"method": "ppo", "rl__critic": "separate"},
         "grpo-lora": {"method": "grpo", "model__lora_rank": 4}}
VOLATILE = ("time_rollout_s", "time_step_s")


class Killed(RuntimeError):
    pass


def _killed_at_step(step: int, monkeypatch):
    """Make the loop's collector raise `Killed` when it is called for the `step`-th time."""
    real, calls = loop.collect_rollouts, []

    def collect(*args, **kwargs):
        calls.append(1)
        if len(calls) == step:
            raise Killed
        return real(*args, **kwargs)

    monkeypatch.setattr(loop, "collect_rollouts", collect)
    return real


def _config(out_dir, warm_start, case, **extra):
    return tiny_config(out_dir, **CASES[case], rl__steps=4, run__checkpoint_every=2, eval__every=2,
                       run__init_from=str(warm_start), run__name="run", **extra)


def _outcome(run_dir):
    record = json.loads((run_dir / "record.json").read_text())
    rows = [{k: v for k, v in r.items() if k not in VOLATILE} for r in read_jsonl(run_dir / "metrics.jsonl")]
    params = load_file(str(run_dir / "final_policy" / "model.safetensors"))
    keep = ("final_success", "final_metrics", "curve", "tokens_by_role", "warm_start_success", "config_hash",
            "bottleneck")
    return {k: record[k] for k in keep}, rows, params


def _assert_same(a, b):
    (rec_a, rows_a, params_a), (rec_b, rows_b, params_b) = a, b
    assert rec_a == rec_b
    assert rows_a == rows_b
    assert params_a.keys() == params_b.keys()
    for name in params_a:
        assert torch.equal(params_a[name], params_b[name]), name


@pytest.fixture(scope="module", params=list(CASES))
def uninterrupted(request, tmp_path_factory, warm_start):
    out = tmp_path_factory.mktemp("a")
    cfg = _config(out, warm_start, request.param)
    loop.train(cfg, show_progress=False)
    return request.param, _outcome(out / "run")


def test_killed_and_resumed_run_matches(tmp_path, warm_start, uninterrupted, monkeypatch):
    case, outcome_a = uninterrupted
    cfg = _config(tmp_path, warm_start, case)
    real = _killed_at_step(4, monkeypatch)
    with pytest.raises(Killed):
        loop.train(cfg, show_progress=False)
    run_dir = tmp_path / "run"
    assert latest_checkpoint(run_dir).name == "ckpt-000002.pt"
    assert [r["step"] for r in read_jsonl(run_dir / "metrics.jsonl")] == [0, 1, 2, 3]
    with pytest.raises(FileExistsError, match="--resume"):
        loop.train(cfg, show_progress=False)
    spent = load_checkpoint(latest_checkpoint(run_dir))[0].extra["cpu_time_s"]  # up to step 2, before the kill
    monkeypatch.setattr(loop, "collect_rollouts", real)
    loop.train(cfg, resume=True, show_progress=False)
    _assert_same(outcome_a, _outcome(run_dir))
    assert json.loads((run_dir / "record.json").read_text())["cpu_time_s"] >= spent > 0  # the cost survives a kill
    # the run really learned something: otherwise the comparison would be vacuous
    assert any(r.get("grad_norm", 0) > 0 for r in outcome_a[1])


def test_sigkilled_cli_run_resumes_to_the_same_result(tmp_path, warm_start, uninterrupted):
    case, outcome_a = uninterrupted
    if case != "ppo":
        return  # one method is enough for the (slower) subprocess variant
    args = tiny_overrides(tmp_path, method=case, rl__steps=4, run__checkpoint_every=2, eval__every=2,
                          run__init_from=str(warm_start), run__name="run")
    cmd = [sys.executable, "-c", "from agentbench_af.cli import app; app()", "train", *args, "--quiet"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ckpt_dir = tmp_path / "run" / "checkpoints"
    deadline = time.time() + 120
    while proc.poll() is None and time.time() < deadline and not list(ckpt_dir.glob("ckpt-000002.pt")):
        time.sleep(0.02)
    assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read().decode()[-2000:]}"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (tmp_path / "run" / "record.json").exists()
    done = subprocess.run([*cmd, "--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    _assert_same(outcome_a, _outcome(tmp_path / "run"))


def test_a_step_that_ends_long_after_the_last_save_checkpoints(tmp_path, warm_start, monkeypatch):
    from agentbench_af.train.bookkeeping import run_folder

    def config(out):  # step counts alone would save only after the last step
        return tiny_config(out, method="grpo", rl__steps=3, run__checkpoint_every=10, eval__every=3,
                           run__init_from=str(warm_start), run__name="run")

    loop.train(config(tmp_path / "a"), show_progress=False)
    monkeypatch.setattr(run_folder, "RL_CHECKPOINT_SECONDS", 0.0)  # every step ends "10 minutes" after the last save
    real = _killed_at_step(3, monkeypatch)
    with pytest.raises(Killed):
        loop.train(config(tmp_path / "b"), show_progress=False)
    assert latest_checkpoint(tmp_path / "b" / "run").name == "ckpt-000002.pt"
    resumed = []
    monkeypatch.setattr(loop, "collect_rollouts", lambda *a, **k: resumed.append(1) or real(*a, **k))
    loop.train(config(tmp_path / "b"), resume=True, show_progress=False)
    assert len(resumed) == 2  # step 3 and the final diagnostic batch: steps 1-2 came from the timed checkpoint
    _assert_same(_outcome(tmp_path / "a" / "run"), _outcome(tmp_path / "b" / "run"))

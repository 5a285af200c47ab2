"""Checkpoints and saved rollouts load as tensors and plain data only: a planted pickle payload is refused
with a one-line error by `train --resume` and by `diagnose RUN`, and its code never runs."""

import random
import shutil

import numpy as np
import pytest
import torch
from reliability_helpers import run_config, run_overrides
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.results.rollout_store import load_rollouts
from agentbench_af.train import loop
from agentbench_af.train.bookkeeping.checkpoint import (
    TrainState,
    latest_checkpoint,
    load_checkpoint,
    restore_rng_states,
    save_checkpoint,
)

runner = CliRunner()


class Payload:
    """Unpickling this calls exec(), which writes `marker`: what a malicious file would do."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


def _plant(path, marker) -> None:
    payload = torch.load(path, weights_only=False)  # the test's own file, read in full to add the payload
    payload["note"] = Payload(marker)
    torch.save(payload, path)


def _one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    return lines[0]


@pytest.fixture(scope="module")
def killed_run(tmp_path_factory, warm_start):
    """A run killed while collecting step 4: a step-2 checkpoint and step-2 rollouts on disk."""
    out = tmp_path_factory.mktemp("killed")
    cfg = run_config(out, warm_start, run__save_rollouts_every=2)
    real, calls = loop.collect_rollouts, []

    def dies_on_step_4(*args, **kwargs):
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    loop.collect_rollouts = dies_on_step_4
    try:
        with pytest.raises(KeyboardInterrupt):
            loop.train(cfg, show_progress=False)
    finally:
        loop.collect_rollouts = real
    return cfg, out / "run"


def _copy(run_dir, tmp_path):
    return shutil.copytree(run_dir, tmp_path / "run")


def test_resume_refuses_a_planted_checkpoint(tmp_path, killed_run, warm_start):
    cfg, run_dir = killed_run
    run_dir = _copy(run_dir, tmp_path)
    marker = tmp_path / "marker"
    ckpt = latest_checkpoint(run_dir)
    load_checkpoint(ckpt)  # the untouched file loads
    _plant(ckpt, marker)
    res = runner.invoke(app, ["train", *run_overrides(tmp_path, warm_start, run__save_rollouts_every=2), "--resume",
                              "--quiet"])
    assert not marker.exists(), "the payload ran"
    assert res.exit_code == 2, res.output
    line = _one_error_line(res.output)
    assert "refusing to load" in line and ckpt.name in line and "exec" in line


def test_diagnose_refuses_planted_rollouts(tmp_path, killed_run):
    _, run_dir = killed_run
    run_dir = _copy(run_dir, tmp_path)
    marker = tmp_path / "marker"
    saved = run_dir / "rollouts" / "step-000002.pt"
    step, batch = load_rollouts(saved)  # the untouched file loads
    assert step == 2 and batch.batch_size > 0
    _plant(saved, marker)
    res = runner.invoke(app, ["diagnose", str(run_dir), "--out", str(tmp_path / "diag")])
    assert not marker.exists(), "the payload ran"
    assert res.exit_code == 2, res.output
    errors = "\n".join(line for line in res.output.splitlines() if not line.startswith("note: "))
    line = _one_error_line(errors)
    assert "refusing to load" in line and saved.name in line and "exec" in line
    with pytest.raises(ValueError, match="refusing to load"):
        load_rollouts(saved)
    assert not marker.exists()


def test_a_file_that_is_not_a_tensor_file_is_one_line(tmp_path):
    path = tmp_path / "ckpt-000001.pt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="cannot read") as info:
        load_checkpoint(path)
    assert "\n" not in str(info.value)


def test_rng_states_round_trip_exactly(tmp_path):
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    save_checkpoint(tmp_path, TrainState(1, {"w": torch.ones(2)}, {}, None, {}))
    expected = (random.random(), np.random.rand(3).tolist(), np.random.randn(), torch.rand(3))
    random.seed(9), np.random.seed(9), torch.manual_seed(9)
    _, rng = load_checkpoint(latest_checkpoint(tmp_path))
    restore_rng_states(rng)
    got = (random.random(), np.random.rand(3).tolist(), np.random.randn(), torch.rand(3))
    assert got[:3] == expected[:3] and torch.equal(got[3], expected[3])

"""A warm start killed during SFT continues from its last SFT checkpoint and ends bit-identical to one
built without a stop; the checkpoint is keyed by the warm-start settings and removed once the folder is saved."""

import pytest
import torch
import yaml
from safetensors.torch import load_file
from train_helpers import tiny_config

from agentbench_af.train.bookkeeping.checkpoint import load_checkpoint
from agentbench_af.train.warm import sft, warm_start
from agentbench_af.train.warm.warm_start import prepare_warm_start, sft_checkpoint_path

REAL_SFT = warm_start.sft_warm_start


class Killed(BaseException):
    """Stands for SIGKILL at a session end: not an Exception, so nothing on the way catches it."""


def _weights(folder):
    return load_file(str(folder / "model.safetensors"))


def _build_watching(monkeypatch, cfg, folder, die_at=None):
    """Build `folder`, recording the SFT steps run; raise Killed once step `die_at` has run."""
    seen = []

    def watched(*args, progress, **kwargs):
        def note(step, loss):
            seen.append(step)
            progress(step, loss)
            if step == die_at:
                raise Killed

        return REAL_SFT(*args, progress=note, **kwargs)

    monkeypatch.setattr(warm_start, "sft_warm_start", watched)
    prepare_warm_start(cfg, folder, torch.device("cpu"), show_progress=False)
    return seen


def test_a_killed_warm_start_continues_from_its_sft_checkpoint_bit_identically(tmp_path, monkeypatch):
    torch.set_num_threads(1)
    cfg = tiny_config(tmp_path, sft__steps=7, sft__lr=3e-3, sft__episodes=20)
    reference = tmp_path / "reference"
    assert _build_watching(monkeypatch, cfg, reference) == list(range(7))  # default interval: no checkpoint
    assert not sft_checkpoint_path(cfg, reference).exists()

    monkeypatch.setattr(sft, "SFT_CHECKPOINT_EVERY", 3)
    folder = tmp_path / "warm"
    with pytest.raises(Killed):
        _build_watching(monkeypatch, cfg, folder, die_at=4)  # checkpoint after step 3 of 7, killed after step 5
    assert not folder.exists() and sft_checkpoint_path(cfg, folder).exists()
    before_kill = load_checkpoint(sft_checkpoint_path(cfg, folder))[0].extra  # time spent up to the save
    assert _build_watching(monkeypatch, cfg, folder) == [3, 4, 5, 6]  # resumed, not restarted
    cost = yaml.safe_load((folder / "warm_start.yaml").read_text())["sft"]
    assert cost["sft_cpu_s"] >= round(before_kill["cpu_s"], 1) > 0  # the killed process's time is kept
    assert cost["sft_wall_s"] >= round(before_kill["wall_s"], 1) > 0
    assert not sft_checkpoint_path(cfg, folder).exists()  # removed once the folder is saved
    ref, resumed = _weights(reference), _weights(folder)
    assert ref.keys() == resumed.keys() and all(torch.equal(ref[k], resumed[k]) for k in ref)


def test_a_slow_sft_saves_by_wall_clock_and_resumes_bit_identically(tmp_path, monkeypatch):
    torch.set_num_threads(1)
    cfg = tiny_config(tmp_path, sft__steps=5, sft__lr=3e-3, sft__episodes=20)
    reference = tmp_path / "reference"
    _build_watching(monkeypatch, cfg, reference)

    monkeypatch.setattr(sft, "SFT_CHECKPOINT_SECONDS", 0.0)  # every step is "slow": each one saves
    saved = []
    real_save = sft._save_sft_state
    monkeypatch.setattr(sft, "_save_sft_state", lambda path, step, *a: (saved.append(step), real_save(path, step, *a)))
    folder = tmp_path / "warm"
    with pytest.raises(Killed):
        _build_watching(monkeypatch, cfg, folder, die_at=2)  # saved after steps 1, 2, 3 (0-based 0..2), then killed
    assert saved == [1, 2, 3]
    assert _build_watching(monkeypatch, cfg, folder) == [3, 4]  # resumed after the third step
    assert saved == [1, 2, 3, 4]  # no save after the last step: the folder is written instead
    ref, resumed = _weights(reference), _weights(folder)
    assert ref.keys() == resumed.keys() and all(torch.equal(ref[k], resumed[k]) for k in ref)


def test_an_sft_checkpoint_is_named_by_the_settings_it_was_written_under(tmp_path):
    folder = tmp_path / "warm"
    seven, eight = tiny_config(tmp_path, sft__steps=7), tiny_config(tmp_path, sft__steps=8)
    assert sft_checkpoint_path(seven, folder) != sft_checkpoint_path(eight, folder)
    assert sft_checkpoint_path(seven, folder).parent == tmp_path


def test_spent_adds_the_time_of_interrupted_processes(monkeypatch):
    clock = {"wall": 100.0, "cpu": 10.0}
    monkeypatch.setattr(sft.time, "monotonic", lambda: clock["wall"])
    monkeypatch.setattr(sft.time, "process_time", lambda: clock["cpu"])
    spent = sft.Spent()
    spent.carry({"wall_s": 30.0, "cpu_s": 20.0})  # what a killed process had spent when it saved
    clock["wall"], clock["cpu"] = 105.0, 12.0  # this process: 5 s of wall clock, 2 s of CPU
    assert spent.now() == {"wall_s": 35.0, "cpu_s": 22.0}

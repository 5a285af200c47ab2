"""A warm start killed during SFT continues from its last SFT checkpoint and ends bit-identical to one
built without a stop; the checkpoint is keyed by the warm-start settings and removed once the folder is saved."""

import pytest
import torch
from safetensors.torch import load_file
from train_helpers import tiny_config

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
    assert _build_watching(monkeypatch, cfg, folder) == [3, 4, 5, 6]  # resumed, not restarted
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

"""A warm start is reused only when it was built with the run's settings, and the record states the warm
start a run actually used (its key, source and SFT settings)."""

import json

import pytest
import torch
import yaml
from reliability_helpers import assert_parameters_changed, run_config
from safetensors.torch import load_file
from train_helpers import tiny_config

from agentbench_af.train import loop


def _recorded_sft_steps(warm_dir) -> int:
    return yaml.safe_load((warm_dir / "warm_start.yaml").read_text())["config"]["sft"]["steps"]


def test_a_warm_start_built_with_other_settings_is_rebuilt(tmp_path):
    from agentbench_af.train.loop import prepare_warm_start

    warm = tmp_path / "warm"
    prepare_warm_start(tiny_config(tmp_path, sft__steps=2), warm, torch.device("cpu"), show_progress=False)
    two = load_file(str(warm / "model.safetensors"))
    prepare_warm_start(tiny_config(tmp_path, sft__steps=2), warm, torch.device("cpu"), show_progress=False)
    assert all(torch.equal(two[k], v) for k, v in load_file(str(warm / "model.safetensors")).items())  # reused
    five = tiny_config(tmp_path, sft__steps=5)
    prepare_warm_start(five, warm, torch.device("cpu"), show_progress=False)
    assert _recorded_sft_steps(warm) == 5
    from agentbench_af.train.warm.warm_start import settings_key, warm_start_settings

    assert yaml.safe_load((warm / "warm_start.yaml").read_text())["key"] == settings_key(warm_start_settings(five))
    assert any(not torch.equal(two[k], v) for k, v in load_file(str(warm / "model.safetensors")).items())
    assert not list(tmp_path.glob(".warm*"))  # no temporary folder left behind


def test_a_stale_warm_start_in_a_run_folder_is_rebuilt_and_recorded(tmp_path, monkeypatch):
    real = loop.collect_rollouts

    def dies(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(loop, "collect_rollouts", dies)
    with pytest.raises(KeyboardInterrupt):  # fails after its warm start, before its first checkpoint
        loop.train(tiny_config(tmp_path, run__name="run", sft__steps=2), show_progress=False)
    monkeypatch.setattr(loop, "collect_rollouts", real)
    (tmp_path / "run" / "config.yaml").unlink()  # the folder no longer says which config built it
    record = loop.train(tiny_config(tmp_path, run__name="run", sft__steps=4), show_progress=False)
    assert _recorded_sft_steps(tmp_path / "run" / "warm_start") == 4
    assert record.warm_start["source"] == "built" and record.warm_start["sft"]["steps"] == 4
    assert record.protocol["sft_steps"] == 4
    saved = json.loads((tmp_path / "run" / "record.json").read_text())
    from agentbench_af.train.warm.warm_start import settings_key, warm_start_settings

    assert saved["warm_start"]["key"] == settings_key(warm_start_settings(tiny_config(tmp_path, sft__steps=4)))


def test_a_branched_run_records_the_warm_start_it_branched_from(tmp_path, warm_start):
    cfg = run_config(tmp_path, warm_start)  # its own sft.steps is 2; the warm start it branches from had 30
    record = loop.train(cfg, show_progress=False)
    assert record.warm_start["source"] == "init_from" and record.warm_start["path"] == str(warm_start)
    assert record.warm_start["sft"]["steps"] == 30 and record.warm_start["matches_config"] is False
    assert record.protocol["sft_steps"] == 30
    assert_parameters_changed(tmp_path / "run" / "final_policy", warm_start)

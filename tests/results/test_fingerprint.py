"""The environment fingerprint in run records, and which fingerprints must reproduce each other exactly."""

import json
from pathlib import Path

import torch

from agentbench_af.results.fingerprint import (
    class_differences,
    code_hash,
    environment_fingerprint,
    same_class,
)
from agentbench_af.results.record import RunRecord, git_commit

LEADERBOARDS = Path(__file__).resolve().parents[2] / "leaderboards"

CPU = {"device": "cpu", "cpu_model": "AMD EPYC", "cpu_capability": "AVX512", "gpu_name": None, "cuda": None,
       "cudnn": None, "python": "3.11.7", "torch": "2.13.0+cpu", "transformers": "5.24.0", "tokenizers": "0.23.3",
       "numpy": "2.4.6", "commit": "a" * 40, "clean": True, "code_hash": "0123456789abcdef"}


def test_cpu_fingerprint_names_this_machine_and_these_versions():
    fp = environment_fingerprint("cpu")
    assert fp["device"] == "cpu"
    assert fp["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert fp["torch"] == torch.__version__
    assert fp["gpu_name"] is None and fp["cuda"] is None and fp["cudnn"] is None
    commit = git_commit()
    assert fp["commit"] == (commit.removesuffix("-dirty") if commit else None)
    assert fp["clean"] == (None if commit is None else not commit.endswith("-dirty"))
    assert fp["code_hash"] == code_hash() and len(fp["code_hash"]) == 16
    assert environment_fingerprint(torch.device("cpu")) == fp
    json.dumps(fp)  # stored in record.json as it is


def test_same_class_compares_capability_and_versions_not_cpu_name_or_commit():
    other_machine = {**CPU, "cpu_model": "Intel Xeon", "commit": "b" * 40, "clean": False, "code_hash": "f" * 16}
    assert class_differences(CPU, other_machine) == []
    assert same_class(CPU, other_machine) is True
    assert class_differences(CPU, {**CPU, "cpu_capability": "AVX2"}) == ["cpu_capability AVX512 vs AVX2"]
    assert class_differences(CPU, {**CPU, "transformers": "5.23.0", "numpy": "2.4.5"}) == [
        "transformers 5.24.0 vs 5.23.0", "numpy 2.4.6 vs 2.4.5"]
    assert same_class(CPU, {**CPU, "python": "3.12.1"}) is False


def test_gpu_fingerprints_compare_the_gpu_and_cuda_versions():
    gpu = {**CPU, "device": "cuda", "gpu_name": "NVIDIA H100", "cuda": "12.8", "cudnn": "91000", "torch": "2.13.0"}
    assert same_class(gpu, {**gpu, "cpu_capability": "AVX2"}) is True  # the host CPU does not do the numerics
    assert class_differences(gpu, {**gpu, "gpu_name": "NVIDIA H200"}) == ["gpu_name NVIDIA H100 vs NVIDIA H200"]
    assert class_differences(gpu, {**gpu, "cudnn": "90100"}) == ["cudnn 91000 vs 90100"]
    assert class_differences(gpu, CPU) == ["device cuda vs cpu"]


def test_a_missing_fingerprint_is_unknown():
    assert same_class(None, CPU) is None and class_differences(CPU, None) is None and same_class({}, CPU) is None


def test_records_written_before_fingerprints_still_load():
    old = next(LEADERBOARDS.glob("learning-check-sokoban-v7/runs/*/record.json"))
    assert "fingerprint" not in json.loads(old.read_text())
    record = RunRecord.load(old)
    assert record.fingerprint is None and record.final_success is not None


def test_the_fingerprint_round_trips_through_record_json(tmp_path):
    record = RunRecord(env_id="FrozenLake-4x4-v0", method="ppo", model="tiny-0.12m", model_params=1, seed=0,
                       config_hash="c" * 12, config={}, protocol={}, final_success=0.5, fingerprint=CPU)
    record.save(tmp_path)
    assert RunRecord.load(tmp_path).fingerprint == CPU

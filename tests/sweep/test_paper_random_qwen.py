"""`agentbench-af reproduce --preset paper --model-dir DIR` end to end on CPU, on a random-weight Qwen2
model with a ChatML tokenizer saved under DIR (no download): FrozenLake, GRPO, 2 RL steps. Only sizes
and steps are overridden, plus the device and dtype (CPU, float32); the transformers engine here, vLLM
in the `vllm`-marked test (the preset's own engine)."""

import json

import pytest
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.io import read_jsonl
from agentbench_af.models.corpus import environment_corpus
from agentbench_af.models.random_qwen import save_random_qwen2

ENV, MODEL = "FrozenLake-4x4-slippery-v0", "Qwen2.5-0.5B-Instruct"
SMALL = ["rl.steps=2", "rl.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=24",
         "rollout.max_context_tokens=1024", "rollout.vllm_kv_cache_gib=0.25", "rollout.vllm_memory_fraction=0.1",
         "eval.episodes=2", "eval.every=2", "run.checkpoint_every=1", "run.device=cpu", "model.dtype=float32",
         "run.threads=1"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    save_random_qwen2(root / MODEL, environment_corpus([ENV], 10, 0))
    return root


def _reproduce(model_dir, tmp_path, *extra):
    args = ["reproduce", "--preset", "paper", "--model-dir", str(model_dir), "--env", ENV, "--model", MODEL,
            "--method", "grpo", "--out", str(tmp_path / "board"), "--work-dir", str(tmp_path / "work"),
            "--backend", "serial", "--quiet"]
    for item in [*SMALL, *extra]:
        args += ["--set", item]
    return CliRunner().invoke(app, args)


def _check_run(tmp_path, engine):
    record = json.loads(next((tmp_path / "board").rglob("record.json")).read_text())
    assert record["status"] == "completed" and record["env_id"] == ENV and record["method"] == "grpo"
    cfg = record["config"]
    assert cfg["model"]["path"].startswith("/") and cfg["model"]["path"].endswith("/" + MODEL)  # under --model-dir
    assert cfg["rollout"]["engine"] == engine and cfg["rollout"]["prompt_prefix"] == "<think>"  # the preset's
    assert cfg["sft"]["steps"] == 0 and cfg["rl"]["lr"] == 1e-6 and cfg["rl"]["minibatches"] == 4
    run_dir = next((tmp_path / "work" / "runs").iterdir())
    rows = read_jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    for row in rows[1:]:
        assert row["response_tokens"] > 0 and row["rollout/logprob_mismatch_max"] < 1e-3
    assert (tmp_path / "board" / "table.md").is_file()


def test_paper_preset_on_a_random_qwen2_with_transformers(model_dir, tmp_path):
    result = _reproduce(model_dir, tmp_path, "rollout.engine=transformers")
    assert result.exit_code == 0, result.output
    assert "1 runs (0 failed)" in result.output
    _check_run(tmp_path, "transformers")


@pytest.mark.vllm
def test_paper_preset_on_a_random_qwen2_with_vllm(model_dir, tmp_path, vllm_available):
    result = _reproduce(model_dir, tmp_path)
    assert result.exit_code == 0, result.output
    _check_run(tmp_path, "vllm")


def test_subset_and_overrides_are_checked(model_dir, tmp_path):
    result = CliRunner().invoke(app, ["reproduce", "--preset", "paper", "--model-dir", str(model_dir),
                                      "--env", "FrozenLake-8x8-v0", "--dry-run"])
    assert result.exit_code == 2 and "preset paper has no envs ['FrozenLake-8x8-v0']" in result.output
    # the preset's other models are not needed when the grid is cut to one; the CPU run needs no GPU
    result = CliRunner().invoke(app, ["reproduce", "--preset", "paper", "--model-dir", str(model_dir), "--model", MODEL,
                                      "--set", "run.device=cpu", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "4 (env, model) cell(s) over 4 env(s) x 6 method(s)" in result.output
    result = CliRunner().invoke(app, ["reproduce", "--preset", "paper", "--model-dir", str(tmp_path), "--model", MODEL,
                                      "--set", "run.device=cpu", "--dry-run"])
    assert result.exit_code == 2 and f"no weights for {MODEL}" in result.output

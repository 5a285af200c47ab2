"""The GPU check (`scripts/gpu_check.sh`, docs/gpu.md) kept alive on CPU: its dry run passes every stage
and writes well-formed JSON and Markdown; its formulas and shapes are checked by hand."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import gpu_check  # noqa: E402
import gpu_stages  # noqa: E402


def test_qwen25_shapes_have_the_released_parameter_counts():
    """Qwen2.5-0.5B by hand: embedding 151,936 x 896 = 136,134,656; a layer = q 896x896+896, k and v
    896x128+128 each, o 896x896, MLP 3 x 896 x 4864, two norms 2 x 896 = 14,912,384; 24 layers + final
    norm 896 = 494,032,768 (the model card's 0.49B). 1.5B and 3B: the counts their configs give."""
    from agentbench_af.models.random_qwen import random_qwen2

    class Tok:  # a tokenizer's vocabulary size and special ids are all random_qwen2 reads
        def __init__(self, vocab):
            self.vocab, self.pad_token_id, self.eos_token_id = vocab, 0, 1

        def get_vocab(self):
            return {"x": self.vocab - 1}

    layer = 896 * 896 + 896 + 2 * (896 * 128 + 128) + 896 * 896 + 3 * 896 * 4864 + 2 * 896
    assert layer == 14_912_384 and 151_936 * 896 + 24 * layer + 896 == 494_032_768
    expected = {"qwen-0.5b": 494_032_768, "qwen-1.5b": 1_543_714_304, "qwen-3b": 3_085_938_688}
    for name, s in gpu_stages.QWEN25.items():
        with torch.device("meta"):
            lm = random_qwen2(Tok(s.vocab), hidden=s.hidden, layers=s.layers, heads=s.heads, kv_heads=s.kv_heads,
                              intermediate=s.intermediate)
        assert sum(p.numel() for p in lm.parameters()) == expected[name], name
        assert lm.config.tie_word_embeddings and lm.config.intermediate_size == s.intermediate


def test_mfu_and_peak_lookup_by_hand():
    # 0.5B params, 1000 tokens, scoring pass: (6 + 2) x 5e8 x 1e3 = 4e12 FLOPs; in 0.01 s on a 989 TFLOP/s
    # device: 4e14 / 9.89e14 = 0.40445...
    flops = gpu_stages.update_flops(500_000_000, 1000, scoring_pass=True)
    assert flops == 4e12 and gpu_stages.update_flops(500_000_000, 1000, scoring_pass=False) == 3e12
    assert gpu_stages.mfu(flops, 0.01, 989e12) == pytest.approx(0.404448, rel=1e-5)
    assert gpu_stages.mfu(flops, 0.01, None) is None
    assert gpu_stages.bf16_peak("NVIDIA H100 80GB HBM3") == 989e12
    assert gpu_stages.bf16_peak("NVIDIA H100 PCIe") == 756e12
    assert gpu_stages.bf16_peak("NVIDIA H200") == 989e12
    assert gpu_stages.bf16_peak("Some Future GPU") is None


def test_padded_qwen_tokenizer_decodes_every_id():
    tok = gpu_stages.qwen_tokenizer(600)
    assert len(tok) == 600 and tok.decode([599]) == "<|unused_87|>"


def test_unknown_stage_is_refused(tmp_path):
    with pytest.raises(SystemExit):
        gpu_check.main(["--out", str(tmp_path), "--stages", "device,warp-drive"])


def test_budget_skips_what_does_not_fit(tmp_path):
    assert gpu_check.main(["--out", str(tmp_path), "--work", str(tmp_path / "work"), "--device", "cpu", "--tiny",
                           "--stages", "device", "--budget-s", "5"]) == 1
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert [s["status"] for s in report["stages"]] == ["skipped"]
    assert "rerun with --stages device" in report["stages"][0]["error"]


@pytest.mark.slow
def test_dry_run_passes_every_stage(tmp_path):
    """`bash scripts/gpu_check.sh --dry-run`: every stage on CPU with tiny shapes (torchrun with gloo)."""
    out = tmp_path / "out"
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--dry-run", "--out", str(out),
                           "--work", str(tmp_path / "work"), "--budget-s", "900"],
                          capture_output=True, text=True, timeout=1200)
    log = (out / "gpu_check.log").read_text() if (out / "gpu_check.log").is_file() else ""
    assert proc.returncode == 0, proc.stdout[-3000:] + log[-3000:]
    report = json.loads((out / "gpu_check.json").read_text())
    assert [s["stage"] for s in report["stages"]] == list(gpu_check.LIMIT_S)
    assert all(s["status"] == "passed" for s in report["stages"]), [(s["stage"], s.get("error")) for s in report["stages"]]
    st = {s["stage"]: s for s in report["stages"]}
    assert st["qwen-0.5b"]["rollout"]["generated_tokens"] > 0 and st["qwen-0.5b"]["update"]["fits_full_batch"]
    assert st["qwen-3b"]["batch_from"] == "qwen-0.5b stage"
    assert st["paper"]["record_status"] == "completed" and st["paper"]["steps"] == [0, 1, 2]
    assert {st["nccl-ddp"]["wrapped_as"], st["nccl-fsdp2"]["wrapped_as"]} == {"DistributedDataParallel",
                                                                             "FSDPQwen2ForCausalLM"}
    assert st["nccl-fsdp2"]["backend"] == "gloo" and st["nccl-ddp"]["max_update_size"] > 0
    md = (out / "gpu_check.md").read_text()
    assert f"{len(st)} of {len(st)} stages passed" in md
    for table in md.split("\n\n"):  # every Markdown table has a header, a separator and equal column counts
        rows = [r for r in table.splitlines() if r.startswith("|")]
        if rows:
            assert set(rows[1].replace("|", "")) <= {"-"} and len({r.count("|") for r in rows}) == 1, table


class _Rows:
    """What `update_until_it_fits` reads of a batch: its rows, masks and width."""

    def __init__(self, rows: int, width: int = 10) -> None:
        self.batch_size = rows
        self.input_ids = torch.zeros(rows, width, dtype=torch.long)
        self.attention_mask = torch.ones(rows, width)
        self.response_mask = torch.ones(rows, width)

    def select(self, rows):
        return _Rows(len(rows), self.input_ids.shape[1])

    def crop(self):
        return self


def test_update_halves_the_rows_until_it_fits(monkeypatch):
    from types import SimpleNamespace

    def update(cfg, model_dir, part, device, autocast):
        if part.batch_size > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 9.00 GiB")
        return {"seconds": 0.5, "peak_bytes": 3 * 2**30, "param_dtype": "bfloat16", "probe_changed_fraction": 0.25,
                "pg_loss": 0.0}

    monkeypatch.setattr(gpu_stages, "timed_update", update)
    cfg = SimpleNamespace(rl=SimpleNamespace(minibatches=1))
    r = gpu_stages.update_until_it_fits(cfg, None, _Rows(8), torch.device("cpu"), None, params=1000, peak=1e9)
    assert (r["rows"], r["full_rows"], r["fits_full_batch"]) == (2, 8, False)
    assert [a["rows"] for a in r["oom_attempts"]] == [8, 4]
    # 2 rows x 10 tokens = 20 tokens; (6 + 2) x 1000 x 20 = 160,000 FLOPs in 0.5 s on 1e9 FLOP/s: MFU 3.2e-4
    assert r["tokens"] == 20 and r["update_flops"] == 160_000 and r["mfu"] == pytest.approx(3.2e-4)
    assert r["update_tokens_per_s"] == 40 and r["peak_memory_gib"] == 3.0 and r["fits_h100_80gb"]
    cfg = SimpleNamespace(rl=SimpleNamespace(minibatches=4))  # nothing fits with a row per minibatch
    r = gpu_stages.update_until_it_fits(cfg, None, _Rows(8), torch.device("cpu"), None, params=1000, peak=1e9)
    assert r["rows"] == 0 and r["fits_h100_80gb"] is False and [a["rows"] for a in r["oom_attempts"]] == [8, 4]

    def broken(*args):
        raise ValueError("not a memory problem")

    monkeypatch.setattr(gpu_stages, "timed_update", broken)
    with pytest.raises(ValueError, match="not a memory problem"):
        gpu_stages.update_until_it_fits(cfg, None, _Rows(8), torch.device("cpu"), None, params=1000, peak=1e9)

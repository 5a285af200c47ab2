"""`benchmarks/sft_step_cost.py` on the tiny family: one mode's figures, fp32 and under bf16 autocast."""

from __future__ import annotations

import argparse

import bench_scripts  # noqa: F401  (puts benchmarks/ on the path)
import pytest
import sft_step_cost


def _args(**extra) -> argparse.Namespace:
    base = dict(mode="lora", model="tiny-0.2m", env=bench_scripts.ENV, rows=2, columns=320, max_new_tokens=48,
                rank=4, alpha=4, lr=1e-3, warmup=0, steps=1, threads=1, seed=0, bf16=False, read_both=False)
    return argparse.Namespace(**{**base, **extra})


@pytest.mark.parametrize("bf16", [False, True])
def test_one_mode_reports_a_step_at_its_precision(bf16):
    row = sft_step_cost.one_mode(_args(bf16=bf16))
    assert row["autocast"] == ("bfloat16" if bf16 else "float32")
    assert (row["rows"], row["columns"]) == (2, 320) and row["response_tokens"] > 0
    assert 0 < row["trainable_params"] < row["total_params"]  # adapters only
    assert row["step_s"] > 0 and len(row["losses"]) == 1 and row["losses"][0] > 0


def test_read_both_reads_the_trained_weights_in_both_precisions():
    row = sft_step_cost.one_mode(_args(bf16=True, read_both=True, steps=2))
    fp32, bf16 = row["loss_fp32_forward"], row["loss_bf16_forward"]
    assert fp32 < row["losses"][0] and bf16 == pytest.approx(fp32, rel=0.05) and bf16 != fp32
    assert row["loss_bf16_forward_merged"] == pytest.approx(fp32, rel=0.05)

"""benchmarks/cpu_precision.py: the alternating timer's order and medians, and one tiny run end to end."""

from __future__ import annotations

import json
import sys

import bench_scripts  # noqa: F401  (first: it puts benchmarks/ on sys.path)
import cpu_precision
import pytest


def test_median_seconds_warms_up_then_alternates(monkeypatch):
    calls: list[str] = []
    clock = iter(range(100))  # each perf_counter() call advances 1 s: every timed call lasts 1 s
    monkeypatch.setattr(cpu_precision.time, "perf_counter", lambda: float(next(clock)))
    runs = {"fp32": lambda: calls.append("fp32"), "bf16": lambda: calls.append("bf16")}
    medians = cpu_precision.median_seconds(runs, repeats=3)
    # one warm-up each, then AB, BA, AB
    assert calls == ["fp32", "bf16", "fp32", "bf16", "bf16", "fp32", "fp32", "bf16"]
    assert medians == {"fp32": 1.0, "bf16": 1.0}


def test_one_tiny_run_prints_three_operations(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["cpu_precision.py", "--layers", "1", "--rows", "1", "--columns", "4",
                                      "--new-tokens", "2", "--matmul-size", "8", "--repeats", "1", "--json"])
    cpu_precision.main()
    out = json.loads(capsys.readouterr().out)
    assert [r["operation"].split()[0] for r in out["rows"]] == ["matmul", "train", "decode"]
    assert all(r["fp32_s"] > 0 and r["bf16_s"] > 0 for r in out["rows"])
    assert out["threads"] == 1


def test_a_zero_size_is_refused(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["cpu_precision.py", "--repeats", "0"])
    with pytest.raises(SystemExit):
        cpu_precision.main()

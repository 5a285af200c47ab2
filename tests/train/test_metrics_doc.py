"""docs/algorithms.md explains every metric a run logs to metrics.jsonl, and names none that no run logs.

The keys come from a real 2-step run that turns on every optional metric: PPO (a critic: `value_loss`,
`critic_grad_norm`), a KL term (`kl_ref`) and greedy evaluation (`eval/greedy_*`). Nested keys are
joined with `/`, as the trackers name them. The doc's keys are the backticked first cells of the table
under its "## Logged metrics" heading.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from train_helpers import tiny_config

from agentbench_af.io import read_jsonl
from agentbench_af.train.loop import train

DOC = Path(__file__).resolve().parents[2] / "docs" / "algorithms.md"


def documented_metrics(markdown: str) -> set[str]:
    """Backticked first cells of the table rows in the "## Logged metrics" section."""
    section = markdown.split("\n## Logged metrics\n", 1)
    if len(section) != 2:
        raise ValueError("docs/algorithms.md has no '## Logged metrics' section")
    body = section[1].split("\n## ", 1)[0]
    return {m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", body, re.M)}


def conditional_metrics(markdown: str) -> set[str]:
    """The documented keys whose row says "(may be absent": logged only where their input exists."""
    body = markdown.split("\n## Logged metrics\n", 1)[1].split("\n## ", 1)[0]
    return {m.group(1) for m in re.finditer(r"^\| `([^`]+)` \| \(may be absent", body, re.M)}


def logged_keys(row: dict[str, Any], prefix: str = "") -> set[str]:
    """Every key of a metrics row, nested mappings joined with `/`."""
    keys: set[str] = set()
    for key, value in row.items():
        name = f"{prefix}{key}"
        keys |= logged_keys(value, f"{name}/") if isinstance(value, dict) else {name}
    return keys


def test_documented_metrics_parses_the_table():
    doc = "# T\n\n## Logged metrics\n\n| key | what |\n|---|---|\n| `a` | x |\n| `b/c` | y |\n\n## Next\n\n| `d` | z |\n"
    assert documented_metrics(doc) == {"a", "b/c"}


def test_conditional_metrics_are_the_may_be_absent_rows():
    doc = "# T\n\n## Logged metrics\n\n| key | what |\n|---|---|\n| `a` | x |\n| `b` | (may be absent: rarely) y |\n"
    assert conditional_metrics(doc) == {"b"}


def test_logged_keys_flattens_nested_rows():
    assert logged_keys({"step": 1, "eval": {"success": 0.5}, "x/y": 2.0}) == {"step", "eval/success", "x/y"}


def test_every_logged_metric_is_explained(tmp_path):
    cfg = tiny_config(tmp_path, method="ppo+actfocus", loss__kl_coef=0.01, eval__also_greedy="true")
    train(cfg, show_progress=False)
    rows = read_jsonl(tmp_path / cfg.run_name / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2]
    logged = set().union(*(logged_keys(r) for r in rows))
    documented = documented_metrics(DOC.read_text())
    assert not logged - documented, f"logged but not explained in docs/algorithms.md: {sorted(logged - documented)}"
    unlogged = documented - logged - conditional_metrics(DOC.read_text())
    assert not unlogged, f"explained in docs/algorithms.md but not logged: {sorted(unlogged)}"

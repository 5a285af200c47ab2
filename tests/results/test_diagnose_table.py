"""`agentbench-af diagnose-table`: a row per diagnose output folder, its numbers copied from bottleneck.json."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "diagnose"))
from diag_factory import bandit_trajs, make_batch  # noqa: E402

from agentbench_af.cli import app  # noqa: E402
from agentbench_af.diagnose import compute_bottleneck  # noqa: E402
from agentbench_af.diagnose.headline import HeadlineStats, RoleSignal  # noqa: E402
from agentbench_af.diagnose.report import write_report  # noqa: E402
from agentbench_af.results.diagnose_table import diagnostic_row  # noqa: E402

torch.set_num_threads(1)
runner = CliRunner()


def _headline(ratio, lo, hi, null, reason=None) -> HeadlineStats:
    role = RoleSignal(10, 1.0, 1.0, 0.0, 1.0, 0.5, 0.5, None, 0, None, 0)
    return HeadlineStats(ratio=ratio, null=null, ci_low=lo, ci_high=hi, confidence=0.95, n_groups_used=8,
                         n_groups_measured=6, max_groups=6, shuffles=64, resamples=1000, format_role="reasoning",
                         roles={"action": role, "reasoning": role}, reason=reason)


@pytest.fixture(scope="module")
def stats():
    return compute_bottleneck(make_batch(bandit_trajs(0, "action", n_groups=8), mode="window"))


def test_rows_copy_the_reports_and_place_the_interval(tmp_path, stats):
    cases = {"above": _headline(1.8, 1.2, 2.4, 1.0), "below": _headline(0.6, 0.45, 0.83, 1.31),
             "contains": _headline(1.1, 0.7, 1.5, 1.0), "none": _headline(None, None, None, None, "no group has reward variance")}
    for name, head in cases.items():
        write_report(stats, tmp_path / name, step=0, meta={"env": "FrozenLake-4x4-v0", "model": "warm_start"}, headline=head)
    rows = {name: diagnostic_row(tmp_path / name) for name in cases}
    assert rows["above"].where == "above the null" and rows["below"].where == "below the null"
    assert rows["contains"].where == "contains the null"
    assert rows["none"].where == "undefined: no group has reward variance" and rows["none"].ratio is None
    row = rows["below"]
    assert (row.label, row.env, row.model, row.ratio, row.ci_low, row.null, row.groups_measured) == \
        ("below", "FrozenLake-4x4-v0", "warm_start", 0.6, 0.45, 1.31, 6)
    overall = stats.sources["entropy"].overall.roles
    assert row.token_share["action"] == overall["action"].token_share
    assert row.entropy["reasoning"] == overall["reasoning"].mean_energy
    assert (row.trajectories, row.groups, row.generated_tokens) == (stats.n_trajectories, stats.n_groups,
                                                                    stats.n_generated_tokens)


def test_the_command_writes_one_table_in_folder_order(tmp_path, stats):
    for name, head in (("zs", _headline(None, None, None, None, "no group has reward variance")),
                       ("warm", _headline(0.6, 0.45, 0.83, 1.31))):
        write_report(stats, tmp_path / name, step=0, meta={"env": "Sokoban-6x6-1box-v0"}, headline=head)
    result = runner.invoke(app, ["diagnose-table", str(tmp_path / "zs"), str(tmp_path / "warm"), "--label", "zero-shot",
                                 "--label", "warm start", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    md = (tmp_path / "out" / "diagnose-table.md").read_text()
    assert md.index("| zero-shot |") < md.index("| warm start |") and "0.60 [0.45, 0.83] | 1.31 | below the null" in md
    csv = pd.read_csv(tmp_path / "out" / "diagnose-table.csv")
    assert list(csv["label"]) == ["zero-shot", "warm start"] and csv["ratio"].isna().tolist() == [True, False]


def test_bad_input_is_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    result = runner.invoke(app, ["diagnose-table", str(tmp_path / "empty")])
    assert result.exit_code == 2 and "has no bottleneck.json" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["diagnose-table", str(tmp_path / "empty"), "--label", "a", "--label", "b"])
    assert result.exit_code == 2 and "2 --label for 1 folders" in result.output

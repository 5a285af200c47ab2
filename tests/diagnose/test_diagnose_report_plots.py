"""bottleneck.json / bottleneck.md and the three plots."""

from __future__ import annotations

import json

import pytest
import torch
from diag_factory import Traj, Turn, bandit_trajs, make_batch

from agentbench_af.diagnose import compute_bottleneck
from agentbench_af.diagnose.plots import plot_energy, plot_ratio_over_steps, plot_shares
from agentbench_af.diagnose.report import load_report, markdown_summary, verdict, write_report

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def action_stats():
    return compute_bottleneck(make_batch(bandit_trajs(0, "action", n_groups=8), mode="window"))


def test_report_files_round_trip(tmp_path, action_stats):
    paths = write_report(action_stats, tmp_path / "diag", step=40, meta={"env": "FrozenLake-4x4-v0"})
    assert sorted(p.name for p in (tmp_path / "diag").iterdir()) == ["bottleneck.json", "bottleneck.md"]
    step, meta, back = load_report(paths["json"])
    assert (step, meta, back) == (40, {"env": "FrozenLake-4x4-v0"}, action_stats)
    raw = json.loads(paths["json"].read_text())
    assert raw["stats"]["sources"]["old"]["bottleneck_ratio"] == pytest.approx(action_stats.sources["old"].bottleneck_ratio)
    md = paths["markdown"].read_text()
    assert md.startswith("# Action Bottleneck (step 40)")
    for name in ("old", "entropy", "ref"):
        assert f"## Energy source `{name}`" in md and f"### By turn (`{name}`)" in md
    assert "| role" in md and "| turn" in md and "Pearson" in md and "Spearman" in md
    assert "8 groups used, 0 skipped" in md


def test_markdown_numbers_and_verdicts(action_stats):
    ratio = action_stats.sources["old"].bottleneck_ratio
    md = markdown_summary(action_stats)
    action_row = next(line for line in md.splitlines() if line.startswith("| action"))
    assert f"{ratio:.2f}" in action_row
    null = action_stats.sources["old"].overall.roles["action"].null_ratio
    assert verdict(action_stats.sources["old"]).startswith(
        f"`old`: action ratio {ratio:.2f}, null ratio {null:.2f} (rewards shuffled in groups): action tokens")
    assert "Action Bottleneck present" not in md and "**Secondary (|c| ratio):**" in md
    flat = compute_bottleneck(make_batch([Traj(0, 1.0, [Turn("ra", [1.0, 2.0])])] * 2)).sources["old"]
    assert "undefined (no generated tokens in a group with reward variance)" in verdict(flat)
    no_action = compute_bottleneck(make_batch([Traj(0, 1.0, [Turn("rf", [1.0, 2.0])]),
                                               Traj(0, 0.0, [Turn("r", [1.0])])])).sources["old"]
    assert "undefined (no action tokens)" in verdict(no_action)


def test_report_overwrites_atomically_and_rejects_other_json(tmp_path, action_stats):
    write_report(action_stats, tmp_path, step=1)
    write_report(action_stats, tmp_path, step=2)
    assert load_report(tmp_path / "bottleneck.json")[0] == 2
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    (tmp_path / "other.json").write_text('{"a": 1}')
    with pytest.raises(ValueError, match="not a bottleneck.json"):
        load_report(tmp_path / "other.json")


def test_plots_write_png_and_deterministic_svg(tmp_path, action_stats):
    batch = make_batch(bandit_trajs(2, "action", n_groups=4))
    history = [(s, compute_bottleneck(make_batch(bandit_trajs(s, "action", n_groups=4)), ["old"]))
               for s in (0, 10, 20)]
    written = plot_shares(action_stats, tmp_path) + plot_energy(batch, tmp_path) + plot_ratio_over_steps(
        history, tmp_path)
    assert sorted(p.name for p in written) == sorted(
        f"bottleneck-{k}.{ext}" for k in ("shares", "energy", "ratio") for ext in ("png", "svg"))
    for p in written:
        head = p.read_bytes()[:8]
        assert head.startswith(b"\x89PNG") if p.suffix == ".png" else b"<svg" in p.read_bytes()[:400]
    first = (tmp_path / "bottleneck-ratio.svg").read_bytes()
    plot_ratio_over_steps(history, tmp_path)
    assert (tmp_path / "bottleneck-ratio.svg").read_bytes() == first


def test_plots_reject_empty_input(tmp_path, action_stats):
    with pytest.raises(ValueError, match="empty"):
        plot_ratio_over_steps([], tmp_path)
    no_gen = make_batch([Traj(0, 1.0, [Turn("", [])])])
    with pytest.raises(ValueError, match="no generated tokens"):
        plot_energy(no_gen, tmp_path)

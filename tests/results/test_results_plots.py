"""Plots from records: files written (PNG + SVG), contents drawn from the records, byte-identical reruns."""

import matplotlib.pyplot as plt
import pytest

from agentbench_af.results import plots
from agentbench_af.results.collect_records import find_records, records_frame
from agentbench_af.results.table import build_table


def test_curves_frame_skips_failed_runs(records_dir):
    curves = plots.curves_frame(find_records([records_dir]))
    assert "rloo" not in set(curves["method"])
    grpo = curves[(curves["method"] == "grpo") & (curves["model"] == "tiny-0.2m") & (curves["env"] == "FrozenLake-4x4-v0")]
    assert sorted(grpo["step"].unique()) == [0, 5, 10] and len(grpo) == 6


def test_plot_files_and_lines(records_dir, tmp_path, monkeypatch):
    drawn = {}
    real_save = plots._save

    def spy(fig, out_dir, stem):
        ax = fig.axes[0]
        drawn[stem] = ([line.get_label() for line in ax.get_lines()], [p.get_height() for p in ax.patches])
        return real_save(fig, out_dir, stem)

    monkeypatch.setattr(plots, "_save", spy)
    paths = find_records([records_dir])
    written = plots.plot_curves(plots.curves_frame(paths), tmp_path / "p")
    written += plots.plot_final_bars(build_table(records_frame(paths)), tmp_path / "p")
    assert sorted(p.name for p in written) == sorted(
        f"{stem}.{ext}" for stem in ("curve-FrozenLake-4x4-v0", "curve-FrozenLake-6x6-v0", "final-success")
        for ext in ("png", "svg"))
    for p in written:
        data = p.read_bytes()
        assert data.startswith(b"\x89PNG") if p.suffix == ".png" else b"<svg" in data[:500]
    labels, _ = drawn["curve-FrozenLake-4x4-v0"]
    assert labels == ["tiny-0.2m grpo (n=2)", "tiny-0.2m grpo+actfocus (n=2)", "tiny-0.2m ppo (n=3)", "tiny-0.7m grpo (n=2)"]
    _, heights = drawn["final-success"]
    # 4 rows on 4x4 and 2 on 6x6; bar heights are the means in percent
    assert sorted(round(h, 3) for h in heights) == sorted([33.333, 62.5, 87.5, 87.5, 25.0, 50.0])
    assert plt.get_fignums() == []  # figures are closed


def test_plots_are_byte_identical_when_regenerated(records_dir, tmp_path):
    paths = find_records([records_dir])
    table = build_table(records_frame(paths))
    first = {p.name: p.read_bytes() for p in plots.plot_final_bars(table, tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in plots.plot_final_bars(table, tmp_path / "b")}
    assert first == second


@pytest.mark.parametrize("hashes", [("aaaaaaaaaaaa", "bbbbbbbbbbbb")])
def test_split_configs_get_their_own_curves(tmp_path, hashes):
    from record_helpers import write_record

    for h in hashes:
        write_record(tmp_path, "FrozenLake-4x4-v0", "grpo", 0, 0.5, h)
    fig_paths = plots.plot_curves(plots.curves_frame(find_records([tmp_path])), tmp_path / "p")
    svg = fig_paths[1].read_text()
    assert "[config aaaaaaaaaaaa]" in svg and "[config bbbbbbbbbbbb]" in svg

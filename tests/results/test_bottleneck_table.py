"""The Action Bottleneck table on hand-made records; every expected cell is worked out by hand below."""

import shutil

import pytest
from record_helpers import write_record
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.results.bottleneck_table import build_bottleneck_table, to_csv, to_markdown
from agentbench_af.results.collect_records import records_frame

ENV4, ENV6 = "FrozenLake-4x4-v0", "FrozenLake-6x6-v0"
NO_VARIANCE = "no group with reward variance (4 groups)"
runner = CliRunner()


def snap(step: int, old: float | None, entropy: float | None) -> dict:
    def source(ratio):
        return {"ratio": ratio, "null_ratio": None, "action_token_share": None, "action_signal_share": None,
                "reason": None if ratio is not None else NO_VARIANCE}

    return {"step": step, "n_groups": 4, "n_groups_used": 0 if old is None else 3, "n_generated_tokens": 100,
            "sources": {"old": source(old), "entropy": source(entropy)}}


def field(warm: tuple, final: tuple) -> dict:
    return {"sources": ["old", "entropy"], "warm_start": snap(0, *warm), "final": snap(10, *final)}


# warm start (old, entropy) per seed: what every method of that seed measured at step 0 (the same batch)
WARM = {0: (1.2, 0.9), 1: (1.5, 1.1), 2: (1.8, 1.3)}


@pytest.fixture
def bottleneck_records(tmp_path):
    """FrozenLake-4x4 tiny-0.2m: ppo seeds 0-2 (final old 1, 2, 4; entropy 1, 1, 1), grpo seeds 0-1 (final old
    3 and undefined), grpo+actfocus without a bottleneck field (an older record); tiny-0.7m grpo seed 0;
    FrozenLake-6x6 grpo seeds 0 and 1 with two config hashes (warm 0.8 both, final 0.5 and 0.7); a failed run."""
    root = tmp_path / "records"
    for seed, final in enumerate([(1.0, 1.0), (2.0, 1.0), (4.0, 1.0)]):
        write_record(root, ENV4, "ppo", seed, 0.5, "aaaaaaaaaaaa", bottleneck=field(WARM[seed], final))
    for seed, final in enumerate([(3.0, 2.0), (None, None)]):
        write_record(root, ENV4, "grpo", seed, 0.5, "bbbbbbbbbbbb", bottleneck=field(WARM[seed], final))
    write_record(root, ENV4, "grpo+actfocus", 0, 0.75, "cccccccccccc")
    write_record(root, ENV4, "grpo", 0, 0.875, "ffffffffffff", model="tiny-0.7m", params=660_000,
                 bottleneck=field((2.5, 2.0), (1.25, 1.5)))
    write_record(root, ENV6, "grpo", 0, 0.25, "dddddddddddd", bottleneck=field((0.8, 0.8), (0.5, 0.5)))
    write_record(root, ENV6, "grpo", 1, 0.25, "eeeeeeeeeeee", bottleneck=field((0.8, 0.8), (0.7, 0.7)))
    write_record(root, ENV4, "rloo", 0, None, "999999999999", status="failed", error="boom",
                 bottleneck=field((9.0, 9.0), (9.0, 9.0)))
    return root


def _cell(table, source, env, model, column):
    (r,) = table.stats[(table.stats["source"] == source) & (table.stats["env"] == env) & (table.stats["model"] == model)
                       & (table.stats["column"] == column)].itertuples()
    return r


def test_cells_by_hand(bottleneck_records):
    t = build_bottleneck_table(records_frame([bottleneck_records]))
    # warm start, 4x4 tiny-0.2m, old: seeds 0, 1 measured by ppo and grpo alike count once: 1.2, 1.5, 1.8
    # mean 1.5, sd sqrt((0.09 + 0 + 0.09) / 2) = 0.3, SE 0.3 / sqrt(3) = 0.1732
    r = _cell(t, "old", ENV4, "tiny-0.2m", "warm start")
    assert (r.mean, r.se, r.n) == (pytest.approx(1.5), pytest.approx(0.3 / 3**0.5), 3)
    # ppo final, old: 1, 2, 4 -> mean 7/3, sd sqrt((16/9 + 1/9 + 25/9) / 2) = sqrt(7/3), SE sqrt(7/3) / sqrt(3)
    r = _cell(t, "old", ENV4, "tiny-0.2m", "ppo")
    assert (r.mean, r.se, r.n) == (pytest.approx(7 / 3), pytest.approx((7 / 3) ** 0.5 / 3**0.5), 3)
    # grpo final, old: 3 and an undefined ratio -> 3.0 over n = 1, one undefined
    r = _cell(t, "old", ENV4, "tiny-0.2m", "grpo")
    assert (r.mean, r.n, r.undefined) == (3.0, 1, 1)
    # 6x6: two seeds with the same warm-start numbers are two measurements; final 0.5, 0.7 -> SE 0.1
    r = _cell(t, "entropy", ENV6, "tiny-0.2m", "grpo")
    assert (r.mean, r.se, r.n) == (pytest.approx(0.6), pytest.approx(0.1), 2)
    assert _cell(t, "entropy", ENV6, "tiny-0.2m", "warm start").n == 2

    grid = t.grid.set_index(["source", "env", "model"])
    assert list(t.grid.columns) == ["source", "env", "model", "warm start", "ppo", "grpo"]  # no actfocus, no rloo
    assert grid.loc[("old", ENV4, "tiny-0.2m")].tolist() == ["1.50 ± 0.17 (3)", "2.33 ± 0.88 (3)", "3.00 (1)"]
    assert grid.loc[("entropy", ENV4, "tiny-0.2m")].tolist() == ["1.10 ± 0.12 (3)", "1.00 ± 0.00 (3)", "2.00 (1)"]
    assert grid.loc[("old", ENV4, "tiny-0.7m")].tolist() == ["2.50 (1)", "", "1.25 (1)"]
    assert grid.loc[("old", ENV6, "tiny-0.2m")].tolist() == ["0.80 ± 0.00 (2)", "", "0.60 ± 0.10 (2)"]
    # sources in order, then env, then model size
    assert [tuple(k) for k in t.grid[["source", "env", "model"]].values] == [
        ("old", ENV4, "tiny-0.2m"), ("old", ENV4, "tiny-0.7m"), ("old", ENV6, "tiny-0.2m"),
        ("entropy", ENV4, "tiny-0.2m"), ("entropy", ENV4, "tiny-0.7m"), ("entropy", ENV6, "tiny-0.2m")]
    assert t.notes == [
        f"`old` {ENV4} tiny-0.2m grpo: 1 of 2 without a ratio ({NO_VARIANCE})",
        f"`entropy` {ENV4} tiny-0.2m grpo: 1 of 2 without a ratio ({NO_VARIANCE})",
        f"{ENV6} tiny-0.2m grpo: records with 2 different configs pooled",
    ]
    md = to_markdown(t)
    assert "## Energy `old`" in md and md.index("## Energy `old`") < md.index("## Energy `entropy`")
    assert f"| {ENV4} tiny-0.2m | 1.50 ± 0.17 (3) | 2.33 ± 0.88 (3) | 3.00 (1)        |" in md
    assert to_csv(t).splitlines()[1] == f"old,{ENV4},tiny-0.2m,1.50 ± 0.17 (3),2.33 ± 0.88 (3),3.00 (1)"


def test_records_without_the_field_give_no_table(tmp_path):
    write_record(tmp_path, ENV4, "ppo", 0, 0.5)
    assert build_bottleneck_table(records_frame([tmp_path])) is None


def test_table_command_writes_it_byte_identically(bottleneck_records, tmp_path):
    res = runner.invoke(app, ["table", str(bottleneck_records)])
    assert res.exit_code == 0, res.output
    assert "# Action Bottleneck ratio" in res.output
    names = ("bottleneck.md", "bottleneck.csv")
    first = {n: (bottleneck_records / n).read_bytes() for n in names}
    copy = tmp_path / "elsewhere"
    shutil.copytree(bottleneck_records, copy)
    for n in (*names, "table.md", "table.csv", "table.tex", "stats.csv"):
        (copy / n).unlink()
    res = runner.invoke(app, ["table", str(copy), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert {n: (tmp_path / "out" / n).read_bytes() for n in names} == first
    res = runner.invoke(app, ["table", str(copy), "--out", str(tmp_path / "md"), "--format", "md"])
    written = sorted(p.name for p in (tmp_path / "md").iterdir())
    assert res.exit_code == 0 and written == ["bottleneck.md", "gains.md", "table.md"]
    res = runner.invoke(app, ["table", str(copy), "--out", str(tmp_path / "tex"), "--format", "tex"])
    assert res.exit_code == 0 and sorted(p.name for p in (tmp_path / "tex").iterdir()) == ["table.tex"]


def headline(ratio, null, lo, hi, reason=None) -> dict:
    return {"ratio": ratio, "null": null, "ci_low": lo, "ci_high": hi, "confidence": 0.95, "reason": reason}


def with_headline(step: int, old: float, null_ratio: float, h: dict) -> dict:
    s = snap(step, old, old)
    for src in s["sources"].values():
        src["null_ratio"] = null_ratio
    return {**s, "headline": h}


@pytest.fixture
def headline_records(tmp_path):
    """FrozenLake-4x4 tiny-0.2m. Warm start of every seed: ratio 1.0, null 1.0, interval [0.7, 1.3].
    grpo seeds 0-2 final: ratios 1.2, 1.6, 2.0, nulls 1.0, 1.0, 0.9, intervals [0.9, 1.5] (contains its
    null), [1.3, 1.9] and [1.5, 2.6] (above). ppo seed 0 final: 3.0 [2.5, 3.5], null 1.0; ppo seed 1:
    no headline ratio (no group with reward variance). Secondary old ratio 1.2 with null ratio 1.1 everywhere."""
    root = tmp_path / "records"
    warm = headline(1.0, 1.0, 0.7, 1.3)
    finals = {("grpo", 0): headline(1.2, 1.0, 0.9, 1.5), ("grpo", 1): headline(1.6, 1.0, 1.3, 1.9),
              ("grpo", 2): headline(2.0, 0.9, 1.5, 2.6), ("ppo", 0): headline(3.0, 1.0, 2.5, 3.5),
              ("ppo", 1): headline(None, None, None, None, NO_VARIANCE)}
    for (method, seed), h in finals.items():
        field = {"sources": ["old", "entropy"], "warm_start": with_headline(0, 1.2, 1.1, {**warm}),
                 "final": with_headline(10, 1.2, 1.1, h)}
        write_record(root, ENV4, method, seed, 0.5, "aaaaaaaaaaaa" if method == "ppo" else "bbbbbbbbbbbb",
                     bottleneck=field)
    return root


def test_headline_cells_by_hand(headline_records):
    t = build_bottleneck_table(records_frame([headline_records]))
    grid = t.headline_grid.set_index(["env", "model"])
    assert list(t.headline_grid.columns) == ["env", "model", "warm start", "ppo", "grpo"]
    # warm start: seeds 0, 1, 2 (grpo and ppo of one seed measured the same batch): 1.0 each, SE 0;
    # no interval above its null. ppo: one run with a ratio -> its interval; grpo: mean 1.6,
    # sd sqrt((0.16 + 0 + 0.16) / 2) = 0.4, SE 0.4 / sqrt(3) = 0.23; nulls (1 + 1 + 0.9) / 3 = 0.97; 2 of 3 above
    assert grid.loc[(ENV4, "tiny-0.2m")].tolist() == [
        "1.00 ± 0.00 (3); null 1.00; above null 0/3",
        "3.00 [2.50, 3.50] (1); null 1.00; above null 1/1",
        "1.60 ± 0.23 (3); null 0.97; above null 2/3"]
    assert t.notes[0] == f"headline {ENV4} tiny-0.2m ppo: 1 of 2 without a ratio ({NO_VARIANCE})"
    md = to_markdown(t)
    assert md.startswith("# Action Bottleneck\n\n## Headline: action/reasoning ratio of reward-linked gradient signal")
    # ppo holds in its one run with an interval; the other ppo run has none, and the line says so
    assert (f"holds, every run's interval above its null, in: {ENV4} tiny-0.2m ppo (1/1; 1 of 2 runs without an "
            "interval). In some runs only: "
            f"{ENV4} tiny-0.2m grpo (2/3). In no run: {ENV4} tiny-0.2m warm start.") in md
    assert md.index("## Headline") < md.index("## Secondary: |c| ratio") < md.index("### Energy `old` (secondary)")
    # the secondary cells carry their null ratio: 1.2 with null 1.1 in every run
    sec = t.grid.set_index(["source", "env", "model"]).loc[("old", ENV4, "tiny-0.2m")].tolist()
    assert sec[0] == "1.20 ± 0.00 (3); null 1.10"
    csv = to_csv(t).splitlines()
    assert csv[1].startswith(f"headline,{ENV4},tiny-0.2m,") and csv[2].startswith(f"old,{ENV4},tiny-0.2m,")


def test_old_records_render_without_headline_columns(bottleneck_records):
    t = build_bottleneck_table(records_frame([bottleneck_records]))
    assert t.headline_grid is None
    md = to_markdown(t)
    assert md.startswith("# Action Bottleneck ratio (signal share / token share of action tokens)")
    assert "Headline" not in md and "null" not in md

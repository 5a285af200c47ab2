"""The 2 x 2 analysis on hand-worked records (3 seeds, two methods x two learning rates)."""

from __future__ import annotations

import math

import pytest

from agentbench_af.results.factorial import FactorialSpec, contrasts, factorial_records, holm, paired_stats
from agentbench_af.results.record import RunRecord

# final success per (method, lr) for seeds 1, 2, 3; every cell starts from warm start 0.15 (greedy 0.25)
CELLS = {
    ("grpo", 0.0001): [0.10, 0.20, 0.30],
    ("grpo", 0.0004): [0.05, 0.10, 0.15],
    ("grpo+actfocus", 0.0001): [0.20, 0.20, 0.40],
    ("grpo+actfocus", 0.0004): [0.10, 0.30, 0.20],
}
SPEC = FactorialSpec(base="grpo", treated="grpo+actfocus")


def _write(root, method, lr, seed, success, warm=0.15, key="k1"):
    rec = RunRecord(
        env_id="FrozenLake-4x4-v0", method=method, model="tiny-0.2m", model_params=1, seed=seed,
        config_hash="h", config={"rl": {"lr": lr}}, protocol={}, final_success=success,
        final_metrics={"greedy_success": success}, warm_start_success=warm,
        curve=[{"step": 0, "success": warm, "greedy_success": 0.25}], warm_start={"key": key})
    rec.save(root / f"{method}-{lr}-s{seed}")


@pytest.fixture
def records(tmp_path):
    for (method, lr), values in CELLS.items():
        for seed, v in zip((1, 2, 3), values, strict=True):
            _write(tmp_path, method, lr, seed, v)
    return tmp_path


def _row(table, contrast, metric="T = 1"):
    rows = table[(table["contrast"] == contrast) & (table["metric"] == metric)]
    assert len(rows) == 1
    return rows.iloc[0]


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 over m = 3: 3 * 0.01 = 0.03; max(0.03, 2 * 0.03) = 0.06; max(0.06, 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert math.isnan(holm([math.nan, 0.2])[0]) and holm([math.nan, 0.2])[1] == pytest.approx(0.2)


def test_contrasts_by_hand(records):
    table = contrasts(factorial_records([records], SPEC), SPEC)
    lo = _row(table, "grpo+actfocus vs grpo @ 0.0001")
    # diffs 0.10, 0.00, 0.10: mean 1/15, sd 0.0577, SE 1/30, t = 2 on 2 df -> p 0.1835; 2 wins, 1 tie
    assert lo["mean"] == pytest.approx(0.2 / 3)
    assert lo["se"] == pytest.approx(1 / 30)
    assert lo["t_p"] == pytest.approx(0.18350, abs=1e-4)
    assert (lo["wins"], lo["losses"]) == (2, 0)
    assert lo["sign_p"] == pytest.approx(0.5)  # 2 of 2 non-tied pairs: 2 * 0.25
    assert lo["wilcoxon_p"] == pytest.approx(0.5)  # exact, n 2, both ranks positive
    hi = _row(table, "grpo+actfocus vs grpo @ 0.0004")
    # diffs 0.05, 0.20, 0.05: mean 0.10, sd 0.0866, SE 0.05, t = 2 -> the same p
    assert hi["mean"] == pytest.approx(0.10) and hi["se"] == pytest.approx(0.05)
    # Holm over the two primary p's (0.1835 each): 2 * 0.1835 = 0.367 for both
    assert lo["holm_p"] == pytest.approx(0.3670, abs=2e-4) and hi["holm_p"] == pytest.approx(lo["holm_p"])
    assert lo["verdict"] == "not distinguished"
    inter = _row(table, "interaction")
    # (T@hi - B@hi) - (T@lo - B@lo) = 0.05-0.10, 0.20-0.00, 0.05-0.10 = -0.05, 0.20, -0.05
    assert inter["mean"] == pytest.approx(0.10 / 3)
    assert not inter["primary"] and math.isnan(inter["holm_p"])
    rate = _row(table, "grpo: 0.0004 vs 0.0001")
    assert rate["mean"] == pytest.approx(-0.10) and rate["se"] == pytest.approx(0.05 / math.sqrt(3))
    warm = _row(table, "grpo @ 0.0001 vs warm start", metric="greedy")
    assert warm["mean"] == pytest.approx(0.20 - 0.25)  # greedy 0.10/0.20/0.30 vs greedy warm start 0.25


def test_seed_with_another_warm_start_is_left_out(records):
    _write(records, "grpo", 0.0004, 2, 0.10, warm=0.16)  # rebuilt warm start that evaluates differently
    table = contrasts(factorial_records([records], SPEC), SPEC)
    row = _row(table, "grpo+actfocus vs grpo @ 0.0001")
    assert row["n"] == 2 and row["seeds"] == "1,3" and row["unpaired"] == "2"


def test_missing_cells_is_a_clear_error(tmp_path):
    _write(tmp_path, "grpo", 0.0001, 1, 0.1)
    _write(tmp_path, "grpo+actfocus", 0.0004, 1, 0.1)
    with pytest.raises(ValueError, match="no seed has all four cells"):
        contrasts(factorial_records([tmp_path], SPEC), SPEC)


def test_paired_stats_all_ties():
    import pandas as pd

    s = paired_stats(pd.Series([0.0, 0.0, 0.0]))
    assert (s["t_p"], s["sign_p"], s["wilcoxon_p"], s["wins"], s["losses"]) == (1.0, 1.0, 1.0, 0, 0)


def test_verdicts_need_holm_and_a_base_that_learned(tmp_path):
    # 6 seeds, treated +10 points at both rates with small spread: Holm's p < 0.05 at both levels;
    # base at 1e-4 ends above its 0.15 warm start (0.30), base at 4e-4 below it (0.05)
    for seed in range(6):
        jitter = 0.01 * (seed % 3)
        _write(tmp_path, "grpo", 0.0001, seed, 0.30)
        _write(tmp_path, "grpo", 0.0004, seed, 0.05)
        _write(tmp_path, "grpo+actfocus", 0.0001, seed, 0.40 + jitter)
        _write(tmp_path, "grpo+actfocus", 0.0004, seed, 0.15 + jitter)
    table = contrasts(factorial_records([tmp_path], SPEC), SPEC)
    lo, hi = _row(table, "grpo+actfocus vs grpo @ 0.0001"), _row(table, "grpo+actfocus vs grpo @ 0.0004")
    assert lo["holm_p"] < 0.05 and hi["holm_p"] < 0.05
    assert lo["verdict"] == "better"
    assert hi["verdict"] == "held / lost less"


def test_a_seed_rerun_from_a_rebuilt_warm_start_pairs_on_the_warm_start_with_all_four_cells(records):
    # a rebuilt warm start of seed 2 (key k2, 0.16 at T = 1) with two of its cells: the original four are complete
    for (method, lr), value in {("grpo", 0.0001): 0.30, ("grpo+actfocus", 0.0004): 0.60}.items():
        _write(records / "rebuilt", method, lr, 2, value, warm=0.16, key="k2")
    row = _row(contrasts(factorial_records([records], SPEC), SPEC), "grpo+actfocus vs grpo @ 0.0001")
    assert row["n"] == 3 and row["mean"] == pytest.approx(0.2 / 3)  # paired on the original set, as before
    # now the original seed-2 runs at 4e-4 and of grpo+actfocus at 1e-4 are gone (cf. a warm start that no
    # longer rebuilds); the rebuilt warm start gets its own two: all four of seed 2 now come from k2
    for method, lr in (("grpo", 0.0004), ("grpo+actfocus", 0.0001)):
        for f in (records / f"{method}-{lr}-s2").iterdir():
            f.unlink()
        (records / f"{method}-{lr}-s2").rmdir()
    for (method, lr), value in {("grpo", 0.0004): 0.20, ("grpo+actfocus", 0.0001): 0.50}.items():
        _write(records / "rebuilt", method, lr, 2, value, warm=0.16, key="k2")
    table = contrasts(factorial_records([records], SPEC), SPEC)
    lo = _row(table, "grpo+actfocus vs grpo @ 0.0001")
    # diffs: seed 1 0.20 - 0.10, seed 2 (rebuilt) 0.50 - 0.30, seed 3 0.40 - 0.30 -> 0.10, 0.20, 0.10
    assert lo["n"] == 3 and lo["seeds"] == "1,2,3" and lo["mean"] == pytest.approx(0.4 / 3)
    warm = _row(table, "grpo @ 0.0001 vs warm start")
    # T = 1 warm starts 0.15, 0.16, 0.15 against 0.10, 0.30, 0.30
    assert warm["mean"] == pytest.approx((-0.05 + 0.14 + 0.15) / 3)


def test_two_complete_sets_or_a_doubled_record_for_one_seed_is_a_clear_error(records):
    for (method, lr), values in CELLS.items():
        _write(records / "rebuilt", method, lr, 2, values[1], warm=0.16, key="k2")
    with pytest.raises(ValueError, match=r"seed\(s\) \[2\] have all four cells from two different warm starts"):
        contrasts(factorial_records([records], SPEC), SPEC)
    other = records.parent / "doubled"
    for (method, lr), values in CELLS.items():
        for seed, v in zip((1, 2, 3), values, strict=True):
            _write(other, method, lr, seed, v)
    _write(other / "copy", "grpo", 0.0001, 3, 0.30)  # the same run's record twice
    with pytest.raises(ValueError, match=r"grpo @ 0.0001 has more than one record for seed\(s\) \[3\]"):
        contrasts(factorial_records([other], SPEC), SPEC)

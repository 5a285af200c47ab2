"""The shared cell texts of the result tables, worked by hand."""

import math

import pandas as pd

from agentbench_af.results.paired import paired_gain
from agentbench_af.results.table_text import gain_text, method_sort_key, percent_cell, ratio_cell, signed


def test_percent_cell():
    assert percent_cell(0.25, 0.05, 4) == "25.0 ± 5.0 (4)"
    assert percent_cell(0.25, math.nan, 1) == "25.0 (1)"  # one value: no SE
    assert percent_cell(0.5, math.nan, 3) == "50.0 (3)"  # undefined SE: left out


def test_ratio_cell():
    assert ratio_cell(1.234, 0.1, 3) == "1.23 ± 0.10 (3)"
    assert ratio_cell(0.5, math.nan, 1) == "0.50 (1)"
    assert ratio_cell(math.nan, math.nan, 0) == "–"


def test_signed_never_shows_minus_zero():
    assert signed(2.25) == "+2.2" and signed(-3.0) == "-3.0"
    assert signed(-1e-12) == "+0.0"


def test_gain_text_of_a_paired_gain():
    # differences 0.1, 0.3: mean 0.2 -> +20.0 points; sd sqrt(0.02) = 0.1414, SE 0.1414 / sqrt(2) = 0.1 -> 10.0;
    # 2 won, 0 lost: sign test p = 2 * (1/2)^2 = 0.5
    g = paired_gain(pd.Series([0.1, 0.3]))
    assert gain_text(g) == "+20.0 ± 10.0 (n 2, 2+/0-, p 0.50)"
    assert gain_text(paired_gain(pd.Series([-0.05]))) == "-5.0 (n 1, 0+/1-, p 1.00)"


def test_rows_follow_the_registry_then_the_weighting():
    assert sorted(["grpo+actfocus", "zzz-absent", "grpo", "ppo"], key=method_sort_key)[-1] == "zzz-absent"
    assert method_sort_key("grpo") < method_sort_key("grpo+actfocus")

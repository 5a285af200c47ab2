"""The success table on hand-made records; every expected number is worked out by hand in the comments."""

import math

import pytest
from record_helpers import write_record, write_success_record

from agentbench_af.results.collect_records import records_frame
from agentbench_af.results.paired import verdict
from agentbench_af.results.table import build_table, to_csv, to_latex, to_markdown, write_table

ENV4, ENV6 = "FrozenLake-4x4-v0", "FrozenLake-6x6-v0"


def _stat(table, env, row):
    (r,) = table.stats[(table.stats["env"] == env) & (table.stats["row"] == row)].itertuples()
    return r


def test_means_and_standard_errors_by_hand(records_dir):
    t = build_table(records_frame([records_dir]))
    # ppo 0.25, 0.25, 0.5: mean 1/3; deviations -1/12, -1/12, 1/6 -> var (6/144)/2 = 1/48 -> SE sqrt(1/48)/sqrt(3) = 1/12
    ppo = _stat(t, ENV4, "tiny-0.2m ppo")
    assert (ppo.mean, ppo.se, ppo.n, ppo.seeds) == (pytest.approx(1 / 3), pytest.approx(1 / 12), 3, "0,1,2")
    # grpo 0.5, 0.75: mean 0.625, sd 0.125*sqrt(2) -> SE 0.125
    grpo = _stat(t, ENV4, "tiny-0.2m grpo")
    assert (grpo.mean, grpo.se, grpo.n) == (pytest.approx(0.625), pytest.approx(0.125), 2)
    # one seed: no SE
    single = _stat(t, ENV6, "tiny-0.2m grpo")
    assert single.n == 1 and math.isnan(single.se) and single.mean == 0.25
    g = t.grid
    assert g.loc["tiny-0.2m ppo", ENV4] == "33.3 ± 8.3 (3)"
    assert g.loc["tiny-0.2m grpo", ENV4] == "62.5 ± 12.5 (2)"
    assert g.loc["tiny-0.2m grpo", ENV6] == "25.0 (1)"
    assert g.loc["tiny-0.2m ppo", ENV6] == ""


def test_best_per_column_marked_ties_included(records_dir):
    g = build_table(records_frame([records_dir])).grid
    # 4x4: grpo+actfocus (0.75, 1.0) and tiny-0.7m grpo (0.875, 0.875) tie at 87.5
    assert g.loc["tiny-0.2m grpo+actfocus", ENV4] == "**87.5 ± 12.5 (2)**"
    assert g.loc["tiny-0.7m grpo", ENV4] == "**87.5 ± 0.0 (2)**"
    assert g.loc["tiny-0.2m grpo+actfocus", ENV6] == "**50.0 (1)**"
    assert sum("**" in v for v in g[ENV4]) == 2


def test_gain_rows_and_row_order(records_dir):
    g = build_table(records_frame([records_dir])).grid
    assert list(g.index) == ["tiny-0.2m warm start", "tiny-0.2m ppo", "tiny-0.2m grpo", "tiny-0.2m grpo+actfocus",
                             "tiny-0.2m gain grpo+actfocus vs grpo", "tiny-0.7m warm start", "tiny-0.7m grpo"]
    # paired by seed: 0.75 - 0.5 and 1.0 - 0.75 = +25.0 twice -> SE 0.0; 2 wins, sign test p = 2 * 0.5^2 = 0.50
    assert g.loc["tiny-0.2m gain grpo+actfocus vs grpo", ENV4] == "+25.0 ± 0.0 (n 2, 2+/0-, p 0.50)"
    # one pair (0.5 - 0.25): no SE; one win, p = 1 (a single coin toss is never significant)
    assert g.loc["tiny-0.2m gain grpo+actfocus vs grpo", ENV6] == "+25.0 (n 1, 1+/0-, p 1.00)"


def test_failed_runs_excluded_and_noted(records_dir):
    t = build_table(records_frame([records_dir]))
    assert "rloo" not in " ".join(t.grid.index)
    assert t.notes == ["failed run excluded: FrozenLake-4x4-v0 tiny-0.2m rloo seed 0: ValueError: reward went NaN"]
    assert t.protocol[0] == ("FrozenLake-4x4-v0: eval episodes 8, eval temperature 0.0, rl steps 10, "
                             "prompts per step 4, group size 4, seeds [0, 1, 2]")


def test_different_configs_become_separate_rows(records_dir):
    write_record(records_dir, ENV4, "ppo", 0, 1.0, "123456789abc")
    t = build_table(records_frame([records_dir]))
    g = t.grid
    assert g.loc["tiny-0.2m ppo [config aaaaaaaaaaaa]", ENV4] == "33.3 ± 8.3 (3)"
    assert g.loc["tiny-0.2m ppo [config 123456789abc]", ENV4] == "**100.0 (1)**"
    assert "tiny-0.2m ppo" not in g.index
    assert t.notes.count("FrozenLake-4x4-v0 tiny-0.2m ppo: records with 2 different configs are kept apart") == 1


def test_duplicate_seeds_of_one_config_are_refused(records_dir):
    write_record(records_dir / "copy", ENV4, "grpo", 1, 0.75, "bbbbbbbbbbbb")
    with pytest.raises(ValueError, match=r"seed\(s\) \[1\] appear twice"):
        build_table(records_frame([records_dir]))


def test_no_records_or_only_failures_refused(tmp_path):
    with pytest.raises(ValueError, match="no run records found"):
        build_table(records_frame([tmp_path]))
    write_record(tmp_path, ENV4, "grpo", 0, None, status="failed", error="boom")
    with pytest.raises(ValueError, match="no completed run records"):
        build_table(records_frame([tmp_path]))


def test_formats(records_dir, tmp_path):
    t = build_table(records_frame([records_dir]))
    md = to_markdown(t)
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines() if line.startswith("|")]
    assert rows[0] == ["model / method", ENV4, ENV6]
    assert ["tiny-0.2m grpo", "62.5 ± 12.5 (2)", "25.0 (1)"] in rows
    assert ["tiny-0.2m gain grpo+actfocus vs grpo", "+25.0 ± 0.0 (n 2, 2+/0-, p 0.50)", "+25.0 (n 1, 1+/0-, p 1.00)"] in rows
    assert "- failed run excluded:" in md
    csv = to_csv(t).splitlines()
    assert csv[0] == "model / method,FrozenLake-4x4-v0,FrozenLake-6x6-v0"
    assert "tiny-0.2m grpo+actfocus,87.5 ± 12.5 (2)*,50.0 (1)*" in csv
    tex = to_latex(t)
    assert "\\textbf{87.5 $\\pm$ 12.5 (2)}" in tex and "\\begin{tabular}{lrr}" in tex
    written = write_table(t, tmp_path / "out", ("md",))
    assert [p.name for p in written] == ["table.md", "gains.md"]  # gains.md: the fixture has a gain row
    with pytest.raises(ValueError, match="unknown table format"):
        write_table(t, tmp_path / "out", ("html",))


def test_negative_gain_and_no_minus_zero(tmp_path):
    for seed, (a, b) in enumerate([(0.5, 0.25), (0.5, 0.5)]):
        write_record(tmp_path, ENV4, "rloo", seed, a, "aaaaaaaaaaa1")
        write_record(tmp_path, ENV4, "rloo+top-entropy", seed, b, "aaaaaaaaaaa2")
        write_record(tmp_path, ENV6, "rloo", seed, 0.1 + 0.2, "aaaaaaaaaaa3")
        write_record(tmp_path, ENV6, "rloo+top-entropy", seed, 0.3, "aaaaaaaaaaa4")
    g = build_table(records_frame([tmp_path])).grid
    # 4x4, per seed: 0.25 - 0.5 = -0.25 and 0.5 - 0.5 = 0 -> mean -12.5, sd 0.1768, SE 0.125; one loss,
    # one tie: the sign test sees 0 wins of 1 -> p 1.0
    assert g.loc["tiny-0.2m gain rloo+top-entropy vs rloo", ENV4] == "-12.5 ± 12.5 (n 2, 0+/1-, p 1.00)"
    # 6x6: 0.3 - (0.1 + 0.2) is -5.6e-17 per seed: ties, shown as +0.0
    assert g.loc["tiny-0.2m gain rloo+top-entropy vs rloo", ENV6] == "+0.0 ± 0.0 (n 2, 0+/0-, p 1.00)"


def test_protocol_names_warm_start_budget_turn_limit_and_context(tmp_path):
    from agentbench_af.results.record import RunRecord

    protocol = {"eval_episodes": 16, "eval_temperature": 1.0, "rl_steps": 8, "prompts_per_step": 1, "group_size": 4,
                "max_turns": 6, "context_mode": "window", "catalogue": "synthetic-1000"}
    for seed in (0, 1):
        RunRecord(env_id="WebShop-v0", method="grpo", model="tiny-0.2m", model_params=1, seed=seed, config_hash="c1",
                  config={"sft": {"steps": 100}}, protocol=protocol, final_success=0.0, warm_start_success=0.0,
                  curve=[]).save(tmp_path / f"r{seed}")
    (line,) = build_table(records_frame([tmp_path])).protocol
    assert line == ("WebShop-v0: eval episodes 16, eval temperature 1.0, sft steps 100, rl steps 8, prompts per step 1, "
                    "group size 4, max turns 6, context mode window, catalogue synthetic-1000, seeds [0, 1]")


def test_warm_start_row_one_value_per_seed(tmp_path):
    from agentbench_af.results.record import RunRecord

    # seeds 0, 1, 2 start from 0.25, 0.5, 0.5 (both methods of a seed share it): mean 5/12 = 41.7 %,
    # deviations -1/6, 1/12, 1/12 -> var (1/36 + 2/144)/2 = 1/48 -> SE sqrt(1/48)/sqrt(3) = 1/12 = 8.3 points
    for seed, warm in ((0, 0.25), (1, 0.5), (2, 0.5)):
        for method in ("grpo", "ppo"):
            RunRecord(env_id=ENV4, method=method, model="tiny-0.2m", model_params=1, seed=seed, config_hash=method,
                      config={}, protocol={}, final_success=0.75, warm_start_success=warm,
                      curve=[]).save(tmp_path / f"{method}-{seed}")
    t = build_table(records_frame([tmp_path]))
    assert t.grid.loc["tiny-0.2m warm start", ENV4] == "41.7 ± 8.3 (3)"
    assert not t.notes
    # a seed whose runs started from different warm starts: no warm-start row, and a note says why
    RunRecord(env_id=ENV4, method="rloo", model="tiny-0.2m", model_params=1, seed=0, config_hash="rloo", config={},
              protocol={}, final_success=0.5, warm_start_success=0.0, curve=[]).save(tmp_path / "rloo-0")
    t = build_table(records_frame([tmp_path]))
    assert "tiny-0.2m warm start" not in t.grid.index
    assert t.notes == [f"{ENV4} tiny-0.2m: no warm-start row (runs of one seed start from different warm starts)"]


def test_paired_gain_sign_test_and_unpaired_seeds_left_out(tmp_path):
    for seed, (base, weighted) in enumerate([(0.5, 0.6), (0.5, 0.7), (0.5, 0.55), (0.5, 0.4), (0.5, 0.9)]):
        write_success_record(tmp_path, "grpo", seed, base)
        write_success_record(tmp_path, "grpo+actfocus", seed, weighted)
    write_success_record(tmp_path, "grpo+actfocus", 5, 1.0)  # no grpo run of seed 5: not paired
    t = build_table(records_frame([tmp_path]))
    # differences 0.1, 0.2, 0.05, -0.1, 0.4: mean 0.13; squared deviations 0.0009 + 0.0049 + 0.0064 + 0.0529
    # + 0.0729 = 0.138 -> sd sqrt(0.138 / 4) = 0.1857 -> SE 0.0831; 4 wins 1 loss: p = 2 * (5 + 1) / 32 = 0.375
    assert t.grid.loc["tiny-0.2m gain grpo+actfocus vs grpo", ENV4] == "+13.0 ± 8.3 (n 5, 4+/1-, p 0.38)"
    (g,) = t.gains.itertuples()
    assert (g.n, g.wins, g.losses, g.seeds, g.metric) == (5, 4, 1, "0,1,2,3,4", "final_success")
    assert g.mean == pytest.approx(0.13) and g.se == pytest.approx(0.0831, abs=1e-4)
    assert g.sign_p == pytest.approx(0.375) and g.verdict == "not distinguished"
    assert list(t.grid.columns) == [ENV4]  # no greedy column without greedy evaluations


def test_verdict_needs_the_sign_test_below_alpha_in_the_mean_direction(tmp_path):
    # six seeds, every difference the same sign: p = 2 / 64 = 0.031 < 0.05
    for seed in range(6):
        write_success_record(tmp_path, "grpo", seed, 0.5)
        write_success_record(tmp_path, "grpo+actfocus", seed, 0.4)
    (g,) = build_table(records_frame([tmp_path])).gains.itertuples()
    assert (g.wins, g.losses) == (0, 6) and g.sign_p == pytest.approx(0.03125) and g.verdict == "worse"
    # 5 of 5 non-tied: p = 2 / 32 = 0.0625, not below 0.05
    assert verdict(0.1, 0.0625) == "not distinguished"
    assert verdict(0.1, 0.03125) == "better" and verdict(0.0, 0.01) == "not distinguished"


def test_greedy_column_beside_the_sampled_one(tmp_path):
    for seed, (base, weighted) in enumerate([(0.5, 0.75), (1.0, 0.75)]):
        write_success_record(tmp_path, "grpo", seed, 0.25, greedy=base)
        write_success_record(tmp_path, "grpo+actfocus", seed, 0.25, greedy=weighted, warm_greedy=0.5)
    t = build_table(records_frame([tmp_path]))
    assert list(t.grid.columns) == [ENV4, f"{ENV4} greedy"]
    g = t.grid[f"{ENV4} greedy"]
    # grpo greedy 0.5, 1.0: mean 0.75, sd 0.3536 -> SE 0.25; grpo+actfocus 0.75 twice: SE 0; both best (tie)
    assert g["tiny-0.2m grpo"] == "**75.0 ± 25.0 (2)**" and g["tiny-0.2m grpo+actfocus"] == "**75.0 ± 0.0 (2)**"
    assert g["tiny-0.2m warm start"] == "50.0 ± 0.0 (2)"
    # paired greedy differences +0.25 and -0.25: mean 0, SE 0.25, one win, one loss, p 1
    assert g["tiny-0.2m gain grpo+actfocus vs grpo"] == "+0.0 ± 25.0 (n 2, 1+/1-, p 1.00)"
    assert t.grid.loc["tiny-0.2m gain grpo+actfocus vs grpo", ENV4] == "+0.0 ± 0.0 (n 2, 0+/0-, p 1.00)"

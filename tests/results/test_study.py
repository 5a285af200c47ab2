"""The study analysis on hand-worked records: 6 seeds, warm start 0.20 at T = 1 and 0.30 greedy for every
seed; GRPO learns, PPO does not pass the bar (one seed below its warm start and a mean under 4 SE)."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from agentbench_af.cli import app
from agentbench_af.results.record import RunRecord
from agentbench_af.results.study import (
    StudySpec,
    contrasts,
    default_pairs,
    learning,
    seeds_needed,
    study_records,
)

SEEDS = (1, 2, 3, 4, 5, 6)
GRPO = [0.30, 0.32, 0.28, 0.31, 0.29, 0.30]  # changes 0.10 0.12 0.08 0.11 0.09 0.10
PPO = [0.30, 0.30, 0.30, 0.30, 0.30, 0.15]  # changes 0.10 x 5, -0.05
FINALS = {
    "grpo": GRPO,
    "grpo+actfocus": [g + d for g, d in zip(GRPO, [0.03, 0.05, 0.04, 0.03, 0.05, 0.04], strict=True)],
    "ppo": PPO,
    "ppo+actfocus": [p + d for p, d in zip(PPO, [0.05, 0.05, 0.05, 0.05, 0.05, 0.02], strict=True)],
}


def _write(root, method, seed, success, greedy=0.35, warm=0.20, key="k"):
    RunRecord(env_id="FrozenLake-4x4-v0", method=method, model="tiny-0.7m", model_params=1, seed=seed,
              config_hash=method, config={}, protocol={}, final_success=success,
              final_metrics={"greedy_success": greedy}, warm_start_success=warm,
              curve=[{"step": 0, "success": warm, "greedy_success": 0.30}], warm_start={"key": key},
              ).save(root / f"{method}-s{seed}")


@pytest.fixture
def records(tmp_path):
    for method, finals in FINALS.items():
        for seed, value in zip(SEEDS, finals, strict=True):
            _write(tmp_path, method, seed, value)
    return tmp_path


def _learning_row(learned, method):
    rows = learned[learned["method"] == method]
    assert len(rows) == 1
    return rows.iloc[0]


def test_seeds_needed_is_five_of_six():
    assert [seeds_needed(n) for n in (6, 5, 4, 12)] == [5, 5, 4, 10]


def test_default_pairs_match_each_weighting_to_its_base():
    assert default_pairs(["ppo", "grpo", "grpo+actfocus", "ppo+actfocus", "rloo+actfocus"]) == (
        ("grpo+actfocus", "grpo"), ("ppo+actfocus", "ppo"))


def test_learning_bar_by_hand(records):
    learned = learning(study_records([records]))
    grpo = _learning_row(learned, "grpo")
    # changes 0.10 0.12 0.08 0.11 0.09 0.10: mean 0.10, sd sqrt(10e-4 / 5) = 0.01414, SE 0.005774 (4 SE = 0.023)
    assert grpo["t1_change"] == pytest.approx(0.10) and grpo["t1_se"] == pytest.approx(0.0057735, abs=1e-6)
    assert (grpo["t1_up"], grpo["t1_down"]) == (6, 0)
    assert grpo["greedy_change"] == pytest.approx(0.05) and grpo["learns"]
    ppo = _learning_row(learned, "ppo")
    # changes 0.10 x 5 and -0.05: mean 0.075, sd sqrt(0.01875 / 5) = 0.06124, SE 0.025: 4 SE = 0.10 > 0.075
    assert ppo["t1_change"] == pytest.approx(0.075) and ppo["t1_se"] == pytest.approx(0.025)
    assert ppo["t1_up"] == 5 and not ppo["learns"]
    assert not _learning_row(learned, "grpo+actfocus")["base"]


def test_contrasts_by_hand(records):
    frame = study_records([records])
    table = contrasts(frame, StudySpec(), learning(frame))
    primary = table[table["primary"]].set_index("treated")
    af = primary.loc["grpo+actfocus"]
    # diffs 0.03 0.05 0.04 0.03 0.05 0.04: mean 0.04, sd sqrt(4e-4 / 5), SE 0.0036515, t = 10.954 on 5 df
    assert af["mean"] == pytest.approx(0.04) and af["se"] == pytest.approx(0.0036515, abs=1e-6)
    assert af["t_p"] == pytest.approx(0.00011024, rel=1e-3)
    assert af["sign_p"] == pytest.approx(2 / 64) and af["wilcoxon_p"] == pytest.approx(2 / 64)
    ppo_af = primary.loc["ppo+actfocus"]
    # diffs 0.05 x 5 and 0.02: mean 0.045, SE 0.005, t = 9 on 5 df -> p 0.00028268
    assert ppo_af["mean"] == pytest.approx(0.045) and ppo_af["t_p"] == pytest.approx(0.00028268, rel=1e-3)
    # Holm over the two: 2 x 0.00011024 = 0.00022048; then max(0.00022048, 1 x 0.00028268)
    assert af["holm_p"] == pytest.approx(0.00022048, rel=1e-3)
    assert ppo_af["holm_p"] == pytest.approx(0.00028268, rel=1e-3)
    assert af["verdict"] == "better"  # GRPO learns
    assert ppo_af["verdict"] == "held / lost less (base did not learn)"  # PPO does not pass the bar
    greedy = table[~table["primary"]]
    assert len(greedy) == 2 and greedy["holm_p"].isna().all() and (greedy["verdict"] == "").all()


def test_a_seed_from_another_warm_start_is_not_paired(records):
    _write(records, "grpo+actfocus", 3, 0.5, key="other")  # overwrites seed 3's record
    frame = study_records([records])
    row = contrasts(frame, StudySpec(pairs=(("grpo+actfocus", "grpo"),)), learning(frame)).iloc[0]
    assert row["n"] == 5 and row["unpaired"] == "3"


def test_a_base_rerun_from_a_rebuilt_warm_start_pairs_that_seed_and_stays_out_of_learning(records, tmp_path_factory):
    _write(records, "grpo+actfocus", 3, 0.40, key="rebuilt")  # seed 3's treated run branched from a rebuilt warm start
    reruns = tmp_path_factory.mktemp("reruns")
    _write(reruns, "grpo", 3, 0.30, key="rebuilt")  # GRPO rerun from that warm start
    frame = study_records([records], contrast_only=[reruns])
    learned = learning(frame)
    grpo = _learning_row(learned, "grpo")
    assert grpo["n"] == 6 and grpo["t1_change"] == pytest.approx(0.10)  # the study's own six runs, as before
    row = contrasts(frame, StudySpec(pairs=(("grpo+actfocus", "grpo"),)), learned).iloc[0]
    # diffs 0.03 0.05 (0.40 - 0.30 =) 0.10 0.03 0.05 0.04: mean 0.30 / 6 = 0.05, on all six seeds
    assert row["n"] == 6 and row["mean"] == pytest.approx(0.05) and row["unpaired"] == ""
    runner = CliRunner()
    done = runner.invoke(app, ["study", str(records), "--rerun-bases", str(reruns), "--pair", "grpo+actfocus:grpo"])
    assert done.exit_code == 0, done.output
    assert "+5.0 ± 1.1 (6+/0- of 6)" in (records / "study.md").read_text()  # SE: sd 0.02608 / sqrt 6 = 0.01065


def test_two_records_of_one_run_or_two_pairs_of_one_seed_are_errors(records, tmp_path_factory):
    again = tmp_path_factory.mktemp("again")
    _write(again, "grpo", 3, 0.30)  # the same seed and warm start as the study's own GRPO run
    with pytest.raises(ValueError, match="seed and warm start"):
        study_records([records], contrast_only=[again])
    both = tmp_path_factory.mktemp("both")
    _write(both, "grpo", 3, 0.30, key="rebuilt")
    _write(both, "grpo+actfocus", 3, 0.40, key="rebuilt")  # seed 3 now pairs on the original and the rebuilt
    frame = study_records([records], contrast_only=[both])
    with pytest.raises(ValueError, match="two warm starts of seed"):
        contrasts(frame, StudySpec(pairs=(("grpo+actfocus", "grpo"),)), learning(frame))


def test_cli_writes_the_tables_and_rejects_a_bad_pair(records):
    runner = CliRunner()
    done = runner.invoke(app, ["study", str(records), "--pair", "grpo+actfocus:grpo"])
    assert done.exit_code == 0, done.output
    text = (records / "study.md").read_text()
    assert "**grpo+actfocus vs grpo**" in text and "ppo+actfocus vs ppo" not in text
    assert "Cost of the 24 runs" in text and "0.0 CPU-hours" in text and "24 records carry no CPU time" in text
    assert "| FrozenLake-4x4-v0 | tiny-0.7m | grpo | 20.0 / 30.0 | 30.0 / 35.0 | +10.0 ± 0.6 (6+/0- of 6)" in text
    bad = runner.invoke(app, ["study", str(records), "--pair", "grpo+actfocus"])
    assert bad.exit_code != 0 and "TREATED:BASE" in bad.output
    empty = runner.invoke(app, ["study", str(records / "grpo-s1"), "--pair", "x:y"])
    assert empty.exit_code == 2 and "no pair" in empty.output
    csv = pd.read_csv(records / "study.csv")
    assert list(csv["treated"]) == ["grpo+actfocus"] * 2 and csv["mean"].tolist() == pytest.approx([0.04, 0.0])


def test_a_run_under_another_policy_loss_is_its_own_row_paired_with_its_base(records):
    for seed, value in zip(SEEDS, GRPO, strict=True):
        RunRecord(env_id="FrozenLake-4x4-v0", method="grpo", model="tiny-0.7m", model_params=1, seed=seed,
                  config_hash="gspo", config={"method": "grpo", "loss": {"policy": "gspo"}}, protocol={},
                  final_success=value + 0.01, final_metrics={"greedy_success": 0.35}, warm_start_success=0.20,
                  curve=[{"step": 0, "success": 0.20, "greedy_success": 0.30}], warm_start={"key": "k"},
                  ).save(records / f"gspo-s{seed}")
    frame = study_records([records])
    assert sorted(frame["method"].unique()) == ["grpo", "grpo+actfocus", "grpo@gspo", "ppo", "ppo+actfocus"]
    table = contrasts(frame, StudySpec(), learning(frame))
    row = table[(table["treated"] == "grpo@gspo") & table["primary"]].iloc[0]
    assert row["base"] == "grpo" and row["mean"] == pytest.approx(0.01) and row["n"] == 6


def test_cost_line_sums_cpu_and_wall_hours():
    from agentbench_af.results.study import cost_line

    frame = pd.DataFrame({"cpu_time_s": [1800.0, 5400.0, None], "wall_time_s": [3600.0, 7200.0, 1800.0]})
    assert cost_line(frame) == ("Cost of the 3 runs (RL and evaluation, warm starts not included): 2.0 CPU-hours, "
                                "3.5 hours of wall time; 1 records carry no CPU time.")

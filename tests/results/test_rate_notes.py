"""Learning-rate notes on gain rows (`results.rate_notes`), on hand-made records with set `rl.lr` values."""

import math

from record_helpers import write_record, write_success_record

from agentbench_af.results.collect_records import records_frame
from agentbench_af.results.embedded_tables import table_lines
from agentbench_af.results.gains_table import to_markdown as gains_markdown
from agentbench_af.results.table import build_table, to_markdown

ENV = "Sudoku-4x4-10clues-v0"
DIFFERENT = "its gain row compares different learning rates, not the weighting alone"


def _pair(root, method_lrs, base_lrs, method="grpo+actfocus", base="grpo"):
    """Seed s: `base` at base_lrs[s] (success 0.25), `method` at method_lrs[s] (0.5); one config per method."""
    for seed, lr in enumerate(base_lrs):
        write_record(root, ENV, base, seed, 0.25, "aaaaaaaaaaa1", model="tiny-0.7m", lr=lr)
    for seed, lr in enumerate(method_lrs):
        write_record(root, ENV, method, seed, 0.5, "aaaaaaaaaaa2", model="tiny-0.7m", lr=lr)
    return build_table(records_frame([root]))


def test_records_frame_reads_rl_lr_or_none(tmp_path):
    write_record(tmp_path, ENV, "grpo", 0, 0.25, lr=4e-4)
    write_record(tmp_path, ENV, "ppo", 0, 0.25)  # config without rl.lr
    frame = records_frame([tmp_path]).set_index("method")
    assert frame.loc["grpo", "rl_lr"] == 0.0004
    assert frame.loc["ppo", "rl_lr"] is None or math.isnan(frame.loc["ppo", "rl_lr"])


def test_different_rates_get_a_note_in_table_md_and_under_gains_md(tmp_path):
    t = _pair(tmp_path, [1e-4, 1e-4], [4e-4, 4e-4])
    note = f"{ENV} tiny-0.7m: grpo+actfocus ran at rl.lr 0.0001, its base grpo at 0.0004: {DIFFERENT}"
    assert t.rate_notes == [note]
    assert t.notes == [note]
    # the gain row itself is unchanged: 0.5 - 0.25 = +25 points on both seeds
    assert t.grid.loc["tiny-0.7m gain grpo+actfocus vs grpo", ENV] == "+25.0 ± 0.0 (n 2, 2+/0-, p 0.50)"
    assert to_markdown(t).endswith(f"\nNotes:\n- {note}\n")
    md = gains_markdown(t)
    assert md.endswith(f"|\n\nLearning rates differ:\n- {note}\n")
    assert not any(line.startswith("|") for line in md.split("Learning rates differ:")[1].splitlines())


def test_matched_rates_get_no_note(tmp_path):
    t = _pair(tmp_path, [4e-4, 4e-4], [4e-4, 4e-4])
    assert t.rate_notes == [] and t.notes == []
    md = gains_markdown(t)
    assert "Learning rates differ" not in md
    assert len(table_lines(md)) == 3  # header, rule, one row: the same grid as with the note


def test_no_note_where_neither_side_recorded_a_rate(tmp_path):
    assert _pair(tmp_path, [None, None], [None, None]).rate_notes == []


def test_one_side_without_a_rate_is_not_recorded(tmp_path):
    (note,) = _pair(tmp_path, [1e-4, 1e-4], [None, None]).rate_notes
    assert note == f"{ENV} tiny-0.7m: grpo+actfocus ran at rl.lr 0.0001, its base grpo at not recorded: {DIFFERENT}"


def test_a_cell_with_two_rates(tmp_path):
    # one config hash, but seed 0 at 1e-4 and seed 1 at 4e-4: the sets {1e-4, 4e-4} and {4e-4} differ
    (note,) = _pair(tmp_path, [1e-4, 4e-4], [4e-4, 4e-4]).rate_notes
    assert note == f"{ENV} tiny-0.7m: grpo+actfocus ran at rl.lr 0.0001/0.0004, its base grpo at 0.0004: {DIFFERENT}"


def test_two_rates_on_both_sides_matched_or_crossed_seed_by_seed(tmp_path):
    (pooled,) = _pair(tmp_path / "matched", [1e-4, 4e-4], [1e-4, 4e-4]).rate_notes
    assert pooled == (f"{ENV} tiny-0.7m: grpo+actfocus and its base grpo ran at rl.lr 0.0001/0.0004 (matched seed by "
                      "seed): its gain row pools several learning rates")
    (crossed,) = _pair(tmp_path / "crossed", [1e-4, 4e-4], [4e-4, 1e-4]).rate_notes
    assert crossed == (f"{ENV} tiny-0.7m: grpo+actfocus and its base grpo both ran at rl.lr 0.0001/0.0004 but not "
                       f"matched on seed(s) [0, 1]: {DIFFERENT}")


def test_only_paired_seeds_count(tmp_path):
    # seed 2 of grpo+actfocus ran at 1e-4 but grpo has no seed 2: the gain row pairs seeds 0, 1 only
    t = _pair(tmp_path, [4e-4, 4e-4, 1e-4], [4e-4, 4e-4])
    assert t.gains["seeds"].tolist() == ["0,1"]
    assert t.rate_notes == []


def test_one_note_per_comparison_and_base(tmp_path):
    for seed in range(2):
        write_record(tmp_path, ENV, "grpo", seed, 0.25, "aaaaaaaaaaa1", lr=4e-4)
        write_record(tmp_path, ENV, "grpo+actfocus", seed, 0.5, "aaaaaaaaaaa2", lr=1e-4)
        write_record(tmp_path, ENV, "grpo+actfocus-entropy", seed, 0.5, "aaaaaaaaaaa3", lr=2e-4)
        write_record(tmp_path, ENV, "ppo", seed, 0.25, "aaaaaaaaaaa4", lr=4e-4)
        write_record(tmp_path, ENV, "ppo+actfocus", seed, 0.5, "aaaaaaaaaaa5", lr=4e-4)
    notes = build_table(records_frame([tmp_path])).rate_notes
    assert notes == [f"{ENV} tiny-0.2m: grpo+actfocus ran at rl.lr 0.0001, its base grpo at 0.0004: {DIFFERENT}",
                     f"{ENV} tiny-0.2m: grpo+actfocus-entropy ran at rl.lr 0.0002, its base grpo at 0.0004: {DIFFERENT}"]


def test_sampled_and_greedy_rows_of_one_comparison_share_one_note(tmp_path):
    for seed in range(2):
        write_success_record(tmp_path, "grpo", seed, 0.25, greedy=0.5, lr=4e-4)
        write_success_record(tmp_path, "grpo+actfocus", seed, 0.5, greedy=0.5, lr=1e-4)
    t = build_table(records_frame([tmp_path]))
    assert sorted(t.gains["metric"]) == ["final_greedy", "final_success"]
    assert t.rate_notes == [f"FrozenLake-4x4-v0 tiny-0.2m: grpo+actfocus ran at rl.lr 0.0001, its base grpo at 0.0004: "
                            f"{DIFFERENT}"]

"""gains.md, the one-screen summary of the paired gains; every expected cell is worked out by hand."""

from record_helpers import write_success_record

from agentbench_af.results.collect_records import records_frame
from agentbench_af.results.gains_table import gains_frame, to_markdown
from agentbench_af.results.table import build_table, write_table

ENV4 = "FrozenLake-4x4-v0"


def test_rows_per_env_model_measure_with_warm_start_and_verdicts(tmp_path):
    # six seeds: grpo 0.5 sampled / 0.5 greedy; grpo+actfocus 0.4 sampled (every seed lost: p = 2/64 =
    # 0.031 -> worse) and greedy 0.75 on seeds 0-1, 0.5 on the others (2 won, 4 tied: p 0.5 -> n.d.)
    for seed in range(6):
        write_success_record(tmp_path, "grpo", seed, 0.5, greedy=0.5)
        write_success_record(tmp_path, "grpo+actfocus", seed, 0.4, greedy=0.75 if seed < 2 else 0.5)
    grid = gains_frame(build_table(records_frame([tmp_path])))
    assert list(grid.columns) == ["warm start", "grpo+actfocus vs grpo"]
    assert list(grid.index) == [(ENV4, "tiny-0.2m", "sampled"), (ENV4, "tiny-0.2m", "greedy")]
    sampled, greedy = grid["grpo+actfocus vs grpo"]
    assert sampled == "-10.0 ± 0.0 (n 6, 0+/6-, p 0.03) **worse**"
    # greedy differences 0.25, 0.25, 0, 0, 0, 0: mean 1/12 = 8.3 points; squared deviations 2 * (1/6)^2 +
    # 4 * (1/12)^2 = 1/12 -> sd sqrt(1/60) = 0.1291 -> SE 0.1291 / sqrt(6) = 0.0527; 2 won, 0 lost: p = 2/4
    assert greedy == "+8.3 ± 5.3 (n 6, 2+/0-, p 0.50) n.d."
    # warm starts: step-0 success 0.25 on every seed; greedy step-0 0.5
    assert list(grid["warm start"]) == ["25.0 ± 0.0 (6)", "50.0 ± 0.0 (6)"]


def test_a_better_verdict_and_the_markdown(tmp_path):
    for seed in range(6):
        write_success_record(tmp_path, "ppo", seed, 0.25)
        write_success_record(tmp_path, "ppo+actfocus", seed, 0.5)
    md = to_markdown(build_table(records_frame([tmp_path])))
    assert md.startswith("# Paired gains over the base method")
    (row,) = [line for line in md.splitlines() if line.startswith(f"| {ENV4}")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells == [ENV4, "tiny-0.2m", "sampled", "25.0 ± 0.0 (6)", "+25.0 ± 0.0 (n 6, 6+/0-, p 0.03) **better**"]


def test_no_gains_md_without_a_comparison(tmp_path):
    for seed in range(2):
        write_success_record(tmp_path, "grpo", seed, 0.5)
    table = build_table(records_frame([tmp_path]))
    assert gains_frame(table).empty
    assert [p.name for p in write_table(table, tmp_path / "out", ("md",))] == ["table.md"]

"""The shipped cpu-quick preset end to end, in the reduced form CI runs (marked `slow`).

The preset's own spec (environments, per-environment settings such as Sokoban's reward, per-method loss
settings, shared warm starts) with budgets cut to seconds: one seed, two methods, on the local process
pool. The full preset is `agentbench-af reproduce --preset cpu-quick` (about an hour).
"""

import dataclasses

import pytest
import yaml

from agentbench_af.results.collect_records import records_frame
from agentbench_af.results.table import build_table
from agentbench_af.sweep.reproduce import ReproduceConfig, preset_path, publish_records
from agentbench_af.sweep.runner import run_sweep
from agentbench_af.sweep.spec import GridSpec, load_sweep_spec

SMALL = ["sft.steps=3", "sft.episodes=8", "rl.steps=1", "rl.prompts_per_step=2", "rollout.group_size=2",
         "rollout.max_new_tokens=24", "eval.episodes=2", "eval.every=1", "model.tokenizer_episodes=8"]
BUDGET_KEYS = tuple(item.split("=")[0] + "=" for item in SMALL)


@pytest.mark.slow
def test_cpu_quick_preset_reduced(tmp_path):
    spec = load_sweep_spec(preset_path("cpu-quick"))
    per_env = {env: [o for o in items if not o.startswith(BUDGET_KEYS)] for env, items in spec.per_env.items()}
    methods = ("ppo", "grpo+actfocus")
    spec = dataclasses.replace(
        spec, grid=GridSpec(envs=spec.grid.envs, models=("tiny-0.12m",), methods=methods, seeds=(0,)),
        overrides=(*spec.overrides, *SMALL), per_env=per_env, out_dir=str(tmp_path / "work"),
        per_method={m: items for m, items in spec.per_method.items() if m in methods},
    )
    outcomes = run_sweep(spec, backend="local", workers=2, show_progress=False)
    assert [o.status for o in outcomes] == ["completed"] * 4, [o.error for o in outcomes if o.error]
    board = tmp_path / "board"
    publish_records(outcomes, board)
    table = build_table(records_frame([board]))
    # the preset evaluates greedily too (eval.also_greedy): every environment also gets a greedy column
    assert set(table.grid.columns) == set(spec.grid.envs) | {f"{env} greedy" for env in spec.grid.envs}
    sokoban = next(o for o in outcomes if o.env_id == "Sokoban-6x6-1box-v0" and o.method == "grpo+actfocus")
    assert ReproduceConfig("cpu-quick").leaderboard.as_posix() == "leaderboards/cpu-quick"
    written = yaml.safe_load((tmp_path / "work" / "runs" / sokoban.name / "config.yaml").read_text())
    assert written["env"]["overrides"]["format_penalty"] == -1.0 and written["loss"]["kl_coef"] == 0.05

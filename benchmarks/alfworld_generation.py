"""ALFWorld task generation: seconds per generated task and the planner expert's success, per task type.

For each of the six task types, generate `n` tasks (fresh cache, so every task is really generated),
then play each one with the expert through the text env. Prints one table row per type.

    nice python benchmarks/alfworld_generation.py --n 30
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import typer
from agentbench_af.environments.alfworld.generator import generate_game, get_game_file
from agentbench_af.environments.alfworld.variants import TASK_TYPES
from tabulate import tabulate

from agentbench_af.api import make
from agentbench_af.formats.parse import format_response

app = typer.Typer(add_completion=False)


@app.command()
def main(
    n: int = typer.Option(30, help="tasks per type"),
    first_seed: int = typer.Option(500_000, help="first seed (training range: seen floor plans)"),
    cache_dir: Path | None = typer.Option(None, help="cache root (default: a fresh temporary folder)"),
) -> None:
    root = cache_dir or Path(tempfile.mkdtemp(prefix="alfworld_bench_"))
    os.environ["AGENTBENCH_AF_CACHE"] = str(root)  # read at call time by the generator

    generate_game("pick", first_seed - 1)  # warm-up: imports, scene tables, the planner library
    rows = []
    for key in TASK_TYPES:
        gen_s, reset_s, plan_len, redraws, wins, turns = [], [], [], 0, 0, []
        env = make(f"ALFWorld-{key}-v0")
        for seed in range(first_seed, first_seed + n):
            t0 = time.perf_counter()
            path = get_game_file(key, seed)
            gen_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            env.reset(seed=seed)
            reset_s.append(time.perf_counter() - t0)
            assert env.game_file == str(path)
            data = json.loads(path.read_text())
            plan_len.append(len(data["walkthrough"]))
            redraws += int(data["agentbench_af"]["attempt"])
            done, info, k = False, {}, 0
            while not done:
                turn = env.expert_turn()
                _, _, term, trunc, info = env.step(format_response(turn.reasoning, list(turn.actions)))
                done, k = term or trunc, k + 1
            wins += bool(info["success"])
            turns.append(k)
        env.close()
        rows.append([
            key, n, f"{statistics.mean(gen_s):.2f}", f"{statistics.median(gen_s):.2f}", f"{max(gen_s):.2f}",
            f"{statistics.mean(reset_s):.2f}", redraws, f"{statistics.mean(plan_len):.1f}", max(plan_len),
            f"{wins}/{n}", f"{statistics.mean(turns):.1f}",
        ])
        print(tabulate([rows[-1]], tablefmt="plain"), flush=True)
    headers = ["type", "tasks", "gen mean s", "gen median s", "gen max s", "reset mean s", "redraws",
               "plan mean", "plan max", "expert wins", "expert turns"]
    print(tabulate(rows, headers=headers, tablefmt="github"))
    print(f"cache: {root}")


if __name__ == "__main__":
    app()

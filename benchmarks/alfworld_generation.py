"""ALFWorld task generation: seconds per generated task and the planner expert's success, per task type.

For each of the six task types, generate `n` tasks (fresh cache, so every task is really generated),
then play each one with the expert through the text env. Prints one table row per type.
With `--full-check K`, the first K tasks of each type also compare the expert's plan length (fast-downward
on the goal-relevant reduced problem) with fast-downward on the whole problem, at the start and after
one random command.

    nice python benchmarks/alfworld_generation.py --n 30 --full-check 10
"""

from __future__ import annotations

import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import typer
from tabulate import tabulate

from agentbench_af.api import make
from agentbench_af.environments.alfworld.game import PddlGame
from agentbench_af.environments.alfworld.generator import generate_game, get_game_file
from agentbench_af.environments.alfworld.variants import TASK_TYPES
from agentbench_af.formats.parse import format_response

app = typer.Typer(add_completion=False)


@app.command()
def main(
    n: int = typer.Option(30, help="tasks per type"),
    first_seed: int = typer.Option(500_000, help="first seed (training range: seen floor plans)"),
    cache_dir: Path | None = typer.Option(None, help="cache root (default: a fresh temporary folder)"),
    full_check: int = typer.Option(0, help="tasks per type whose plans are compared with the full planner"),
) -> None:
    root = cache_dir or Path(tempfile.mkdtemp(prefix="alfworld_bench_"))
    os.environ["AGENTBENCH_AF_CACHE"] = str(root)  # read at call time by the generator

    generate_game("pick", first_seed - 1)  # warm-up: imports, scene tables, the planner library
    rows, checks = [], []
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
        if full_check:
            checks.append([key, *compare_with_full_planner(key, first_seed, full_check)])
            print(tabulate([checks[-1]], tablefmt="plain"), flush=True)
    headers = ["type", "tasks", "gen mean s", "gen median s", "gen max s", "reset mean s", "redraws",
               "plan mean", "plan max", "expert wins", "expert turns"]
    print(tabulate(rows, headers=headers, tablefmt="github"))
    if checks:
        print(tabulate(checks, headers=["type", "states", "same length", "reduced mean s", "full mean s", "full max s"],
                       tablefmt="github"))
    print(f"cache: {root}")


def compare_with_full_planner(key: str, first_seed: int, k: int) -> list:
    """Plan lengths, reduced vs full problem, at the start and after one random command (cached tasks)."""
    game, rng = PddlGame(), random.Random(first_seed)
    same, states, reduced_s, full_s = 0, 0, [], []
    for seed in range(first_seed, first_seed + k):
        game.load(get_game_file(key, seed))
        for moved in (False, True):
            if moved:
                game.step(rng.choice(game.admissible))
            t0 = time.perf_counter()
            reduced = game.reduced_plan()  # not the memoised walkthrough: a fresh plan
            reduced_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            full = game.full_plan()
            full_s.append(time.perf_counter() - t0)
            states += 1
            same += len(reduced) == len(full)
    game.close()
    return [states, f"{same}/{states}", f"{statistics.mean(reduced_s):.3f}", f"{statistics.mean(full_s):.2f}",
            f"{max(full_s):.2f}"]


if __name__ == "__main__":
    app()

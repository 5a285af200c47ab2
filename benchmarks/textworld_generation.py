"""TextWorld game generation: seconds per generated game and the expert's success, per variant.

For each TextWorld id, generate `n` games (fresh cache, so every game is really generated: textworld's
challenge generator, the Inform7 compile, and the generator's check that the winning policy wins),
then play each one with the expert through the text env. Prints one table row per id.

    nice python benchmarks/textworld_generation.py --n 50
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import typer
from tabulate import tabulate

from agentbench_af.api import list_envs, make
from agentbench_af.environments.textworld.generator import cached_meta, game_dir, get_game_file
from agentbench_af.formats.parse import format_response

app = typer.Typer(add_completion=False)


@app.command()
def main(
    n: int = typer.Option(50, help="games per id"),
    first_seed: int = typer.Option(0, help="first seed (training range)"),
    only: str = typer.Option("", help="comma-separated substrings: run only the ids containing one"),
    cache_dir: Path | None = typer.Option(None, help="cache root (default: a fresh temporary folder)"),
) -> None:
    root = cache_dir or Path(tempfile.mkdtemp(prefix="textworld_bench_"))
    os.environ["AGENTBENCH_AF_CACHE"] = str(root)  # read at call time by the generator
    ids = [i for i in list_envs() if i.startswith("TextWorld-")]
    if only:
        ids = [i for i in ids if any(part in i for part in only.split(","))]

    get_game_file("coin_collector", 5, first_seed + 10**6 - 1)  # warm-up: imports, the compiler's first run
    rows = []
    for env_id in ids:
        env = make(env_id)
        v = env.variant
        gen_s, reset_s, step_s, plan_len, redraws, wins, turns, score_frac = [], [], [], [], 0, 0, [], []
        for seed in range(first_seed, first_seed + n):
            t0 = time.perf_counter()
            path = get_game_file(v.challenge, v.level, seed)
            gen_s.append(time.perf_counter() - t0)
            meta = cached_meta(game_dir(v.challenge, v.level, seed), v.challenge, v.level, seed) or {}
            plan_len.append(len(meta["walkthrough"]))
            redraws += int(meta["attempt"])
            t0 = time.perf_counter()
            env.reset(seed=seed)
            reset_s.append(time.perf_counter() - t0)
            assert env.game_file == str(path)
            done, info, k, total = False, {}, 0, 0.0
            t0 = time.perf_counter()
            while not done:
                turn = env.expert_turn()
                _, reward, term, trunc, info = env.step(format_response(turn.reasoning, list(turn.actions)))
                done, k, total = term or trunc, k + 1, total + reward
            step_s.append((time.perf_counter() - t0) / k)
            wins += bool(info["success"])
            turns.append(k)
            score_frac.append(total / meta["max_score"])
        env.close()
        rows.append([
            env_id, n, f"{statistics.mean(gen_s):.2f}", f"{statistics.median(gen_s):.2f}", f"{max(gen_s):.2f}",
            redraws, f"{statistics.mean(reset_s):.3f}", f"{1000 * statistics.mean(step_s):.1f}",
            f"{statistics.mean(plan_len):.1f}", max(plan_len), v.max_actions_per_episode,
            f"{wins}/{n}", f"{statistics.mean(turns):.1f}", f"{statistics.mean(score_frac):.2f}",
        ])
        print(tabulate([rows[-1]], tablefmt="plain"), flush=True)
    headers = ["id", "games", "gen mean s", "gen median s", "gen max s", "redraws", "reset mean s", "step ms",
               "plan mean", "plan max", "budget", "expert wins", "expert turns", "score / max"]
    print(tabulate(rows, headers=headers, tablefmt="github"))
    print(f"cache: {root}")


if __name__ == "__main__":
    app()

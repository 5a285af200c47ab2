"""Environment commands: `envs`, `check-env`, `play`, `expert`.

Left out: recording played episodes, and checks in parallel processes (the checker is fast enough
to run ids one after another).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time

import typer
from tabulate import tabulate
from tqdm import tqdm

from agentbench_af.api.checker import CheckError, check_env, expert_episode
from agentbench_af.api.env import TextEnv
from agentbench_af.api.registry import DataUnavailable, MissingExtra, list_envs, make, spec
from agentbench_af.cli.app import app


def _make(env_id: str) -> TextEnv:
    """`make(env_id)`, or a one-line error and exit status 2 (unknown id, missing extra)."""
    try:
        return make(env_id)
    except (KeyError, ImportError) as exc:
        typer.echo(f"error: {exc.args[0] if exc.args else exc}", err=True)
        raise typer.Exit(2) from exc


@app.command("envs")
def envs_command(
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List the registered environment ids with a one-line description."""
    rows = []
    for env_id in list_envs():
        s = spec(env_id)
        rows.append(
            {
                "id": env_id,
                "description": s.description,
                "extra": s.extra or "",
                "max_turns": s.variant.max_turns,
                "max_actions_per_turn": s.variant.max_actions_per_turn,
                "variant": dataclasses.asdict(s.variant),
            }
        )
    if as_json:
        typer.echo(json.dumps(rows, indent=2, default=str))
        return
    table = [(r["id"], r["max_turns"], r["max_actions_per_turn"], r["extra"], r["description"]) for r in rows]
    typer.echo(tabulate(table, headers=["id", "turns", "actions/turn", "extra", "description"]))


@app.command("check-env")
def check_env_command(
    env_id: str = typer.Argument(None, metavar="[ID]", help="Environment id (see `agentbench-af envs`)."),
    all_ids: bool = typer.Option(False, "--all", help="Check every registered id."),
    n_malformed: int = typer.Option(1000, help="Malformed responses to try per id."),
    seed: int = typer.Option(0, help="Seed of the checker's own random choices."),
) -> None:
    """Run the contract checker; one PASS/FAIL/SKIP line per id, exit status 1 if any fails.

    SKIP: the id cannot run here, for a data set that is absent (DataUnavailable, e.g. the official
    ALFWorld files without ALFWORLD_DATA) or an optional extra that is not installed (MissingExtra); the
    line gives the reason and the fix, and a skip is not a failure."""
    if all_ids == (env_id is not None):
        typer.echo("error: give an environment id or --all (not both)", err=True)
        raise typer.Exit(2)
    ids = list_envs() if all_ids else [env_id]
    failed = skipped = 0
    for i in ids:
        try:
            typer.echo(check_env(i, n_malformed=n_malformed, seed=seed).summary())
        except (DataUnavailable, MissingExtra) as exc:
            skipped += 1
            typer.echo(f"SKIP {i}: {exc}")
        except CheckError as exc:
            failed += 1
            typer.echo(f"FAIL {exc}")
        except Exception as exc:  # unknown id, missing extra, a crash while building the environment
            failed += 1
            msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            typer.echo(f"FAIL {i}: {type(exc).__name__}: {msg}")
    typer.echo(f"{len(ids) - failed - skipped} passed, {failed} failed, {skipped} skipped (data or extra absent)")
    if failed:
        raise typer.Exit(1)


def _as_response(line: str) -> str:
    """A bare action line becomes `<answer>line</answer>`; a line with tags passes through."""
    if any(tag in line for tag in ("<answer", "</answer", "<think", "</think")):
        return line
    return f"<answer>{line.strip()}</answer>"


@app.command("play")
def play_command(
    env_id: str = typer.Argument(..., metavar="ID"),
    seed: int = typer.Option(0, help="Instance seed."),
) -> None:
    """Play an environment in the terminal. Type an action (`Up`, `Up || Left`) or a full response."""
    env = _make(env_id)
    obs, _ = env.reset(seed=seed)
    typer.echo(type(env).rules(env.variant))
    typer.echo(
        f"\n{env_id}, seed {seed}: up to {env.variant.max_turns} turns, {env.variant.max_actions_per_turn} "
        "action(s) per turn separated by ||. A bare action is wrapped in <answer>...</answer>. "
        "Ctrl-D or Ctrl-C quits.\n"
    )
    total, turn = 0.0, 0
    while True:
        typer.echo(obs)
        try:
            line = input("> ")
        except (EOFError, KeyboardInterrupt):
            typer.echo(f"\nquit after {turn} turn(s), total reward {total:+.2f}")
            return
        obs, reward, terminated, truncated, info = env.step(_as_response(line))
        total += reward
        turn += 1
        reason = f"  reason: {info['invalid_reason']}" if info.get("invalid_reason") else ""
        typer.echo(f"reward {reward:+.2f}  valid: {'yes' if info['action_is_valid'] else 'no'}{reason}")
        if terminated or truncated:
            typer.echo(env.render())
            end = "success" if info["success"] else ("truncated (limit reached)" if truncated else "failure")
            typer.echo(f"episode over: {end}; {turn} turn(s), total reward {total:+.2f}")
            return


@app.command("expert")
def expert_command(
    env_id: str = typer.Argument(..., metavar="ID"),
    episodes: int = typer.Option(
        100, min=1, help="Number of episodes (seeds seed-start, seed-start+1, ...)."
    ),
    seed_start: int = typer.Option(None, help="First seed; default: the start of the variant's eval seeds."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Run the expert: success rate, mean reward and mean turns over consecutive seeds."""
    env = _make(env_id)
    start = env.variant.eval_seeds[0] if seed_start is None else seed_start
    results = []
    t0 = time.perf_counter()
    for s in tqdm(range(start, start + episodes), desc=env_id, disable=as_json or episodes < 50, leave=False):
        success, total, turns, _ = expert_episode(env, s)
        results.append((success, total, turns))
    summary = {
        "id": env_id,
        "episodes": episodes,
        "seeds": [start, start + episodes],
        "success_rate": statistics.fmean(r[0] for r in results),
        "mean_reward": statistics.fmean(r[1] for r in results),
        "mean_turns": statistics.fmean(r[2] for r in results),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    if as_json:
        typer.echo(json.dumps(summary))
        return
    typer.echo(
        f"{env_id}: {episodes} episodes (seeds {start}..{start + episodes - 1}): "
        f"success {summary['success_rate']:.1%}, mean reward {summary['mean_reward']:.3f}, "
        f"mean turns {summary['mean_turns']:.2f}"
    )

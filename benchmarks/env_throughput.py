"""Environment throughput: `env.step` calls per second per id, with expert and with random turns.

Runs on one core (CPU affinity and BLAS/OpenMP/torch threads pinned to 1). Only `env.step` is inside
the step timer; the expert's turn computation and `reset` are timed separately and reported beside it.

    python benchmarks/env_throughput.py                       # every registered id, 2 s per measurement
    python benchmarks/env_throughput.py --ids FrozenLake-4x4-v0 --seconds 5 --json

Left out: batched stepping and memory use (the rollout engine steps environments one by one).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import json  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass  # noqa: E402

import typer  # noqa: E402
from tabulate import tabulate  # noqa: E402

import agentbench_af  # noqa: E402
from agentbench_af.api.checker import action_vocabulary, expert_response, random_response  # noqa: E402


@dataclass(frozen=True)
class Measurement:
    env_id: str
    mode: str  # "expert" or "random"
    steps: int
    episodes: int
    step_seconds: float
    policy_seconds: float  # computing the responses (expert search or random draw)
    reset_seconds: float
    valid_fraction: float

    @property
    def steps_per_second(self) -> float:
        return self.steps / self.step_seconds if self.step_seconds else float("nan")

    @property
    def policy_ms(self) -> float:
        return 1000 * self.policy_seconds / max(self.steps, 1)

    @property
    def reset_ms(self) -> float:
        return 1000 * self.reset_seconds / max(self.episodes, 1)


def pin_one_core() -> str:
    """Restrict this process to one CPU and torch (if loaded) to one thread; say which CPU."""
    cpu = "any"
    if hasattr(os, "sched_setaffinity"):
        first = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {first})
        cpu = str(first)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)
    return cpu


def measure(env_id: str, mode: str, seconds: float, seed: int = 0) -> Measurement:
    """Step one environment with `mode` turns for about `seconds` of wall time."""
    env = agentbench_af.make(env_id)
    lo, hi = env.variant.train_seeds
    vocab = action_vocabulary(env, (lo, lo + 1)) if mode == "random" else ()
    rng = random.Random(seed)
    steps = episodes = valid = 0
    t_step = t_policy = t_reset = 0.0
    deadline = time.perf_counter() + seconds
    done = True
    while time.perf_counter() < deadline:
        if done:
            t0 = time.perf_counter()
            env.reset(seed=lo + episodes % (hi - lo))  # cycle inside the training range
            t_reset += time.perf_counter() - t0
            episodes += 1
        t0 = time.perf_counter()
        text = expert_response(env.expert_turn()) if mode == "expert" else random_response(env, vocab, rng)
        t1 = time.perf_counter()
        _, _, terminated, truncated, info = env.step(text)
        t2 = time.perf_counter()
        t_policy += t1 - t0
        t_step += t2 - t1
        steps += 1
        valid += bool(info["action_is_valid"])
        done = terminated or truncated
    env.close()
    return Measurement(env_id, mode, steps, episodes, t_step, t_policy, t_reset, valid / max(steps, 1))


def main(
    ids: list[str] = typer.Option(None, "--ids", help="Environment ids (repeat the option); default: all."),
    seconds: float = typer.Option(2.0, help="Wall seconds per measurement (one per id and mode)."),
    as_json: bool = typer.Option(
        False, "--json", help="Print one JSON object per measurement instead of a table."
    ),
) -> None:
    cpu = pin_one_core()
    rows, results = [], []
    for env_id in ids or agentbench_af.list_envs():
        try:
            exp, rnd = (measure(env_id, m, seconds) for m in ("expert", "random"))
        except Exception as exc:  # a missing extra or a broken environment: report it, go on
            rows.append((env_id, "error", "", "", "", "", f"{type(exc).__name__}: {str(exc)[:70]}"))
            continue
        results += [exp, rnd]
        rows.append(
            (
                env_id,
                f"{exp.steps_per_second:,.0f}",
                f"{exp.policy_ms:.3f}",
                f"{rnd.steps_per_second:,.0f}",
                f"{rnd.valid_fraction:.0%}",
                f"{(exp.reset_seconds + rnd.reset_seconds) * 1000 / (exp.episodes + rnd.episodes):.3f}",
                "",
            )
        )
    if as_json:
        for m in results:
            typer.echo(
                json.dumps(
                    {
                        **asdict(m),
                        "steps_per_second": m.steps_per_second,
                        "policy_ms": m.policy_ms,
                        "reset_ms": m.reset_ms,
                    }
                )
            )
        return
    typer.echo(f"one core (cpu {cpu}), {seconds:g} s per measurement; steps/s counts env.step time only")
    typer.echo(
        tabulate(
            rows,
            headers=[
                "id",
                "expert steps/s",
                "expert turn ms",
                "random steps/s",
                "random valid",
                "reset ms",
                "note",
            ],
        )
    )


if __name__ == "__main__":
    typer.run(main)

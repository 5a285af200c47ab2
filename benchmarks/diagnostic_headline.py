"""Cost of the diagnostic's headline: seconds to measure one saved batch of a run with its final policy.

Loads the last saved rollout batch of RUN_DIR (`rollouts/step-*.pt`, written with run.save_rollouts_every)
and the run's policy (final_policy, else warm_start), then times `compute_headline` (2 G backward passes
per measured group) `--repeats` times with `--max-groups` groups, and prints the median process (CPU) and
wall seconds with the batch's size and the CPU time per (rollout, role) gradient, its forward share
included. Every repeat gives the same numbers (seeded); a warm-up call comes first, untimed.

    python benchmarks/diagnostic_headline.py runs/FrozenLake-4x4-v0-grpo-tiny-0.2m-s0 --max-groups 16

Left out: GPU timing (pass --device cuda to run it there; no CUDA synchronisation beyond the result).
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import torch
import typer
from tabulate import tabulate

from agentbench_af.diagnose.headline import compute_headline
from agentbench_af.models.policy import Policy
from agentbench_af.results.rollout_store import load_rollouts
from agentbench_af.train.bookkeeping.saved_run import run_config, run_policy_dir, saved_rollout_paths

app = typer.Typer(add_completion=False)


@app.command()
def main(
    run_dir: Path = typer.Argument(..., help="a run directory with saved rollouts and a policy"),
    max_groups: int = typer.Option(16, help="groups with reward variance that get gradients"),
    repeats: int = typer.Option(3, help="timed repeats after one warm-up"),
    device: str = typer.Option("cpu", help="cpu or cuda"),
    threads: int = typer.Option(1, help="torch threads (CPU)"),
) -> None:
    torch.set_num_threads(threads)
    cfg = run_config(run_dir)
    paths = saved_rollout_paths(run_dir)
    policy_dir = run_policy_dir(run_dir, cfg)
    if not paths or policy_dir is None:
        raise typer.BadParameter(f"{run_dir} needs saved rollouts and a policy")
    step, batch = load_rollouts(paths[-1])
    policy = Policy.load(policy_dir, device)
    kw = {"temperature": cfg.rollout.temperature, "device": device, "format_role": cfg.credit.format_role,
          "max_groups": max_groups}
    compute_headline(batch, policy.lm, **kw)  # warm-up
    cpu, wall, h = [], [], None
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        h = compute_headline(batch, policy.lm, **kw)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    rollouts = sum(g.rollouts for g in h.groups)
    rows = [[step, h.n_groups_measured, rollouts, tuple(batch.input_ids.shape), policy.num_params,
             f"{statistics.median(cpu):.2f}", f"{statistics.median(wall):.2f}",
             f"{1000 * statistics.median(cpu) / max(2 * rollouts, 1):.1f}",
             "–" if h.ratio is None else f"{h.ratio:.3f}"]]
    head = ["step", "groups", "rollouts", "batch (B, T)", "parameters", "CPU s", "wall s", "CPU ms / (rollout, role)",
            "headline"]
    typer.echo(tabulate(rows, head, tablefmt="github", disable_numparse=True))


if __name__ == "__main__":
    app()

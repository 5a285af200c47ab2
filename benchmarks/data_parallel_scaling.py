"""Data-parallel scaling on CPU: the same training run in 1 process and in N processes (torchrun, gloo).

Every configuration trains from one shared warm start (a short SFT, built once) with the CLI, exactly as
a user would launch it, and reads the run's `metrics.jsonl`. The figure is the RL step time (collect,
score, credit, update; evaluation excluded) per rollout, averaged over the steps after the first (the
first pays one-off costs). For N processes a step's time is the slowest rank's. Configurations:
1 process x 1 thread and N processes x 1 thread; with `--threaded` also 1 process x N threads (torch's
own intra-op parallelism, for comparison). The machine's load average is printed before and after,
since other jobs on the same cores change every figure.

    python benchmarks/data_parallel_scaling.py                       # tiny-0.2m, 8 prompts x 4 rollouts, 5 steps
    python benchmarks/data_parallel_scaling.py --threaded --json    # also 1 process x 2 threads
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import typer
from tabulate import tabulate

from agentbench_af.config import load_config
from agentbench_af.io import read_jsonl
from agentbench_af.results.record import git_commit
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.warm.warm_start import prepare_warm_start

app = typer.Typer(add_completion=False)


def _overrides(out_dir: Path, name: str, model: str, prompts: int, group: int, steps: int, threads: int,
               warm: Path | None, sft_steps: int) -> list[str]:
    items = {"env.id": "FrozenLake-4x4-v0", "model.name": model, "model.tokenizer_episodes": 50,
             "sft.steps": sft_steps, "sft.episodes": 200, "rl.steps": steps, "rl.prompts_per_step": prompts,
             "rollout.group_size": group, "rollout.max_new_tokens": 48, "eval.episodes": 4, "eval.every": 1000,
             "run.checkpoint_every": 1000, "run.out_dir": str(out_dir), "run.name": name, "run.threads": threads,
             "run.device": "cpu"}
    if warm is not None:
        items["run.init_from"] = str(warm)
    return [f"{k}={v}" for k, v in items.items()]


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


@app.command()
def main(model: str = "tiny-0.2m", prompts: int = 8, group: int = 4, steps: int = 5, processes: int = 2,
         sft_steps: int = 60, threaded: bool = typer.Option(False, "--threaded"),
         as_json: bool = typer.Option(False, "--json")) -> None:
    work = Path(tempfile.mkdtemp(prefix="dp-scaling-"))
    base = _overrides(work, "warm", model, prompts, group, steps, 1, None, sft_steps)
    cfg = load_config(TrainConfig, None, base)
    torch.set_num_threads(1)
    warm = prepare_warm_start(cfg, work / "warm", torch.device("cpu"), show_progress=False)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    configs = [("1 process x 1 thread", 1, 1), (f"{processes} processes x 1 thread", processes, 1)]
    if threaded:
        configs.insert(1, (f"1 process x {processes} threads", 1, processes))
    load_before, rows, raw = _load(), [], []
    for label, nproc, threads in configs:
        name = f"p{nproc}-t{threads}"
        args = _overrides(work, name, model, prompts, group, steps, threads, warm, sft_steps)
        launch = ([sys.executable, "-m", "agentbench_af.cli"] if nproc == 1 else
                  [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(nproc),
                   "-m", "agentbench_af.cli"])
        start = time.time()
        done = subprocess.run([*launch, "train", *args, "--quiet"], capture_output=True, text=True, env=env)
        wall = time.time() - start
        if done.returncode != 0:
            raise SystemExit(f"{label} failed:\n{done.stderr[-2000:]}")
        metrics = [r for r in read_jsonl(work / name / "metrics.jsonl") if r["step"] >= 2]
        step = statistics.mean(r["time_step_s"] for r in metrics)
        rollout = statistics.mean(r["time_rollout_s"] for r in metrics)
        rows.append([label, f"{step:.2f}", f"{1000 * step / (prompts * group):.1f}", f"{rollout:.2f}",
                     f"{step - rollout:.2f}", f"{wall:.0f}"])
        raw.append({"config": label, "processes": nproc, "threads": threads, "step_s": step,
                    "rollout_s": rollout, "ms_per_rollout": 1000 * step / (prompts * group), "wall_s": wall,
                    "steps": [r["time_step_s"] for r in metrics]})
    base_step = raw[0]["step_s"]
    for row, r in zip(rows, raw, strict=True):
        row.append(f"{base_step / r['step_s']:.2f}x")
    header = (f"{model}, FrozenLake-4x4, {prompts} prompts x {group} rollouts per step, steps 2-{steps} averaged; "
              f"commit {git_commit()}; {_cpu_model()}, {os.cpu_count()} cores; torch {torch.__version__}; "
              f"load average before {load_before}, after {_load()}")
    if as_json:
        print(json.dumps({"header": header, "results": raw}, indent=2))
        return
    print(header)
    print(tabulate(rows, headers=["configuration", "step s", "ms / rollout", "collect s", "score+credit+update s",
                                  "wall s", "speedup"]))


if __name__ == "__main__":
    app()

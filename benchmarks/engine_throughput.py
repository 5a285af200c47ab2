"""Rollout throughput by engine: generated tokens/s of the transformers engine vs the vLLM engine.

Same policy, same episodes, same sampling (temperature 1, `--max-new-tokens`), one engine at a time:
- *collector*: `collect_rollouts` on P prompts x G rollouts of the environment (multi-turn, full
  context: every turn extends the last; the transformers engine reuses each episode's KV cache, vLLM
  its own prefix cache), i.e. what a training step does;
- *engine, one turn*: `generate` alone on the P x G first-turn prompts (no environment, no history).
The engines alternate within each repetition (AB, BA, ...); medians and the median of per-repetition
ratios are printed.
The policy is a tiny model of head dim >= 32 (vLLM's CPU attention rejects 16), SFT'd for a few steps
so responses end on their own (`--sft-steps 0`: random init, every response runs to the limit). vLLM's
engine start and its first call (warm-up) are timed separately and left out of the rates.

    python benchmarks/engine_throughput.py                               # FrozenLake, 16 x 8, tiny-0.2m-h32
    python benchmarks/engine_throughput.py --model tiny-7m --sft-steps 0 --json

Needs the `vllm` extra. Left out: GPU runs of this script's shapes (pass `--device cuda` on a GPU
machine: the policy then runs in bfloat16 in both engines) and sampling with top_p < 1.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import asdict

import numpy as np
import torch
import typer
from rollout_throughput import Measurement, first_turn_prompts, warm_policy
from tabulate import tabulate

import agentbench_af
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.seeds import draw_train_seeds
from agentbench_af.rollout.types import RolloutConfig, SamplingParams


def collect(engine, policy, env_id, seeds, cfg, seed: int) -> Measurement:
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, env_id, seeds, cfg)
    seconds = time.perf_counter() - t0
    return Measurement("collector", len(trajs), sum(len(t.turns) for t in trajs),
                       sum(t.num_generated_tokens for t in trajs), seconds,
                       sum(len(turn.context_ids) for t in trajs for turn in t.turns))


def one_turn(engine, policy, prompts, cfg, seed: int) -> Measurement:
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    gens = engine.generate(prompts, SamplingParams(cfg.temperature, cfg.top_p, cfg.max_new_tokens),
                           list(policy.chat.end_of_turn_ids))
    seconds = time.perf_counter() - t0
    return Measurement("engine, one turn", len(prompts), len(prompts), sum(len(g.token_ids) for g in gens), seconds,
                       sum(len(p) for p in prompts))


def main(
    env_id: str = typer.Option("FrozenLake-4x4-v0", "--env"),
    model: str = typer.Option("tiny-0.2m-h32"),
    sft_steps: int = typer.Option(60, help="Warm-start SFT steps (0: random init)."),
    prompts: int = typer.Option(16),
    group: int = typer.Option(8),
    max_new_tokens: int = typer.Option(48),
    repeats: int = typer.Option(3, help="Repetitions of each mode (medians reported)."),
    threads: int = typer.Option(1, help="torch threads (the transformers engine; vLLM's CPU kernels use its own)."),
    device: str = typer.Option("cpu"),
    kv_cache_gib: float = typer.Option(0.5, help="vLLM KV cache on CPU."),
    memory_fraction: float = typer.Option(0.1, help="vLLM gpu_memory_utilization."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    from agentbench_af.rollout.vllm_engine import VLLMEngine

    torch.set_num_threads(threads)
    policy = warm_policy(env_id, model, sft_steps)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    policy.lm.to(device=device, dtype=dtype).eval()
    env = agentbench_af.make(env_id)
    seeds = draw_train_seeds(env, prompts, np.random.default_rng(0))
    cfg = RolloutConfig(group_size=group, max_new_tokens=max_new_tokens, max_batch_size=prompts * group,
                        max_context_tokens=2048)
    first = first_turn_prompts(policy, env_id, seeds, cfg)
    runs: dict[str, list[Measurement]] = {}
    transformers_engine = TransformersEngine(policy.lm, policy.pad_token_id, max_batch_size=prompts * group)
    collect(transformers_engine, policy, env_id, seeds[:2], cfg, 99)  # warm-up
    t0 = time.perf_counter()
    vllm_engine = VLLMEngine(policy.lm, cfg.max_context_tokens, dtype, memory_fraction, kv_cache_gib)
    start_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    collect(vllm_engine, policy, env_id, seeds[:2], cfg, 99)  # warm-up
    warmup_s = time.perf_counter() - t0
    engines = {"transformers": transformers_engine, "vllm": vllm_engine}
    try:  # the engines alternate (AB, BA, ...), so a change in the machine's load hits both alike
        for r in range(repeats):
            for name in (("transformers", "vllm") if r % 2 == 0 else ("vllm", "transformers")):
                runs.setdefault(f"{name} collector", []).append(collect(engines[name], policy, env_id, seeds, cfg, r))
                runs.setdefault(f"{name} one turn", []).append(one_turn(engines[name], policy, first, cfg, r))
    finally:
        vllm_engine.close()
    pair = {mode: [v.tokens_per_s / t.tokens_per_s for t, v in zip(runs[f"transformers {mode}"], runs[f"vllm {mode}"],
                                                                   strict=True)] for mode in ("collector", "one turn")}
    med = {name: statistics.median(m.tokens_per_s for m in ms) for name, ms in runs.items()}
    summary = {
        "env": env_id, "model": model, "params": policy.num_params, "sft_steps": sft_steps, "threads": threads,
        "device": device, "batch": f"{prompts}x{group}", "max_new_tokens": max_new_tokens,
        "vllm_start_s": start_s, "vllm_warmup_s": warmup_s, "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "runs": {name: [asdict(m) | {"tokens_per_s": m.tokens_per_s} for m in ms] for name, ms in runs.items()},
        "median_tokens_per_s": med,
        "vllm_over_transformers_collector": med["vllm collector"] / med["transformers collector"],
        "vllm_over_transformers_one_turn": med["vllm one turn"] / med["transformers one turn"],
        "median_pair_ratio": {mode: statistics.median(r) for mode, r in pair.items()},
    }
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    rows = [[name, m.episodes, m.turns, m.tokens, f"{m.seconds:.2f}", f"{m.tokens_per_s:,.0f}"]
            for name, ms in runs.items() for m in ms]
    typer.echo(f"{env_id}, {model} ({policy.num_params:,} params), SFT {sft_steps} steps, {device}, torch threads "
               f"{threads}, batch {prompts}x{group}, max_new_tokens {max_new_tokens}; vLLM start {start_s:.1f} s, "
               f"warm-up {warmup_s:.1f} s")
    typer.echo(tabulate(rows, headers=["engine / mode", "episodes", "turns", "tokens", "s", "tokens/s"]))
    typer.echo(f"median tokens/s: collector transformers {med['transformers collector']:,.0f}, vLLM "
               f"{med['vllm collector']:,.0f} ({summary['vllm_over_transformers_collector']:.2f}x); one turn "
               f"transformers {med['transformers one turn']:,.0f}, vLLM {med['vllm one turn']:,.0f} "
               f"({summary['vllm_over_transformers_one_turn']:.2f}x); median of per-repetition ratios: collector "
               f"{summary['median_pair_ratio']['collector']:.2f}x, one turn {summary['median_pair_ratio']['one turn']:.2f}x")


if __name__ == "__main__":
    typer.run(main)

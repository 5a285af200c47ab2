"""Rollout throughput: generated tokens/s of the batched collector vs one episode at a time.

Both modes run the real multi-turn collector (`collect_rollouts`: context building, generation with the
KV cache, token roles, environment steps) with the same policy on the same environment. Batched: P
prompts x G rollouts stepped together (one `generate` call per turn over every live episode). One at a
time: the same episodes, each collected alone (batch of 1), on a subset (`--single-episodes`), since the
figure compared is a rate. A second table times the engine alone on one turn (the first-turn prompts
of the same 16 x 8 episodes, one `generate` call vs one call per prompt), which separates batched
decoding from the multi-turn prefill the collector repeats every turn. The policy is a tiny model warm-started for a few SFT steps so responses end
on their own; `--sft-steps 0` gives a random-init policy whose responses all run to `--max-new-tokens`
(equal tokens per turn in both modes). Torch runs on one thread.

    python benchmarks/rollout_throughput.py                          # FrozenLake, 16 x 8, tiny-0.2m
    python benchmarks/rollout_throughput.py --sft-steps 0 --repeats 2 --json

Left out: vLLM (the GPU engine) and asynchronous environments.
"""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import typer
from tabulate import tabulate

import agentbench_af
from agentbench_af.formats.prompts import turn_message
from agentbench_af.models.policy import Policy, build_policy
from agentbench_af.rollout.collect import build_context, collect_rollouts
from agentbench_af.rollout.engine import TransformersEngine
from agentbench_af.rollout.seeds import draw_train_seeds
from agentbench_af.rollout.types import RolloutConfig, SamplingParams, Trajectory
from agentbench_af.train.config import EnvConfig, ModelConfig, SFTConfig, TrainConfig
from agentbench_af.train.warm.sft import sft_warm_start


@dataclass(frozen=True)
class Measurement:
    mode: str
    episodes: int
    turns: int
    tokens: int
    seconds: float
    prompt_tokens: int = 0  # context ids fed to the model (prefilled) over all turns

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds

    @property
    def turns_per_s(self) -> float:
        return self.turns / self.seconds


def warm_policy(env_id: str, model: str, sft_steps: int, seed: int = 0) -> Policy:
    """A tiny policy SFT'd for `sft_steps` steps on expert demonstrations (0: random init)."""
    torch.manual_seed(seed)
    policy = build_policy(model, [env_id], vocab_size=512, tokenizer_episodes=50, seed=seed)
    cfg = TrainConfig(env=EnvConfig(id=env_id), model=ModelConfig(name=model),
                      sft=SFTConfig(steps=sft_steps, batch_size=16, lr=3e-3, warmup_steps=5, episodes=200))
    sft_warm_start(policy.lm, policy.tokenizer, policy.chat, cfg, torch.device("cpu"))
    return policy


def measure(policy: Policy, env_id: str, seeds: list[int], cfg: RolloutConfig, mode: str, seed: int,
            prefix_cache: bool = True) -> Measurement:
    engine = TransformersEngine(policy.lm, policy.pad_token_id, max_batch_size=cfg.max_batch_size, prefix_cache=prefix_cache)
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, env_id, seeds, cfg)
    seconds = time.perf_counter() - t0
    return Measurement(mode, len(trajs), sum(len(t.turns) for t in trajs),
                       sum(t.num_generated_tokens for t in trajs), seconds,
                       sum(len(turn.context_ids) for t in trajs for turn in t.turns))


def first_turn_prompts(policy: Policy, env_id: str, seeds: list[int], cfg: RolloutConfig) -> list[list[int]]:
    env = agentbench_af.make(env_id)
    prompts = []
    for seed in seeds:
        obs, _ = env.reset(seed=seed)
        traj = Trajectory(env_id, seed, 0, env.system_prompt())
        message = turn_message(obs, 1, env.actions_left, env.variant.max_actions_per_turn)
        prompts += [build_context(policy.chat, traj, message, cfg)] * cfg.group_size
    return prompts


def measure_engine(policy: Policy, prompts: list[list[int]], cfg: RolloutConfig, batched: bool, seed: int) -> Measurement:
    engine = TransformersEngine(policy.lm, policy.pad_token_id, max_batch_size=cfg.max_batch_size)
    params = SamplingParams(cfg.temperature, cfg.top_p, cfg.max_new_tokens)
    stop = list(policy.chat.end_of_turn_ids)
    torch.manual_seed(seed)
    t0 = time.perf_counter()
    if batched:
        gens = engine.generate(prompts, params, stop)
    else:
        gens = [engine.generate([p], params, stop)[0] for p in prompts]
    seconds = time.perf_counter() - t0
    return Measurement("engine " + ("batched" if batched else "single"), len(prompts), len(prompts),
                       sum(len(g.token_ids) for g in gens), seconds, sum(len(p) for p in prompts))


def main(
    env_id: str = typer.Option("FrozenLake-4x4-v0", "--env"),
    model: str = typer.Option("tiny-0.2m"),
    sft_steps: int = typer.Option(60, help="Warm-start SFT steps (0: random init)."),
    prompts: int = typer.Option(16),
    group: int = typer.Option(8),
    single_episodes: int = typer.Option(16, help="Episodes collected one at a time."),
    max_new_tokens: int = typer.Option(48),
    context_mode: str = typer.Option("full", help="full or window (window_turns 2)."),
    max_batch_size: int = typer.Option(0, help="Engine chunk size (0: prompts x group, one chunk)."),
    repeats: int = typer.Option(3, help="Repetitions of each mode (medians reported)."),
    prefix_cache: bool = typer.Option(True, help="Reuse each trajectory's KV cache across turns (full context)."),
    threads: int = typer.Option(1),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    torch.set_num_threads(threads)
    t0 = time.perf_counter()
    policy = warm_policy(env_id, model, sft_steps)
    warm_s = time.perf_counter() - t0
    env = agentbench_af.make(env_id)
    seeds = draw_train_seeds(env, prompts, np.random.default_rng(0))
    batched_cfg = RolloutConfig(group_size=group, max_new_tokens=max_new_tokens, max_batch_size=max_batch_size or prompts * group,
                                context_mode=context_mode)
    single_cfg = RolloutConfig(group_size=1, max_new_tokens=max_new_tokens, context_mode=context_mode)
    episodes = [s for s in seeds for _ in range(group)][:: max(1, prompts * group // single_episodes)][:single_episodes]
    prompts_1 = first_turn_prompts(policy, env_id, seeds, batched_cfg)
    stride = max(1, len(prompts_1) // single_episodes)
    runs: dict[str, list[Measurement]] = {"batched": [], "single": [], "engine batched": [], "engine single": []}
    for r in range(repeats):
        runs["batched"].append(measure(policy, env_id, seeds, batched_cfg, "batched", r, prefix_cache))
        parts = [measure(policy, env_id, [s], single_cfg, "single", r * 1000 + i, prefix_cache) for i, s in enumerate(episodes)]
        runs["single"].append(Measurement("single", len(parts), sum(p.turns for p in parts), sum(p.tokens for p in parts),
                                          sum(p.seconds for p in parts), sum(p.prompt_tokens for p in parts)))
        runs["engine batched"].append(measure_engine(policy, prompts_1, batched_cfg, True, r))
        runs["engine single"].append(measure_engine(policy, prompts_1[::stride][:single_episodes], batched_cfg, False, r))
    med = {name: statistics.median(m.tokens_per_s for m in ms) for name, ms in runs.items()}
    summary = {
        "env": env_id, "model": model, "params": policy.num_params, "sft_steps": sft_steps, "threads": threads,
        "context_mode": context_mode, "prefix_cache": prefix_cache, "max_new_tokens": max_new_tokens, "warm_start_s": warm_s,
        "runs": {name: [asdict(m) | {"tokens_per_s": m.tokens_per_s} for m in ms] for name, ms in runs.items()},
        "median_tokens_per_s": med,
        "speedup_collector": med["batched"] / med["single"],
        "speedup_engine_one_turn": med["engine batched"] / med["engine single"],
    }
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    rows = [[m.mode, f"{prompts}x{group}" if "batched" in m.mode else "1", m.episodes, m.turns, m.tokens,
             f"{m.seconds:.2f}", f"{m.tokens_per_s:,.0f}", f"{m.turns_per_s:,.1f}",
             f"{m.prompt_tokens / max(m.tokens, 1):.1f}"] for ms in runs.values() for m in ms]
    typer.echo(f"{env_id}, {model} ({policy.num_params:,} params), SFT {sft_steps} steps ({warm_s:.1f} s), "
               f"torch threads {threads}, max_new_tokens {max_new_tokens}, {context_mode} context, "
               f"prefix cache {'on' if prefix_cache else 'off'}")
    typer.echo(tabulate(rows, headers=["mode", "batch", "episodes", "turns", "tokens", "s", "tokens/s", "turns/s",
                                       "prompt/generated"]))
    typer.echo(f"median tokens/s, collector: batched {med['batched']:,.0f}, one at a time {med['single']:,.0f}, "
               f"speedup {summary['speedup_collector']:.1f}x; engine, one turn: batched {med['engine batched']:,.0f}, "
               f"one at a time {med['engine single']:,.0f}, speedup {summary['speedup_engine_one_turn']:.1f}x")

if __name__ == "__main__":
    typer.run(main)

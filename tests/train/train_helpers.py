"""Tiny-budget training configs for the harness tests, and a shared SFT'd FrozenLake warm start.

Every config runs with one torch thread, a 0.2M policy, a tokenizer trained on 10 expert episodes and a
few rollouts per step, so a 2-step run takes seconds. Environments other than FrozenLake get
`max_turns: 3` and 32-token responses (their observations are long)."""

from __future__ import annotations

from pathlib import Path

import torch

import agentbench_af
from agentbench_af.config import load_config
from agentbench_af.train.config import TrainConfig
from agentbench_af.train.loop import prepare_warm_start

PAPER_ENVS = ("FrozenLake-4x4-v0", "Sokoban-6x6-1box-v0", "Sudoku-4x4-10clues-v0", "WebShop-v0")
REGISTERED_PAPER_ENVS = tuple(e for e in PAPER_ENVS if e in agentbench_af.list_envs())
FROZENLAKE = "FrozenLake-4x4-v0"


def tiny_overrides(out_dir: Path | str, env_id: str = FROZENLAKE, **extra) -> list[str]:
    """`key=value` overrides of a seconds-long run; `extra` uses `__` for dots (rl__steps=4)."""
    items = {
        "env.id": env_id,
        "model.tokenizer_episodes": 10,
        "sft.steps": 2,
        "sft.batch_size": 8,
        "sft.episodes": 10,
        "rl.steps": 2,
        "rl.prompts_per_step": 2,
        "rl.warmup_steps": 1,
        "rl.lr": 1e-3,
        "rollout.group_size": 4,
        "rollout.max_new_tokens": 48,  # FrozenLake's expert responses are 39 tokens with this tokenizer
        "eval.episodes": 4,
        "eval.every": 2,
        "run.out_dir": str(out_dir),
        "run.threads": 1,
        "run.device": "cpu",
    }
    if env_id != FROZENLAKE:
        items["env.overrides"] = "{max_turns: 3}"
        items["rollout.max_new_tokens"] = 32
    items.update({k.replace("__", "."): v for k, v in extra.items()})
    return [f"{k}={v}" for k, v in items.items()]


def tiny_config(out_dir: Path | str, env_id: str = FROZENLAKE, **extra) -> TrainConfig:
    return load_config(TrainConfig, None, tiny_overrides(out_dir, env_id, **extra))


def sampled_batch(warm_start: Path, seeds: tuple[int, ...] = (1, 2), group: int = 2):
    """`(policy, batch)`: the warm start's policy and a full-context batch of its FrozenLake rollouts on
    `seeds`, `group` per seed (torch seed 0)."""
    from agentbench_af.models.policy import Policy
    from agentbench_af.rollout.collect import collect_rollouts
    from agentbench_af.rollout.engine import TransformersEngine
    from agentbench_af.rollout.to_batch import trajectories_to_batch
    from agentbench_af.rollout.types import RolloutConfig

    policy = Policy.load(warm_start)
    torch.manual_seed(0)
    trajs = collect_rollouts(TransformersEngine(policy.lm, policy.pad_token_id), policy.tokenizer, policy.chat,
                             FROZENLAKE, list(seeds), RolloutConfig(group_size=group, max_new_tokens=48))
    return policy, trajectories_to_batch(trajs, "full", policy.pad_token_id)


def frozenlake_warm_start(directory: Path) -> Path:
    """A FrozenLake policy SFT'd for 30 steps: valid on some turns, so rollout rewards vary."""
    cfg = tiny_config(directory, sft__steps=30, sft__lr=3e-3, sft__episodes=40)
    torch.set_num_threads(1)
    return prepare_warm_start(cfg, Path(directory) / "warm", torch.device("cpu"), show_progress=False)

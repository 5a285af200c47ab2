"""Tiny policies for the rollout tests, built once per process: FrozenLake's is briefly SFT'd so its
distributions depend on the context (a random-init policy is near-uniform, which would hide padding
and alignment bugs); the other paper environments use a random-init policy on their own tokenizer."""

import torch

import agentbench_af
from agentbench_af.models.policy import Policy, build_policy
from agentbench_af.train.config import EnvConfig, SFTConfig, TrainConfig
from agentbench_af.train.warm.sft import sft_warm_start

PAPER_ENVS = ("FrozenLake-4x4-v0", "Sokoban-6x6-1box-v0", "Sudoku-4x4-10clues-v0", "WebShop-v0")
REGISTERED_PAPER_ENVS = tuple(e for e in PAPER_ENVS if e in agentbench_af.list_envs())


def env_overrides(env_id: str) -> dict:
    """Variant overrides that keep episodes short on the slower environments."""
    return {} if env_id.startswith("FrozenLake") else {"max_turns": 3}


_POLICIES: dict[str, Policy] = {}


def tiny_policy(env_id: str) -> Policy:
    if env_id not in _POLICIES:
        policy = build_policy("tiny-0.2m", [env_id], vocab_size=512, tokenizer_episodes=10, seed=0)
        if env_id == "FrozenLake-4x4-v0":
            cfg = TrainConfig(
                env=EnvConfig(id=env_id),
                sft=SFTConfig(steps=30, batch_size=8, lr=3e-3, warmup_steps=2, episodes=40),
            )
            torch.manual_seed(0)
            sft_warm_start(policy.lm, policy.tokenizer, policy.chat, cfg, torch.device("cpu"))
        policy.lm.eval()
        _POLICIES[env_id] = policy
    return _POLICIES[env_id]

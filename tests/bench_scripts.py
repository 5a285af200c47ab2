"""For tests of the scripts in `benchmarks/`: puts that folder on `sys.path` (import a script by its name after
importing this module) and builds the tiny FrozenLake policy that stands in for a real model."""

from __future__ import annotations

import sys
from pathlib import Path

from agentbench_af.models.policy import Policy, build_policy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
ENV = "FrozenLake-4x4-v0"


def tiny_policy() -> Policy:
    return build_policy("tiny-0.2m", [ENV], vocab_size=512, tokenizer_episodes=10, seed=0)

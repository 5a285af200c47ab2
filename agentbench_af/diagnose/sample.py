"""Sample grouped rollouts from a policy into a scored `RolloutBatch` for the diagnostic.

    spec = SampleSpec("FrozenLake-4x4-v0", prompts=32, rollout=RolloutConfig(group_size=8), seed=0)
    batch = sample_batch(policy, spec, device="cpu", ref_lm=None, progress=bar.update)

`prompts` distinct seeds of the environment's training range (drawn with `seed`), `rollout.group_size`
rollouts each, through the training code path: `collect_rollouts`, `trajectories_to_batch`, roles as
credit counts them (`credit.credit_view` with `format_role`), then old log-probs and entropies
recomputed by the training forward pass (`models.forward.score_batch`, `rollout.max_batch_size` rows per
forward, as sampling decodes them: one forward over hundreds of long SmolLM2 rows ran out of memory). So the batch is what a training
step at this policy would see. torch is seeded with `seed`: a call repeats on one machine.

`chunk_groups` > 0 plays the groups in chunks of that many, one after another, the first chunk seeded with
`seed` and chunk i with `rollout.seeds.part_seed(seed, i)`, and hands each finished chunk to `chunks` (a
`SampledChunks`: `results.diagnose_checkpoint` keeps them on disk), so a killed call resumes at the chunk it
was playing: 384 SmolLM2 FrozenLake rollouts take hours on 2 cores. With one chunk (0, the default, or
`chunk_groups` >= `prompts`) the batch is the unchunked one; with more, each chunk draws its own random
numbers, so the batch differs from the unchunked batch of the same seed (the chunk size is part of a
diagnostic's settings). Left out: value estimates (no critic is involved).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

import agentbench_af
from agentbench_af.credit.roles import credit_view
from agentbench_af.models.forward import response_logprobs, score_batch
from agentbench_af.models.policy import Policy
from agentbench_af.rollout.batch import RolloutBatch
from agentbench_af.rollout.collect import collect_rollouts
from agentbench_af.rollout.concat import concat_batches
from agentbench_af.rollout.engine import SAMPLER_DTYPES, TransformersEngine
from agentbench_af.rollout.seeds import draw_train_seeds, part_seed
from agentbench_af.rollout.to_batch import trajectories_to_batch
from agentbench_af.rollout.types import RolloutConfig


@dataclass(frozen=True)
class SampleSpec:
    env_id: str
    prompts: int = 32  # groups: distinct seeds of the training range
    rollout: RolloutConfig = field(default_factory=RolloutConfig)  # group_size, temperature, limits
    format_role: str = "reasoning"  # where format tokens are counted (credit.format_role of a run; `credit.roles`)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    chunk_groups: int = 0  # groups played (and kept) per chunk; 0: all in one

    def __post_init__(self) -> None:
        if self.prompts < 1:
            raise ValueError(f"prompts must be >= 1, got {self.prompts}")
        if self.chunk_groups < 0:
            raise ValueError(f"chunk_groups must be >= 0 (0: one chunk), got {self.chunk_groups}")
        if self.rollout.group_size < 2:
            raise ValueError(f"group size must be >= 2 (rewards must be able to vary), got {self.rollout.group_size}")
        if self.rollout.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.rollout.temperature}")


class SampledChunks(Protocol):
    """Where finished chunks are kept: `get(i)` the kept chunk i or None, `put(i, batch)` keeps it."""

    def get(self, index: int) -> RolloutBatch | None: ...

    def put(self, index: int, batch: RolloutBatch) -> None: ...


def sample_batch(policy: Policy, spec: SampleSpec, device: torch.device | str = "cpu",
                 ref_lm: nn.Module | None = None, progress: Callable[[int], object] | None = None,
                 chunks: SampledChunks | None = None) -> RolloutBatch:
    """Grouped rollouts of `policy` (already on `device`), with old log-probs, entropies and, given
    `ref_lm`, reference log-probs. `progress(n)` is called after each turn with the turns just taken;
    `chunks` keeps each finished chunk of `spec.chunk_groups` groups and hands back those kept before."""
    env = agentbench_af.make(spec.env_id, **spec.env_kwargs)
    seeds = draw_train_seeds(env, spec.prompts, np.random.default_rng(spec.seed))
    size = spec.chunk_groups or spec.prompts
    engine = TransformersEngine(policy.lm, policy.pad_token_id, spec.rollout.max_batch_size,
                                sample_dtype=SAMPLER_DTYPES[spec.rollout.sampler_dtype])
    parts = []
    for index, start in enumerate(range(0, spec.prompts, size)):
        part = chunks.get(index) if chunks is not None else None
        if part is None:
            torch.manual_seed(part_seed(spec.seed, index))
            trajs = collect_rollouts(engine, policy.tokenizer, policy.chat, spec.env_id, seeds[start:start + size],
                                     spec.rollout, spec.env_kwargs, progress)
            batch = credit_view(trajectories_to_batch(trajs, spec.rollout.context_mode, policy.pad_token_id),
                                spec.format_role)
            part = score_batch(policy.lm, batch, spec.rollout.temperature, device, ref_lm=ref_lm,
                               max_rows=spec.rollout.max_batch_size)
            if chunks is not None:
                chunks.put(index, part)
        parts.append(part)
    return parts[0] if len(parts) == 1 else concat_batches([part.to("cpu") for part in parts], policy.pad_token_id)


def add_ref_logprobs(batch: RolloutBatch, ref_lm: nn.Module, temperature: float,
                     device: torch.device | str = "cpu") -> RolloutBatch:
    """A copy of `batch` with `ref_logprobs` (B, T) under `ref_lm` (e.g. for saved rollouts); `batch` is
    left unchanged."""
    return replace(batch, ref_logprobs=response_logprobs(ref_lm, batch, temperature, device))  # (B, T)

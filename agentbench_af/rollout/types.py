"""Rollout configuration, the generation types every engine shares (`SamplingParams`, `Generation`, the
`GenerationEngine` protocol), and the per-turn / per-trajectory records the collector produces."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from agentbench_af.config import check_choices

if TYPE_CHECKING:  # annotations only: the configuration and records do not need torch
    from torch import nn


@dataclass(frozen=True)
class RolloutConfig:
    """How rollouts are sampled (`agentbench-af config rollout --explain` prints each field's doc)."""

    #: rollouts per prompt (a GRPO group)
    group_size: int = 8
    #: full: the whole history is the context (one training sample per trajectory); window: the system prompt
    #: and the last `window_turns` turns (one sample per turn)
    context_mode: Literal["full", "window"] = "full"
    #: turns kept in the context under context_mode window
    window_turns: int = 2
    #: sampling temperature (0: greedy); old log-probs are computed at the same temperature
    temperature: float = 1.0
    #: nucleus sampling mass (1: off)
    top_p: float = 1.0
    #: the longest response of one turn, in tokens
    max_new_tokens: int = 96
    #: the longest context (prompt and response) of one turn, in tokens
    max_context_tokens: int = 2048
    #: text forced at the start of every response (e.g. "<think>"): part of the prompt, never trained on,
    #: prepended to the response text the environment sees
    prompt_prefix: str = ""
    #: the most sequences one generation call decodes at once
    max_batch_size: int = 256
    #: transformers (`rollout.engine.TransformersEngine`, the default) or vllm (a vLLM engine in the training
    #: process, `rollout.vllm_engine.VLLMEngine`; needs the vllm extra)
    engine: Literal["transformers", "vllm"] = "transformers"
    #: the transformers engine samples from a copy of the policy in this dtype, refreshed before every
    #: generation call (bfloat16: about 2x faster decoding on CPUs with AMX, far slower on CPUs without native
    #: bf16; docs/benchmarks.md). The update's precision is model.dtype; vLLM's follows model.dtype too
    sampler_dtype: Literal["float32", "bfloat16"] = "float32"
    #: vLLM's gpu_memory_utilization (on CPU: the share of RAM that must be free when it starts)
    vllm_memory_fraction: float = 0.2
    #: vLLM's KV cache size in GiB (0: 1 GiB on CPU, from the memory fraction on CUDA)
    vllm_kv_cache_gib: float = 0.0
    #: DAPO's dynamic sampling (rollout.dynamic, arXiv 2503.14476): drop the groups whose returns are all equal
    #: and collect more prompts until the step has rl.prompts_per_step groups with differing returns
    dynamic_sampling: bool = False
    #: the most collection rounds of one step under dynamic_sampling (the first included); then the step
    #: trains on the groups it kept
    dynamic_sampling_max_rounds: int = 3

    def overridden(self, sets: Sequence[str]) -> RolloutConfig:
        """A copy with `KEY=VALUE` settings applied (`rollout.` keys without the prefix); `ValueError`
        (a `ConfigError`) names a bad key or value."""
        from agentbench_af.config import apply_overrides, from_dict, to_dict

        return from_dict(RolloutConfig, apply_overrides(to_dict(self), list(sets))) if sets else self

    def __post_init__(self) -> None:
        check_choices(self, "rollout")
        for name in ("group_size", "window_turns", "max_new_tokens", "max_context_tokens", "max_batch_size",
                     "dynamic_sampling_max_rounds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"rollout.{name} must be an integer >= 1, got {value!r}")
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature) and self.temperature >= 0):
            raise ValueError(f"rollout.temperature must be a finite number >= 0 (0: greedy), got {self.temperature!r}")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise ValueError(f"rollout.top_p must be in (0, 1], got {self.top_p!r}")
        if self.max_context_tokens <= self.max_new_tokens:
            raise ValueError(f"rollout.max_context_tokens ({self.max_context_tokens}) must exceed rollout.max_new_tokens "
                             f"({self.max_new_tokens}): the prompt needs room too")
        if self.engine == "vllm" and self.sampler_dtype != "float32":
            raise ValueError("rollout.sampler_dtype applies to the transformers engine; vLLM samples in model.dtype's "
                             "precision (set model.dtype=bfloat16 instead)")
        if not (isinstance(self.vllm_memory_fraction, (int, float)) and 0 < self.vllm_memory_fraction <= 1):
            raise ValueError(f"rollout.vllm_memory_fraction must be in (0, 1], got {self.vllm_memory_fraction!r}")
        if not (isinstance(self.vllm_kv_cache_gib, (int, float)) and self.vllm_kv_cache_gib >= 0):
            raise ValueError(f"rollout.vllm_kv_cache_gib must be >= 0, got {self.vllm_kv_cache_gib!r}")


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0  # 0 means greedy
    top_p: float = 1.0
    max_new_tokens: int = 96

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError("temperature must be >= 0")
        if not 0 < self.top_p <= 1:
            raise ValueError("top_p must be in (0, 1]")
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be >= 1")


@dataclass
class Generation:
    """One sampled response: ids (cut after the first stop id, which is kept), and per-token stats."""

    token_ids: list[int]
    logprobs: list[float]
    entropies: list[float]
    finished: bool  # ended with a stop id (False: hit max_new_tokens)
    extra: dict = field(default_factory=dict)


class GenerationEngine(Protocol):
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        stop_ids: Sequence[int],
        cache_keys: Sequence[Hashable] | None = None,
    ) -> list[Generation]:
        """One response per prompt. `cache_keys`: a hint that prompt i extends the prompt and response
        of an earlier call with the same key (engines may reuse its KV cache, or ignore the hint)."""
        ...

    def clear_cache(self) -> None:
        """Forget every stored prefix (call it when the weights change)."""
        ...

    def load_weights(self, model: nn.Module) -> None:
        """Sample from `model`'s current weights from now on (e.g. after loading a checkpoint into it)."""
        ...

    def updating(self, model: nn.Module) -> AbstractContextManager[None]:
        """Wrap an optimizer update of `model`; afterwards the engine samples from the new weights."""
        ...


@dataclass
class TurnRecord:
    """One turn: the ids the policy saw, what it sampled, and what the environment answered."""

    user_message: str
    context_ids: list[int]
    response_ids: list[int]
    logprobs: list[float]
    entropies: list[float]
    roles: list[int]
    response_text: str
    reward: float = 0.0
    valid: bool = True
    effective: bool = False
    invalid_reason: str = ""
    obs_key: int = 0  # stable hash of the observation the turn acted on (GiGPO step groups)


@dataclass
class Trajectory:
    env_id: str
    seed: int
    group: int
    system_prompt: str
    turns: list[TurnRecord] = field(default_factory=list)
    success: bool = False
    terminated: bool = False
    truncated: bool = False

    @property
    def total_reward(self) -> float:
        return float(sum(t.reward for t in self.turns))

    @property
    def num_generated_tokens(self) -> int:
        return sum(len(t.response_ids) for t in self.turns)

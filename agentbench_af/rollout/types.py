"""Rollout configuration, the generation types every engine shares (`SamplingParams`, `Generation`, the
`GenerationEngine` protocol), and the per-turn / per-trajectory records the collector produces."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:  # annotations only: the configuration and records do not need torch
    from torch import nn


@dataclass(frozen=True)
class RolloutConfig:
    """How rollouts are sampled.

    `context_mode`: `full` keeps the whole history in the context (one training sample per trajectory);
    `window` keeps the system prompt and the last `window_turns` turns (one sample per turn).
    `prompt_prefix` is text forced at the start of every response (e.g. "<think>"); it is part of the
    prompt, never trained on, and is prepended to the response text the environment sees.
    `engine`: `transformers` (`rollout.engine.TransformersEngine`, the default) or `vllm` (a vLLM engine in
    the training process, `rollout.vllm_engine.VLLMEngine`; needs the `vllm` extra). `vllm_memory_fraction`
    is vLLM's `gpu_memory_utilization` (on CPU: the share of RAM that must be free when it starts);
    `vllm_kv_cache_gib` sizes its KV cache (0: 1 GiB on CPU, from the memory fraction on CUDA).
    """

    group_size: int = 8
    context_mode: Literal["full", "window"] = "full"
    window_turns: int = 2
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 96
    max_context_tokens: int = 2048
    prompt_prefix: str = ""
    max_batch_size: int = 256
    engine: Literal["transformers", "vllm"] = "transformers"
    vllm_memory_fraction: float = 0.2
    vllm_kv_cache_gib: float = 0.0

    def __post_init__(self) -> None:
        for name in ("group_size", "window_turns", "max_new_tokens", "max_context_tokens", "max_batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"rollout.{name} must be an integer >= 1, got {value!r}")
        if self.context_mode not in ("full", "window"):
            raise ValueError(f"rollout.context_mode must be 'full' or 'window', got {self.context_mode!r}")
        if not (isinstance(self.temperature, (int, float)) and math.isfinite(self.temperature) and self.temperature >= 0):
            raise ValueError(f"rollout.temperature must be a finite number >= 0 (0: greedy), got {self.temperature!r}")
        if not (isinstance(self.top_p, (int, float)) and 0 < self.top_p <= 1):
            raise ValueError(f"rollout.top_p must be in (0, 1], got {self.top_p!r}")
        if self.max_context_tokens <= self.max_new_tokens:
            raise ValueError(f"rollout.max_context_tokens ({self.max_context_tokens}) must exceed rollout.max_new_tokens "
                             f"({self.max_new_tokens}): the prompt needs room too")
        if self.engine not in ("transformers", "vllm"):
            raise ValueError(f"rollout.engine must be 'transformers' or 'vllm', got {self.engine!r}")
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

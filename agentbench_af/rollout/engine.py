"""Generation engines: a batch of prompt token ids in, sampled token ids with log-probs out.

The engine knows nothing of environments or turns (the collector drives those). `TransformersEngine`
batches prompts (sorted by length, left-padded) through `model.generate` with the KV cache, and
computes each sampled token's log-prob and the entropy of the sampling distribution from the raw
logits at the sampling temperature. A vLLM engine implements the same `GenerationEngine` protocol.
Left out: top-k sampling (FINDINGS: it silently changes the behaviour policy); with top_p < 1 the
recorded log-probs are those of the temperature-scaled distribution before the nucleus cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import torch


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
        self, prompts: Sequence[Sequence[int]], params: SamplingParams, stop_ids: Sequence[int]
    ) -> list[Generation]: ...


class TransformersEngine:
    """Batched sampling with a Hugging Face causal LM (`model.generate`, KV cache)."""

    def __init__(self, model, pad_token_id: int, max_batch_size: int = 128) -> None:
        self.model = model
        self.pad_token_id = int(pad_token_id)
        self.max_batch_size = max_batch_size

    @torch.no_grad()
    def generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams, stop_ids: Sequence[int]
    ) -> list[Generation]:
        if not prompts:
            return []
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        results: list[Generation | None] = [None] * len(prompts)
        was_training = self.model.training
        self.model.eval()
        try:
            for start in range(0, len(order), self.max_batch_size):
                chunk = order[start : start + self.max_batch_size]
                outs = self._generate_chunk([prompts[i] for i in chunk], params, stop_ids)
                for i, out in zip(chunk, outs, strict=True):
                    results[i] = out
        finally:
            self.model.train(was_training)
        return [r for r in results if r is not None]

    def _generate_chunk(
        self, prompts: list[Sequence[int]], params: SamplingParams, stop_ids: Sequence[int]
    ) -> list[Generation]:
        device = next(self.model.parameters()).device
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)  # (B, L)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)  # (B, L)
        for row, p in enumerate(prompts):
            input_ids[row, width - len(p) :] = torch.as_tensor(list(p), dtype=torch.long)
            attention[row, width - len(p) :] = 1
        greedy = params.temperature == 0
        out = self.model.generate(
            input_ids=input_ids.to(device),
            attention_mask=attention.to(device),
            do_sample=not greedy,
            temperature=None if greedy else params.temperature,
            top_k=0 if not greedy else None,
            top_p=None if greedy else params.top_p,
            max_new_tokens=params.max_new_tokens,
            eos_token_id=list(stop_ids),
            pad_token_id=self.pad_token_id,
            output_logits=True,
            return_dict_in_generate=True,
        )
        new_ids = out.sequences[:, width:].cpu()  # (B, N)
        temp = 1.0 if greedy else params.temperature
        chosen = torch.zeros(new_ids.shape, dtype=torch.float32)  # (B, N)
        entropy = torch.zeros(new_ids.shape, dtype=torch.float32)  # (B, N)
        for step, step_logits in enumerate(out.logits):  # one (B, V) tensor per step: no (B, N, V) copy
            logp = torch.log_softmax(step_logits.float() / temp, dim=-1)  # (B, V)
            ids = out.sequences[:, width + step].unsqueeze(-1)  # (B, 1)
            chosen[:, step] = logp.gather(-1, ids).squeeze(-1).cpu()
            entropy[:, step] = (-(logp.exp() * logp).sum(-1)).cpu()
        stop = torch.zeros_like(new_ids, dtype=torch.bool)
        for s in stop_ids:
            stop |= new_ids == s
        gens = []
        for row in range(new_ids.shape[0]):
            hits = stop[row].nonzero()
            n = int(hits[0]) + 1 if len(hits) else new_ids.shape[1]
            gens.append(
                Generation(
                    token_ids=new_ids[row, :n].tolist(),
                    logprobs=chosen[row, :n].tolist(),
                    entropies=entropy[row, :n].tolist(),
                    finished=bool(len(hits)),
                )
            )
        return gens

"""Generation engines: a batch of prompt token ids in, sampled token ids with log-probs out.

The engine knows nothing of environments or turns (the collector drives those). `TransformersEngine`
batches prompts (sorted by length, left-padded) with the KV cache and records each sampled token's
log-prob and the entropy of the sampling distribution at the sampling temperature. On CPU (a
preallocated `StaticCache`, `sdpa` attention) it decodes with its own loop (`rollout.sampler`: finished
rows leave the batch; one-token steps use `decode_attention`); otherwise with `model.generate`.
`rollout.vllm_engine.VLLMEngine` implements the same protocol (`rollout.types.GenerationEngine`, with
`SamplingParams` and `Generation`, which both engines import from there); `build_engine` picks one from a
`RolloutConfig` (`rollout.engine`). After every optimizer update the loop calls `engine.updating(model)`
around it (the transformers engine samples from `model` itself, so it only forgets stored prefixes).
With `sample_dtype` (`rollout.sampler_dtype=bfloat16`) it samples from a copy of `model` in that dtype,
refreshed from `model` at every call (`rollout.sampler_copy`).
With `cache_keys` (one hashable per prompt, e.g. a trajectory id), `TransformersEngine` keeps each
prompt's keys/values after generating and, on a later call with the same key, runs only the ids past
the stored prefix (`rollout.prefix_cache`); engines may ignore the keys. Identical prompts of one call
(the G rollouts of a prompt) are prefilled once.
Left out: top-k sampling (it silently changes the behaviour policy); with top_p < 1 the
recorded log-probs are those of the temperature-scaled distribution before the nucleus cut.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from agentbench_af.rollout.cache_name import cache_kwargs, returned_cache
from agentbench_af.rollout.decode_attention import NAME as DECODE_ATTENTION
from agentbench_af.rollout.decode_attention import decoding_attention
from agentbench_af.rollout.prefix_cache import (
    PrefixEntry,
    PrefixKVStore,
    cache_is_plain,
    pack_cache,
    prefill_shared_prompts,
    take_rows,
)
from agentbench_af.rollout.sampler import sample_rows, tempered
from agentbench_af.rollout.sampler_copy import low_precision_copy, refresh
from agentbench_af.rollout.types import Generation, GenerationEngine, SamplingParams

#: `rollout.sampler_dtype` -> the dtype of the transformers engine's sampling copy (None: the model itself)
SAMPLER_DTYPES: dict[str, torch.dtype | None] = {"float32": None, "bfloat16": torch.bfloat16}


def build_engine(cfg, model: nn.Module, pad_token_id: int, dtype: torch.dtype | None = None,
                 seed: int = 0) -> GenerationEngine:
    """The engine `cfg.engine` names (`cfg`: a `RolloutConfig`) for `model`; `dtype`: vLLM's (default: the model's)."""
    if cfg.engine == "vllm":
        from agentbench_af.rollout.vllm_engine import VLLMEngine

        return VLLMEngine(model, cfg.max_context_tokens, dtype, cfg.vllm_memory_fraction, cfg.vllm_kv_cache_gib, seed)
    return TransformersEngine(model, pad_token_id, cfg.max_batch_size, sample_dtype=SAMPLER_DTYPES[cfg.sampler_dtype])


class TransformersEngine:
    """Batched sampling with a Hugging Face causal LM and its KV cache (own loop on CPU, else `generate`)."""

    def __init__(
        self, model, pad_token_id: int, max_batch_size: int = 128, prefix_cache: bool = True,
        static_cache: bool | None = None, sample_dtype: torch.dtype | None = None,
    ) -> None:
        self.model = model
        # what samples: `model`, or a copy in `sample_dtype` (when that differs from the model's own)
        own = next(model.parameters()).dtype
        self.sampler: Any = model if sample_dtype in (None, own) else low_precision_copy(model, sample_dtype)
        self.pad_token_id = int(pad_token_id)
        self.max_batch_size = max_batch_size
        self.prefix_cache = prefix_cache  # False: `cache_keys` are ignored (every prompt is prefilled)
        self.static_cache = static_cache  # preallocated KV cache; None: on CPU only (measured faster there)
        self.store = PrefixKVStore()

    def clear_cache(self) -> None:
        self.store.clear()

    def load_weights(self, model: nn.Module) -> None:
        if model is not self.model:
            raise ValueError("TransformersEngine samples from the model it was built with; build a new engine")
        self.store.clear()

    @contextmanager
    def updating(self, model: nn.Module) -> Iterator[None]:
        try:
            yield
        finally:
            self.load_weights(model)

    @torch.no_grad()
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        stop_ids: Sequence[int],
        cache_keys: Sequence[Hashable] | None = None,
    ) -> list[Generation]:
        if cache_keys is not None and len(cache_keys) != len(prompts):
            raise ValueError(f"got {len(cache_keys)} cache_keys for {len(prompts)} prompts")
        keys = list(cache_keys) if cache_keys is not None and self.prefix_cache else None
        if keys is not None:
            self.store.retain(keys)
        if not prompts:
            return []
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        results: list[Generation | None] = [None] * len(prompts)
        if self.sampler is not self.model:
            refresh(self.sampler, self.model)
        was_training = self.sampler.training
        self.sampler.eval()
        try:
            with decoding_attention(self.sampler):
                for start in range(0, len(order), self.max_batch_size):
                    chunk = order[start : start + self.max_batch_size]
                    chunk_keys = [keys[i] for i in chunk] if keys is not None else None
                    outs = self._generate_chunk([prompts[i] for i in chunk], params, stop_ids, chunk_keys)
                    for i, out in zip(chunk, outs, strict=True):
                        results[i] = out
        finally:
            self.sampler.train(was_training)
        return [r for r in results if r is not None]

    def _generate_chunk(
        self,
        prompts: list[Sequence[int]],
        params: SamplingParams,
        stop_ids: Sequence[int],
        keys: list[Hashable] | None = None,
    ) -> list[Generation]:
        param = next(self.sampler.parameters())
        device = param.device
        cached = [self.store.usable_length(k, p) for k, p in zip(keys, prompts, strict=True)] if keys else [0] * len(prompts)
        entries: list[PrefixEntry | None] = [self.store.get(k) for k in keys] if keys else [None] * len(prompts)
        if self.prefix_cache:  # the G rollouts of one prompt: run its ids once
            shared = prefill_shared_prompts(self.sampler, prompts, [c > 0 for c in cached], self.pad_token_id)
            for row, entry in shared.items():
                entries[row], cached[row] = entry, len(entry.ids)
        head = max(cached)  # C: cached positions per row (left-padded)
        tail = max(len(p) - c for p, c in zip(prompts, cached, strict=True))  # N: new ids per row
        width = head + tail
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)  # (B, C + N)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)  # (B, C + N)
        for row, (p, c) in enumerate(zip(prompts, cached, strict=True)):
            ids = torch.as_tensor(list(p), dtype=torch.long)
            input_ids[row, head - c : head] = ids[:c]
            attention[row, head - c : head] = 1
            input_ids[row, width - (len(p) - c) :] = ids[c:]
            attention[row, width - (len(p) - c) :] = 1
        # On CPU a preallocated cache saves re-concatenating every layer's keys/values at every step
        static = self.static_cache if self.static_cache is not None else device.type == "cpu"
        capacity = width + params.max_new_tokens if static else None
        past = None
        if head > 0 or capacity is not None:
            past = pack_cache(entries, cached, self.sampler.config, param.dtype, device, capacity)
        if static and getattr(self.sampler.config, "_attn_implementation", None) in ("sdpa", DECODE_ATTENTION):
            return self._sample_chunk(input_ids.to(device), attention.to(device), past, params, stop_ids, prompts,
                                      cached, keys, head, width)
        greedy = params.temperature == 0
        out = self.sampler.generate(
            input_ids=input_ids.to(device),
            attention_mask=attention.to(device),
            **cache_kwargs(self.sampler, past),
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
        chosen = torch.zeros(new_ids.shape, dtype=torch.float32)  # (B, N)
        entropy = torch.zeros(new_ids.shape, dtype=torch.float32)  # (B, N)
        for step, step_logits in enumerate(out.logits):  # one (B, V) tensor per step: no (B, N, V) copy
            logp, ent = tempered(step_logits, params.temperature)  # (B, V), (B,)
            ids = out.sequences[:, width + step].unsqueeze(-1)  # (B, 1)
            chosen[:, step] = logp.gather(-1, ids).squeeze(-1).cpu()
            entropy[:, step] = ent.cpu()
        stop = torch.zeros_like(new_ids, dtype=torch.bool)
        for s in stop_ids:
            stop |= new_ids == s
        gens = []
        filled = returned_cache(out)
        store = keys is not None and cache_is_plain(filled)
        for row in range(new_ids.shape[0]):
            hits = stop[row].nonzero()
            n = int(hits[0]) + 1 if len(hits) else new_ids.shape[1]
            if store and keys is not None:
                self._store_row(keys[row], filled, row, prompts[row], cached[row], head, width, new_ids[row, :n])
            gens.append(
                Generation(
                    token_ids=new_ids[row, :n].tolist(),
                    logprobs=chosen[row, :n].tolist(),
                    entropies=entropy[row, :n].tolist(),
                    finished=bool(len(hits)),
                )
            )
        return gens

    def _sample_chunk(self, input_ids, attention, cache, params: SamplingParams, stop_ids, prompts, cached,
                      keys, head: int, width: int) -> list[Generation]:
        """`sample_rows` (finished rows leave the batch), storing each finished row's keys/values as it leaves."""
        def on_finish(row: int, cache_row: int, ids: list[int], cache) -> None:
            if keys is not None:
                self._store_row(keys[row], cache, cache_row, prompts[row], cached[row], head, width,
                                torch.as_tensor(ids, dtype=torch.long))

        rows = sample_rows(self.sampler, input_ids[:, head:], attention, cache, params.temperature, params.top_p,
                           params.max_new_tokens, stop_ids, on_finish)
        return [Generation(r.token_ids, r.logprobs, r.entropies, r.finished) for r in rows]

    def _store_row(self, key, cache, row: int, prompt, cached: int, head: int, width: int, generated) -> None:
        """Keep row `row`'s keys/values for its prompt and all but its last generated id (the last one was
        sampled, never run through the model)."""
        fed = int(generated.shape[0]) - 1
        columns = torch.cat([
            torch.arange(head - cached, head),
            torch.arange(width - (len(prompt) - cached), width),
            torch.arange(width, width + fed),
        ]).to(cache.layers[0].keys.device)  # (S,)
        keys, values = take_rows(cache, row, columns)
        self.store.put(key, PrefixEntry(list(prompt) + generated[:fed].tolist(), keys, values))

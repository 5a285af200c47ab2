"""A decoding loop over a preallocated KV cache that drops each row from the batch once it has finished.

`model.generate` keeps every row of a batch running until the last one stops, so a batch whose responses
end at different lengths pays for the finished rows too (FrozenLake, tiny-0.2m: 17 % of all row-steps).
`sample_rows` runs the prompt forward once, then one token per live row per step; when rows stop (a stop
id, or `max_new_tokens`), `on_finish` sees the cache while they are still in it (the engine copies their
keys/values for cross-turn reuse); once finished rows are a quarter of the cache's rows they are removed
from the cache, the mask and the positions (a removal copies the cache, so it is not done per row).
Sampling is by inverse CDF (`torch.rand` + `searchsorted` on the cumulative probabilities, in place of
`torch.multinomial`: docs/benchmarks.md), at temperature T with an optional nucleus cut; log-probs
and entropies are those of the temperature-scaled distribution before the cut, as in the engine.
Decoding steps pass a ready (B, 1, 1, S) boolean mask, so transformers builds no mask per step.
Left out: caches other than transformers' `StaticCache` (the engine uses `model.generate` for those),
top-k, and repetition penalties.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from agentbench_af.rollout.cache_name import cache_kwargs

COMPACT_AT = 4  # drop finished rows from the cache once they are at least 1/COMPACT_AT of its rows


@dataclass
class RowOutput:
    """One row's sampled ids (up to and including its stop id) with per-token log-prob and entropy."""

    token_ids: list[int]
    logprobs: list[float]
    entropies: list[float]
    finished: bool  # stopped on a stop id (False: reached max_new_tokens)


def tempered(logits: torch.Tensor, temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """logits (B, V) -> log-probs (B, V) and entropies (B,) at `temperature` (0, greedy: at 1)."""
    logp = torch.log_softmax(logits.float() / (temperature if temperature > 0 else 1.0), dim=-1)  # (B, V)
    return logp, -(logp.exp() * logp).sum(-1)


def draw(logits: torch.Tensor, temperature: float, top_p: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """logits (B, V) -> sampled ids (B,), their log-probs (B,) and the entropies (B,) of the temperature-scaled
    distribution; temperature 0 is greedy (log-probs and entropy then at temperature 1)."""
    logp, entropy = tempered(logits, temperature)  # (B, V), (B,)
    probs = logp.exp()  # (B, V)
    if temperature == 0:
        ids = logp.argmax(-1)  # (B,)
    else:
        if top_p < 1.0:
            probs = nucleus(probs, top_p)  # (B, V), rows renormalised
        cdf = probs.cumsum(-1)  # (B, V)
        u = torch.rand((probs.shape[0], 1), device=probs.device) * cdf[:, -1:]  # (B, 1)
        ids = torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp(max=probs.shape[-1] - 1)  # (B,)
    return ids, logp.gather(-1, ids[:, None]).squeeze(-1), entropy


def nucleus(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """(B, V) -> (B, V): keep the smallest set of most likely tokens whose mass reaches top_p, renormalised."""
    sorted_p, order = probs.sort(dim=-1, descending=True)  # (B, V)
    before = sorted_p.cumsum(-1) - sorted_p  # (B, V): mass of the more likely tokens
    kept = torch.where(before < top_p, sorted_p, torch.zeros_like(sorted_p))  # the first token is always kept
    out = torch.zeros_like(probs).scatter(-1, order, kept)  # (B, V)
    return out / out.sum(-1, keepdim=True)


def _keep_rows(cache, keep: torch.Tensor) -> None:
    """Drop the cache rows not in `keep` ((B',) long), in place."""
    for layer in cache.layers:
        layer.keys = layer.keys.index_select(0, keep)
        layer.values = layer.values.index_select(0, keep)
        layer.batch_size = int(keep.numel())


@torch.no_grad()
def sample_rows(
    model,
    input_ids: torch.Tensor,  # (B, N) new ids, left-padded; the cache already holds C positions
    attention: torch.Tensor,  # (B, C + N) 1 for real ids (cached and new), 0 for padding
    cache,  # a StaticCache holding C positions, with room for N + max_new_tokens more
    temperature: float,
    top_p: float,
    max_new_tokens: int,
    stop_ids: Sequence[int],
    on_finish: Callable[[int, int, list[int], object], None] | None = None,
) -> list[RowOutput]:
    """Sample up to `max_new_tokens` ids per row. `on_finish(row, cache_row, ids, cache)`: called for each
    finished row (its batch index, its index in the cache, its sampled ids) before it leaves the cache."""
    device = input_ids.device
    batch, width = attention.shape
    capacity = width + max_new_tokens
    mask = torch.zeros((batch, capacity), dtype=torch.bool, device=device)  # (B, S)
    mask[:, :width] = attention.bool()
    positions = attention.long().sum(-1)  # (B,): the position of each row's next id
    prompt_positions = (attention.long().cumsum(-1) - 1).clamp(min=0)[:, -input_ids.shape[1]:]  # (B, N)
    stops = torch.as_tensor(list(stop_ids), dtype=torch.long)  # (K,)
    out = model(input_ids=input_ids, attention_mask=mask.long(), position_ids=prompt_positions,
                **cache_kwargs(model, cache), use_cache=True, logits_to_keep=1)
    logits = out.logits[:, -1]  # (B, V)
    sampled = torch.zeros((batch, max_new_tokens), dtype=torch.long)  # (B, M)
    logprobs = torch.zeros((batch, max_new_tokens))  # (B, M)
    entropies = torch.zeros((batch, max_new_tokens))  # (B, M)
    lengths = [max_new_tokens] * batch
    finished = [False] * batch
    rows = torch.arange(batch)  # (B',): batch index of each cache row
    live = torch.ones(batch, dtype=torch.bool)  # (B',): rows still sampling (finished rows wait for a compaction)
    for step in range(max_new_tokens):
        ids, logp, entropy = draw(logits, temperature, top_p)  # (B',) each
        host_ids = ids.cpu()  # (B',)
        sampled[rows, step], logprobs[rows, step], entropies[rows, step] = host_ids, logp.cpu(), entropy.cpu()
        stopped = torch.isin(host_ids, stops) & live  # (B',)
        done = stopped | live if step + 1 == max_new_tokens else stopped  # (B',) rows finishing now
        for cache_row in done.nonzero().squeeze(-1).tolist():
            row = int(rows[cache_row])
            lengths[row], finished[row] = step + 1, bool(stopped[cache_row])
            if on_finish is not None:
                on_finish(row, cache_row, sampled[row, : step + 1].tolist(), cache)
        live &= ~done
        if not bool(live.any()):
            break
        if int((~live).sum()) * COMPACT_AT >= live.numel():  # copying the cache costs a few decoding steps
            keep = live.nonzero().squeeze(-1)  # (B'',)
            rows, live = rows[keep], live[keep]
            keep = keep.to(device)
            _keep_rows(cache, keep)
            ids, mask, positions = ids[keep], mask[keep], positions[keep]
        mask[:, width + step] = True  # every cache row writes its new id at this cache column
        filled = mask[:, None, None, : width + step + 1]  # (B', 1, 1, filled): the cache columns written so far
        out = model(input_ids=ids[:, None], attention_mask=filled, position_ids=positions[:, None],
                    **cache_kwargs(model, cache), use_cache=True)
        logits = out.logits[:, -1]  # (B', V)
        positions = positions + 1
    return [RowOutput(sampled[r, : lengths[r]].tolist(), logprobs[r, : lengths[r]].tolist(),
                      entropies[r, : lengths[r]].tolist(), finished[r]) for r in range(batch)]

"""Cross-turn KV reuse for the transformers engine: each trajectory's keys/values survive to its next turn.

In `full` context mode the context of turn k+1 is the context of turn k, the ids sampled at turn k and
the next user message, so its first part was already run through the model. `PrefixKVStore` keeps,
per caller-chosen key, the ids that were run and their per-layer keys/values; `pack_cache` lays the
stored prefixes of a batch out as one left-padded cache, and the new ids follow it
right-aligned, with a padding hole between the two that the attention mask hides:

    row i: [pad .. pad | cached ids of i (c_i) | pad .. pad | new ids of i (n_i)]
            `------------ C = max c_i ---------'`----------- N = max n_i -------'

Position ids come from the attention mask (transformers' generate counts real tokens), so a token keeps
the rotary position it had when its keys were computed. A stored prefix is used only when its ids equal
the start of the new prompt, so a wrong key costs a full prefill, never a wrong answer. The caller must
`clear()` the store when the model's weights change (the collector clears it before and after a run).
`prefill_shared_prompts` does the same within one batch: the G rollouts of a prompt start from the same
ids, so those are run once and the G rows share the keys/values (FrozenLake 16 x 8: a third of the
collector's prefill tokens).
Left out: sliding-window and other non-plain cache layers (their entries are not stored), and sharing
a common prefix of prompts that differ (only whole identical prompts are shared).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch
from transformers import DynamicCache, StaticCache
from transformers.cache_utils import DynamicLayer, StaticLayer

from agentbench_af.rollout.cache_name import returned_cache


@dataclass
class PrefixEntry:
    """Ids already run through the model and their keys/values, one (H, S, D) pair per layer."""

    ids: list[int]
    keys: list[torch.Tensor]  # per layer: (H, S, D)
    values: list[torch.Tensor]  # per layer: (H, S, D)


class PrefixKVStore:
    """Per-key stored prefixes; `usable_length` says how much of a new prompt an entry covers."""

    def __init__(self) -> None:
        self._entries: dict[Hashable, PrefixEntry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def retain(self, keys: Sequence[Hashable]) -> None:
        """Drop every entry whose key is not in `keys` (finished or stale trajectories)."""
        wanted = set(keys)
        for key in [k for k in self._entries if k not in wanted]:
            del self._entries[key]

    def get(self, key: Hashable) -> PrefixEntry | None:
        return self._entries.get(key)

    def put(self, key: Hashable, entry: PrefixEntry) -> None:
        self._entries[key] = entry

    def usable_length(self, key: Hashable, prompt: Sequence[int]) -> int:
        """Ids of `prompt` whose keys/values the entry holds; at least one id is always left to run."""
        entry = self._entries.get(key)
        if entry is None:
            return 0
        n = min(len(entry.ids), len(prompt) - 1)
        return n if n > 0 and list(prompt[:n]) == entry.ids[:n] else 0


def pack_cache(
    entries: Sequence[PrefixEntry | None], lengths: Sequence[int], config, dtype: torch.dtype, device,
    capacity: int | None = None,
):
    """A cache of width C = max(lengths): row i holds the first lengths[i] positions of entry i, right-aligned
    (left padding). `capacity`: a `StaticCache` of that many positions (no per-step concatenation; what the
    engine uses on CPU), else a `DynamicCache`. With C = 0 the cache is empty."""
    width = max(lengths, default=0)
    if width == 0:
        return StaticCache(config=config, max_cache_len=capacity) if capacity else DynamicCache(config=config)
    first = next(e for e, n in zip(entries, lengths, strict=True) if e is not None and n > 0)
    layers = len(first.keys)
    heads, _, dim = first.keys[0].shape
    data = []
    for layer in range(layers):
        k = torch.zeros((len(entries), heads, width, dim), dtype=dtype, device=device)  # (B, H, C, D)
        v = torch.zeros_like(k)  # (B, H, C, D)
        for row, (entry, n) in enumerate(zip(entries, lengths, strict=True)):
            if n > 0:
                assert entry is not None, "a row with cached positions needs its entry"
                k[row, :, width - n :] = entry.keys[layer][:, :n]
                v[row, :, width - n :] = entry.values[layer][:, :n]
        data.append((k, v))
    if capacity is None:
        return DynamicCache(ddp_cache_data=data, config=config)
    cache = StaticCache(config=config, max_cache_len=capacity)
    for layer, (k, v) in enumerate(data):
        cache.update(k, v, layer)
    return cache


def cache_is_plain(cache) -> bool:
    """True when every layer of `cache` keeps all positions (no sliding window, no quantisation)."""
    layers = getattr(cache, "layers", None) or ()
    return bool(layers) and all(type(layer) in (DynamicLayer, StaticLayer) for layer in layers)


def take_rows(cache, row: int, columns: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """Keys and values of batch row `row` at cache positions `columns` ((S,) long), per layer (H, S, D)."""
    keys = [layer.keys[row].index_select(1, columns).clone() for layer in cache.layers]
    values = [layer.values[row].index_select(1, columns).clone() for layer in cache.layers]
    return keys, values


@torch.no_grad()
def prefill_shared_prompts(model, prompts: Sequence[Sequence[int]], skip: Sequence[bool], pad_token_id: int) -> dict[int, PrefixEntry]:
    """Rows whose prompt occurs more than once (and `skip[row]` is False) -> an entry holding all but the last
    id of the prompt, computed once per distinct prompt; {} when no prompt repeats."""
    rows_of: dict[tuple[int, ...], list[int]] = {}
    for row, prompt in enumerate(prompts):
        if not skip[row] and len(prompt) > 1:
            rows_of.setdefault(tuple(prompt), []).append(row)
    shared = [ids for ids, rows in rows_of.items() if len(rows) > 1]
    if not shared:
        return {}
    width = max(len(ids) for ids in shared) - 1
    device = next(model.parameters()).device
    input_ids = torch.full((len(shared), width), pad_token_id, dtype=torch.long)  # (U, L) left-padded
    attention = torch.zeros((len(shared), width), dtype=torch.long)  # (U, L)
    for u, ids in enumerate(shared):
        input_ids[u, width - len(ids) + 1 :] = torch.as_tensor(ids[:-1])
        attention[u, width - len(ids) + 1 :] = 1
    positions = (attention.cumsum(-1) - 1).clamp(min=0)  # (U, L)
    out = model(input_ids=input_ids.to(device), attention_mask=attention.to(device), position_ids=positions.to(device),
                use_cache=True, logits_to_keep=1)
    cache = returned_cache(out)
    entries: dict[int, PrefixEntry] = {}
    for u, ids in enumerate(shared):
        n = len(ids) - 1
        keys = [layer.keys[u, :, width - n :].clone() for layer in cache.layers]  # per layer (H, n, D)
        values = [layer.values[u, :, width - n :].clone() for layer in cache.layers]
        entry = PrefixEntry(list(ids[:-1]), keys, values)
        for row in rows_of[ids]:
            entries[row] = entry
    return entries

"""Training forward with a shared prompt: run each distinct prompt once, then every row's continuation.

The G rollouts of a prompt share its ids up to their first generated token, and in a single-turn batch
that prompt is most of every row (FrozenLake: 146 of 194 columns). `shared_prefix_logits` runs the
distinct prefixes (the first L columns, L = the earliest generated position of the batch) once, with
the KV cache, gathers that cache back to every row (gradients flow back through the gather), and runs
the remaining columns of all rows on top of it. The logits equal a full forward's up to float
rounding; the gradients reach the prompt's keys and values through every row that attends to them.
`shared_prefix_hidden` does the same with the model's decoder (`get_decoder()`) and returns the last
hidden states instead of logits, for `models.chunked_logprobs`.
Left out: models whose cache is not a transformers `DynamicCache` with per-layer `keys`/`values` (and
models without `logits_to_keep`): the caller then runs the plain forward. With dropout, the rows of a
group share the prompt's dropout mask.
Under activation checkpointing both passes keep transformers' per-layer recomputation: their cache is a
`models.replay_cache` cache, whose write a recomputed layer can repeat (the prompt's keys and values
are kept from the first run, the continuation reads a fixed gathered past), so the loss and gradients
are those of the plain full forward up to float rounding. A transformers without that option
(`_can_checkpoint_with_cache`, older than 5.2x) drops the cache in a recomputed layer: this returns
None then, and the caller runs every row in full.
"""

from __future__ import annotations

import torch
from torch import nn

from agentbench_af.models.checkpointing import recomputes
from agentbench_af.models.replay_cache import (
    cached_states,
    keep_cache_under_checkpointing,
    replay_cache,
    supports_replay,
)
from agentbench_af.rollout.cache_name import cache_kwargs, returned_cache


def shared_prefix_length(input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         response_mask: torch.Tensor) -> tuple[int, torch.Tensor, torch.Tensor] | None:
    """(L, distinct prefixes (U, L), row -> prefix index (B,)) when some rows share their first L ids;
    None when every row has its own prefix, a row has no generated token, or L < 2."""
    has = response_mask.any(-1)  # (B,)
    if not bool(has.all()):
        return None
    length = int(response_mask.float().argmax(-1).min())  # earliest generated position
    if length < 2 or not bool(attention_mask[:, :length].all()):
        return None
    prefixes, inverse = torch.unique(input_ids[:, :length], dim=0, return_inverse=True)  # (U, L), (B,)
    if prefixes.shape[0] == input_ids.shape[0]:
        return None
    return length, prefixes, inverse


def shared_prefix_logits(lm: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         position_ids: torch.Tensor, cols: torch.Tensor,
                         response_mask: torch.Tensor) -> torch.Tensor | None:
    """(B, K, V) logits at positions `cols` (sorted; the logits predicting each generated token), or
    None when the batch has no shared prefix or the model's cache cannot be gathered by rows."""
    return _shared_prefix(lm, input_ids, attention_mask, position_ids, cols, response_mask, hidden=False)


def shared_prefix_hidden(lm: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         position_ids: torch.Tensor, cols: torch.Tensor,
                         response_mask: torch.Tensor) -> torch.Tensor | None:
    """(B, K, H) last hidden states (after the final norm) of `lm.get_decoder()` at positions `cols`, or
    None as for `shared_prefix_logits`."""
    return _shared_prefix(lm, input_ids, attention_mask, position_ids, cols, response_mask, hidden=True)


def _shared_prefix(lm: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor,
                   cols: torch.Tensor, response_mask: torch.Tensor, hidden: bool) -> torch.Tensor | None:
    """Logits (B, K, V) of `lm`, or with `hidden` last hidden states (B, K, H) of its decoder, at `cols`."""
    found = shared_prefix_length(input_ids, attention_mask, response_mask)
    if found is None:
        return None
    length, prefixes, inverse = found
    if int(cols[0]) != length - 1:  # the first kept logit is the prefix's last position
        return None
    model = lm.get_decoder() if hidden else lm  # type: ignore[operator]  # a transformers causal LM
    n = prefixes.shape[0]
    positions = torch.arange(length, device=input_ids.device).expand(n, length)  # (U, L): no padding before L
    rest = cols[1:] - length  # (K-1,) positions in the continuation
    logits = {} if hidden else {"logits_to_keep": 1}
    from transformers import PreTrainedModel

    config = lm.config if isinstance(lm, PreTrainedModel) else None
    cache = replay_cache(config) if config is not None and supports_replay() else None  # None: the old path
    if cache is not None:  # safe under activation checkpointing (models.replay_cache)
        fill = not recomputes(model)  # (the cache passed is used either way; this silences a warning)
        with keep_cache_under_checkpointing(model):
            head = model(input_ids=prefixes, attention_mask=torch.ones_like(prefixes), position_ids=positions,
                         **cache_kwargs(model, cache), use_cache=fill, **logits)
            pasts = [(k[inverse], v[inverse]) for k, v in cached_states(cache)]  # (B, heads, L, D) each
            cache = replay_cache(config, pasts)
            tail = model(input_ids=input_ids[:, length:], attention_mask=attention_mask.long(),
                         position_ids=position_ids[:, length:], **cache_kwargs(model, cache), use_cache=fill,
                         **({} if hidden else {"logits_to_keep": rest}))
    else:  # a transformers without `_can_checkpoint_with_cache`: the model's own cache, gathered by rows
        if recomputes(model):
            return None
        head = model(input_ids=prefixes, attention_mask=torch.ones_like(prefixes), position_ids=positions,
                     use_cache=True, **logits)
        cache = returned_cache(head)
        layers = getattr(cache, "layers", None)
        if not layers or not all(hasattr(layer, "keys") and hasattr(layer, "values") for layer in layers):
            return None
        for layer in layers:
            layer.keys = layer.keys[inverse]  # (B, heads, L, D)
            layer.values = layer.values[inverse]
        tail = model(input_ids=input_ids[:, length:], attention_mask=attention_mask.long(),
                     position_ids=position_ids[:, length:], **cache_kwargs(model, cache), use_cache=True,
                     **({} if hidden else {"logits_to_keep": rest}))
    if hidden:
        last = head.last_hidden_state[:, -1:]  # (U, 1, H)
        return torch.cat([last[inverse], tail.last_hidden_state[:, rest]], dim=1)  # (B, K, H)
    return torch.cat([head.logits[inverse], tail.logits], dim=1)  # (B, K, V)

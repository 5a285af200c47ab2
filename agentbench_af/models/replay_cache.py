"""A key/value cache that a recomputed (activation-checkpointed) decoder layer can run through twice.

transformers' `DynamicLayer.update` appends the new keys and values to what it holds, so a layer that
`torch.utils.checkpoint` runs again in the backward pass would append them a second time; transformers
therefore drops the cache in a checkpointed layer (`GradientCheckpointingLayer`) unless the layer class
sets `_can_checkpoint_with_cache` (meant for layers that only read it). `ReplayLayer` makes the write
safe to repeat: it holds a fixed past (the gathered prompt, or nothing) and `update` returns past + new
without growing the past, so the recomputation sees exactly the states of the first run.
`keep_cache_under_checkpointing` sets that flag on a model's layers for the duration of one forward.
Left out: sliding-window and other non-`DynamicLayer` cache layers (`replay_cache` returns None).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
from torch import nn
from transformers.cache_utils import DynamicCache, DynamicLayer

_FLAG = "_can_checkpoint_with_cache"


class ReplayLayer(DynamicLayer):
    """A `DynamicLayer` whose `update(new)` returns past + new, the same on every call. With a `past`
    ((B, heads, P, D) keys and values) `keys`/`values` stay the past (the length the causal mask reads);
    without one they are the states of the first `update` (what a prompt pass leaves for its rows)."""

    def __init__(self, past: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
        super().__init__()
        self.past = past
        if past is not None:
            self.keys, self.values = past  # (B, heads, P, D) each
            self.device = past[0].device
            self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: object,
               **kwargs: object) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, heads, P + S, D) keys and values: the past followed by the new (B, heads, S, D) states."""
        if self.past is not None:
            return torch.cat([self.past[0], key_states], dim=-2), torch.cat([self.past[1], value_states], dim=-2)
        if not self.is_initialized:  # the first run; a recomputation leaves these as they are
            self.keys, self.values = key_states, value_states
            self.device = key_states.device
            self.is_initialized = True
        return key_states, value_states


def replay_cache(config: object, pasts: Sequence[tuple[torch.Tensor, torch.Tensor]] | None = None) -> DynamicCache | None:
    """A `DynamicCache` of `ReplayLayer`s, one per decoder layer of `config`, starting from `pasts` (one
    (keys, values) pair per layer) or empty; None when the model's cache layers are not plain `DynamicLayer`s."""
    plain = DynamicCache(config=config)  # type: ignore[arg-type]  # a transformers PreTrainedConfig
    if not plain.layers or any(type(layer) is not DynamicLayer for layer in plain.layers):
        return None
    if pasts is not None and len(pasts) != len(plain.layers):
        raise ValueError(f"{len(pasts)} cached layers for a model with {len(plain.layers)}")
    cache = DynamicCache(config=config)  # type: ignore[arg-type]
    cache.layers = [ReplayLayer(None if pasts is None else pasts[i]) for i in range(len(plain.layers))]
    return cache


def cached_states(cache: DynamicCache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(keys, values) (B, heads, S, D) of each `ReplayLayer` of `cache` after a forward without a past."""
    states = []
    for layer in cache.layers:
        if not isinstance(layer, ReplayLayer) or layer.keys is None or layer.values is None:
            raise ValueError("cached_states needs a replay_cache that a forward has filled")
        states.append((layer.keys, layer.values))
    return states


def supports_replay() -> bool:
    """Whether this transformers lets a checkpointed layer keep its cache (`_can_checkpoint_with_cache`)."""
    try:
        from transformers.modeling_layers import GradientCheckpointingLayer
    except ImportError:
        return False
    return hasattr(GradientCheckpointingLayer, _FLAG)


@contextmanager
def keep_cache_under_checkpointing(model: nn.Module) -> Iterator[None]:
    """Let `model`'s checkpointed layers keep the cache passed to them (use only with `replay_cache`)."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    layers = [m for m in model.modules() if isinstance(m, GradientCheckpointingLayer)]
    for layer in layers:
        setattr(layer, _FLAG, True)
    try:
        yield
    finally:
        for layer in layers:
            delattr(layer, _FLAG)

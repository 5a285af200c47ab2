"""A copy of the policy in a lower precision that samples rollouts (`rollout.sampler_dtype`).

The copy's parameters are cast (bf16); its buffers are not, so RoPE's inverse frequencies stay fp32 as the
positions need. `refresh` copies the trained model's current parameters into it; the engine calls it before
every generation call, so the copy never lags the policy (one cast per call: small beside decoding).
Measured (docs/benchmarks.md, "bf16 on the CPU"): on a CPU with AMX a SmolLM2-shaped model decodes about
twice as fast in bf16; on a CPU without native bf16 it is far slower. The sampled distribution differs from
the trained model's by bf16 rounding (as a vLLM engine's does); the old log-probs are the trained model's
own (its scoring pass, or the update's first forward where the shortcut applies), never the copy's.

A policy with LoRA adapters gets a plain copy with each adapter merged into its base weight before the cast
(W + (alpha / r) B A in fp32, then bf16). Added unmerged in bf16, an adapter's output is rounded onto the
bf16 grid of the base output it is added to, which a small early update does not cross; merged into
weights that lie off that grid, it moves some of them across it. Measured on SmolLM2 after four LoRA SFT
steps (docs/smollm2.md): a bf16 forward of the unmerged adapters showed 53 % of the loss's fall that an fp32
forward shows, the merged weights in bf16 92-93 %.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class AdapterMerge:
    """How a sampling copy reads a model with adapters, given by the layer that owns them (`models.lora`
    registers peft's LoRA on import; this layer imports nothing above it)."""

    applies: Callable[[nn.Module], bool]  # whether a model has adapters
    plain_copy: Callable[[nn.Module], nn.Module]  # a plain copy with them merged
    parameter: Callable[[nn.Module, str], torch.Tensor]  # a parameter of that copy, read from the model


_MERGES: list[AdapterMerge] = []


def register_adapter_merge(merge: AdapterMerge) -> None:
    """Make sampling copies merge the adapters `merge` recognises (idempotent)."""
    if merge not in _MERGES:
        _MERGES.append(merge)


def _merge_for(model: nn.Module) -> AdapterMerge | None:
    return next((m for m in _MERGES if m.applies(model)), None)


def low_precision_copy(model: nn.Module, dtype: torch.dtype) -> nn.Module:
    """A frozen, eval-mode deep copy of `model` whose parameters are `dtype` (tied parameters stay tied); with
    adapters (a registered `AdapterMerge`: LoRA), a plain copy with them merged."""
    merge = _merge_for(model)
    sampler = merge.plain_copy(model) if merge else copy.deepcopy(model)
    for p in sampler.parameters():
        p.requires_grad_(False)
        p.data = p.data.to(dtype)
        p.grad = None
    return sampler.eval()


@torch.no_grad()
def refresh(sampler: nn.Module, model: nn.Module) -> None:
    """Copy `model`'s parameters into `sampler` (the same architecture, or its merged plain copy when `model`
    has adapters a registered `AdapterMerge` recognises), cast to the sampler's dtype."""
    if merge := _merge_for(model):
        for name, mine in sampler.named_parameters():
            mine.copy_(merge.parameter(model, name))
        return
    for mine, theirs in zip(sampler.parameters(), model.parameters(), strict=True):
        mine.copy_(theirs)

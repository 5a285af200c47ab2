"""Activation ("gradient") checkpointing of a policy's decoder layers (`model.gradient_checkpointing`).

`enable_checkpointing(lm)` turns on transformers' own activation checkpointing
(`activation_checkpointing_enable`, named `gradient_checkpointing_enable` before transformers 5.2x) with
torch's non-reentrant `torch.utils.checkpoint`: each decoder layer keeps only its input and is run again
in the backward pass. The tiny family is a transformers `LlamaForCausalLM`, so its blocks are covered
the same way. A model that does not support it raises `ValueError`: a run that asked for the memory
saving would otherwise run out of memory later, with no hint why.

transformers checkpoints a layer only in training mode with gradients recorded (`recomputes`), and it
drops that layer's KV cache then unless told it may keep it: the shared-prompt forward
(`models.shared_prefix`) passes a cache whose write can be repeated (`models.replay_cache`) and keeps
it, so the update's forward still runs each prompt once. Without a cache (the SFT loss, the scoring
pass) the gradients are those of the plain forward bit for bit.
"""

from __future__ import annotations

import torch
from torch import nn


def enable_checkpointing(lm: nn.Module) -> nn.Module:
    """Turn on activation checkpointing of `lm`'s decoder layers (in place; returns `lm`); `ValueError`
    when `lm` is not a transformers model that supports it."""
    if not getattr(lm, "supports_gradient_checkpointing", False):
        raise ValueError(f"model.gradient_checkpointing=true needs a transformers model that supports activation "
                         f"checkpointing; {type(lm).__name__} does not (set model.gradient_checkpointing=false)")
    kwargs = {"use_reentrant": False}
    enable = getattr(lm, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs=kwargs)
    else:  # transformers before the rename
        lm.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)  # type: ignore[operator]
    return lm


def is_checkpointing(lm: nn.Module) -> bool:
    """Whether some layer of `lm` has transformers' checkpointing flag set."""
    return any(getattr(m, "gradient_checkpointing", False) is True for m in lm.modules())


def recomputes(lm: nn.Module) -> bool:
    """Whether a forward of `lm` now runs under activation checkpointing (transformers' flag is set on some
    layer, the model is in training mode and gradients are recorded)."""
    return lm.training and torch.is_grad_enabled() and is_checkpointing(lm)

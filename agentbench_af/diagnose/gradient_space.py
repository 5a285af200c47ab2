"""The parameters the headline's per-rollout gradients are taken over, and whether they fit in memory.

    lm, space = gradient_space(policy.lm, cfg_lora, seed)   # fresh LoRA adapters, or every parameter
    check_gradient_memory(n_trainable(lm), group_size)      # ValueError with the remedy, before the work

A run that trains LoRA adapters (`model.lora_rank` > 0) measures its in-run headline over its adapters:
the warm-start snapshot over fresh ones (B = 0, so only the B matrices get a gradient: the weight
gradient seen through the random A), the final snapshot over the trained ones. `diagnose` puts fresh
adapters on the loaded policy as the run's RL does (its rank, alpha, targets and `run.seed`), so a
diagnosis of a LoRA warm start measures the space of the record's warm-start headline; on a run's
(merged) final_policy the adapters are fresh too, which the record's final snapshot's were not.
`--lora-rank` chooses the space for a model without a run config (0: every parameter).
The Gram matrices hold G flattened fp32 gradients per role and one float64 copy of a role's at a time:
`gradient_bytes`. On SmolLM2 (134.5M parameters, G = 8) that is about 16 GiB over every parameter and
about 0.6 GiB over rank-16 adapters on its seven projections (4,884,480 parameters).
Left out: streaming the Gram matrix so that full gradients of a large model fit.
"""

from __future__ import annotations

from pathlib import Path

from torch import nn

from agentbench_af.models.lora import LoraSettings, add_lora, trainable_parameters


def gradient_space(lm: nn.Module, lora: LoraSettings | None, seed: int) -> tuple[nn.Module, str]:
    """`lm` with fresh LoRA adapters (in place, seeded like the run's RL) when `lora` is given, and a
    description of the space for the report."""
    if lora is not None:
        add_lora(lm, lora, seed=seed)
    n = n_trainable(lm)
    if lora is None:
        return lm, f"every parameter ({n:,})"
    return lm, f"fresh LoRA adapters, rank {lora.rank}, alpha {lora.alpha} ({n:,} parameters)"


def n_trainable(lm: nn.Module) -> int:
    return sum(p.numel() for p in trainable_parameters(lm))


def gradient_bytes(n_params: int, group_size: int) -> int:
    """Peak bytes of one group's Gram matrices: 2 roles x G fp32 gradients + one role's float64 stack."""
    return group_size * n_params * (2 * 4 + 8)


def available_bytes() -> int | None:
    """Memory the system can still give (`MemAvailable` of /proc/meminfo); None where that is unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_gradient_memory(n_params: int, group_size: int, available: int | None = None) -> None:
    """ValueError when one group's gradients would not fit in `available` bytes (default: what the system
    has now; no check when unknown)."""
    avail = available_bytes() if available is None else available
    need = gradient_bytes(n_params, group_size)
    if avail is not None and need > avail:
        raise ValueError(f"the headline's per-rollout gradients over {n_params:,} parameters need about "
                         f"{need / 2**30:.1f} GiB for a group of {group_size}, and {avail / 2**30:.1f} GiB is "
                         f"available: measure them over LoRA adapters (--lora-rank 16) or use smaller groups "
                         f"(--group)")

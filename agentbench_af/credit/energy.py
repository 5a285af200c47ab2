"""Token energy (docs/method.md): e_t = -log p(y_t | s_t) under a scoring model, or the policy entropy at t.

`old`: the rollout policy's log-probs (free); `ref`: the reference model's (needs batch.ref_logprobs);
`entropy`: the rollout policy's entropy at the position. Zero outside the response mask.
Left out: energies from models other than the rollout and reference policies.
"""

from __future__ import annotations

import torch

from agentbench_af.rollout.batch import RolloutBatch

ENERGY_SOURCES = ("old", "ref", "entropy")


def token_energy(batch: RolloutBatch, source: str) -> torch.Tensor:
    """(B, T) energy of every generated token, 0 elsewhere."""
    if source == "old":
        energy = -batch.old_logprobs
    elif source == "ref":
        if batch.ref_logprobs is None:
            raise ValueError("energy_source 'ref' needs batch.ref_logprobs (a reference model), got None")
        energy = -batch.ref_logprobs
    elif source == "entropy":
        energy = batch.entropy
    else:
        raise ValueError(f"unknown energy_source {source!r}; expected one of {', '.join(ENERGY_SOURCES)}")
    energy = energy.float()  # (B, T)
    return torch.where(batch.response_mask, energy, torch.zeros_like(energy)).detach()

"""Log-probs of chosen tokens and entropies from the last hidden states, a chunk of tokens at a time.

A causal LM's logits are one float per token and vocabulary entry. For SmolLM2 (V = 49,152) an 8 x 8
GRPO batch with 48 generated tokens per row has 3,072 of them: 604 MB of fp32 logits, and the
log-softmax, its exp and the entropy's product were three more tensors of that size (and, in the
update, as many gradients). `chunked_token_stats` projects `chunk` hidden states at a time with the
model's output embedding and keeps only each token's log-prob and entropy. Under autograd each chunk
runs inside `torch.utils.checkpoint` (non-reentrant), which keeps the chunk's hidden states and
recomputes its logits in the backward pass, so at most one chunk's (chunk, V) tensors exist at once,
forward or backward. The price is one more output projection per chunk in the backward pass.
`logit_stats` is the formula itself; `models.forward.token_stats` uses it on the whole (B, K, V)
tensor when that is small.
"""

from __future__ import annotations

from functools import partial

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


def logit_stats(logits: torch.Tensor, targets: torch.Tensor, temperature: float, with_entropy: bool = True,
                entropy_grad: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log softmax(logits / temperature) at `targets` (...,) and the entropy of that distribution (...,)
    or None, from float `logits` (..., V). `entropy_grad=False`: the entropy carries no gradient."""
    if temperature > 0 and temperature != 1.0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)  # (..., V)
    chosen = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (...,)
    entropy = None
    if with_entropy:
        with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
            entropy = -(logp_all.exp() * logp_all).sum(-1)  # (...,)
    return chosen, entropy


def _chunk_stats(head: nn.Module, targets: torch.Tensor, temperature: float, with_entropy: bool, entropy_grad: bool,
                 hidden: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """(log-probs (n,), entropies (n,)) or (log-probs,) of one chunk of hidden states (n, H)."""
    chosen, entropy = logit_stats(head(hidden).float(), targets, temperature, with_entropy, entropy_grad)  # (n,) each
    return (chosen,) if entropy is None else (chosen, entropy)


def chunked_token_stats(
    hidden: torch.Tensor,  # (N, H): the hidden state that predicts each token
    head: nn.Module,  # the output embedding: (n, H) -> (n, V)
    targets: torch.Tensor,  # (N,) the token ids
    temperature: float = 1.0,
    with_entropy: bool = True,
    entropy_grad: bool = True,
    chunk: int = 512,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs (N,) of `targets` and entropies (N,) or None, `chunk` tokens at a time (see the module
    docstring); equal to `logit_stats(head(hidden).float(), targets, ...)` up to float rounding."""
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    if hidden.shape[0] != targets.shape[0]:
        raise ValueError(f"{hidden.shape[0]} hidden states for {targets.shape[0]} targets")
    grad = torch.is_grad_enabled() and (hidden.requires_grad or any(p.requires_grad for p in head.parameters()))
    pieces: list[tuple[torch.Tensor, ...]] = []
    for start in range(0, hidden.shape[0], chunk):
        run = partial(_chunk_stats, head, targets[start:start + chunk], temperature, with_entropy, entropy_grad)
        h = hidden[start:start + chunk]  # (n, H)
        pieces.append(checkpoint(run, h, use_reentrant=False, preserve_rng_state=False) if grad else run(h))
    if not pieces:
        empty = hidden.new_zeros(0, dtype=torch.float32)
        return empty, (empty if with_entropy else None)
    chosen = torch.cat([p[0] for p in pieces])  # (N,)
    return chosen, (torch.cat([p[1] for p in pieces]) if with_entropy else None)

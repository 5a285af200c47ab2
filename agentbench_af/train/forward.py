"""Per-token statistics of a causal LM on a padded batch: log-probs, entropy, values.

Token-aligned like `RolloutBatch`: position t holds the log-prob of input_ids[:, t] given the tokens
before it (position 0 holds 0). Logits are divided by the rollout temperature so that the ratio
pi / pi_old compares the same distributions the tokens were sampled from.
"""

from __future__ import annotations

import torch
from torch import nn


def token_stats(
    lm: nn.Module,
    input_ids: torch.Tensor,  # (B, T)
    attention_mask: torch.Tensor,  # (B, T)
    temperature: float = 1.0,
    value_head: nn.Module | None = None,
    with_entropy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Returns log-probs (B, T), entropy (B, T) or None, values (B, T) or None."""
    mask = attention_mask.long()
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)  # (B, T); right padding keeps positions 0..n-1
    out = lm(
        input_ids=input_ids,
        attention_mask=mask,
        position_ids=position_ids,
        output_hidden_states=value_head is not None,
        use_cache=False,
    )
    logits = out.logits[:, :-1].float()  # (B, T-1, V): predicts tokens 1..T-1
    if temperature > 0 and temperature != 1.0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)  # (B, T-1, V)
    chosen = logp_all.gather(-1, input_ids[:, 1:].unsqueeze(-1)).squeeze(-1)  # (B, T-1)
    logprobs = torch.nn.functional.pad(chosen, (1, 0))  # (B, T)
    entropy = None
    if with_entropy:
        ent = -(logp_all.exp() * logp_all).sum(-1)  # (B, T-1)
        entropy = torch.nn.functional.pad(ent, (1, 0))  # (B, T)
    values = None
    if value_head is not None:
        hidden = out.hidden_states[-1]  # (B, T, H)
        # the value of generating token t is read at the position that predicts it (t - 1)
        v = value_head(hidden[:, :-1].float()).squeeze(-1)  # (B, T-1)
        values = torch.nn.functional.pad(v, (1, 0))  # (B, T)
    return logprobs, entropy, values

"""Per-token statistics of a causal LM on a padded batch: log-probs, entropy, values.

Token-aligned like `RolloutBatch`: position t holds the log-prob of input_ids[:, t] given the tokens
before it (position 0 holds 0). Logits are divided by the rollout temperature so that the ratio
pi / pi_old compares the same distributions the tokens were sampled from. `score_batch` returns a
sampled batch with its old log-probs (and values, reference log-probs) from this forward pass.
Left out: recomputing the entropies (the batch keeps the engine's, taken at sampling time).
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from agentbench_af.rollout.batch import RolloutBatch


def token_stats(
    lm: nn.Module,
    input_ids: torch.Tensor,  # (B, T)
    attention_mask: torch.Tensor,  # (B, T)
    temperature: float = 1.0,
    value_head: nn.Module | None = None,
    with_entropy: bool = True,
    detach_value_input: bool = False,
    entropy_grad: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Returns log-probs (B, T), entropy (B, T) or None, values (B, T) or None. `detach_value_input`: the
    value head reads a detached hidden state, so a value loss trains the head and not the trunk.
    `entropy_grad=False`: the entropy is a metric only (no graph, two fewer (B, T, V) tensors kept)."""
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
        with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
            ent = -(logp_all.exp() * logp_all).sum(-1)  # (B, T-1)
        entropy = torch.nn.functional.pad(ent, (1, 0))  # (B, T)
    values = None
    if value_head is not None:
        hidden = out.hidden_states[-1]  # (B, T, H)
        if detach_value_input:
            hidden = hidden.detach()
        # the value of generating token t is read at the position that predicts it (t - 1)
        v = value_head(hidden[:, :-1].float()).squeeze(-1)  # (B, T-1)
        values = torch.nn.functional.pad(v, (1, 0))  # (B, T)
    return logprobs, entropy, values


@torch.no_grad()
def response_logprobs(lm: nn.Module, batch: RolloutBatch, temperature: float,
                      device: torch.device | str) -> torch.Tensor:
    """(B, T) log-prob under `lm` of every generated token of `batch` (0 elsewhere), on CPU."""
    b = batch.to(device)
    logprobs, _, _ = token_stats(lm, b.input_ids, b.attention_mask, max(temperature, 1e-6), with_entropy=False)
    return (logprobs * b.response_mask).cpu()  # (B, T)


@torch.no_grad()
def score_batch(
    lm: nn.Module,
    batch: RolloutBatch,
    temperature: float,
    device: torch.device | str,
    value_head: nn.Module | None = None,
    ref_lm: nn.Module | None = None,
    critic: nn.Module | None = None,
) -> RolloutBatch:
    """A copy of `batch` whose `old_logprobs` come from the training forward pass (the same numerics as
    the update), with `values` (from a value head on the policy, or a separate `critic` network mapping
    (input_ids, attention_mask) -> (B, T) values) and `ref_logprobs` (from a reference model) when given;
    the new tensors are on CPU, `batch` itself is left unchanged."""
    b = batch.to(device)
    old_lp, _, values = token_stats(lm, b.input_ids, b.attention_mask, max(temperature, 1e-6),
                                    value_head=value_head, with_entropy=False)  # (B, T), (B, T) or None
    if critic is not None:
        values = critic(b.input_ids, b.attention_mask)  # (B, T)
    updates = {"old_logprobs": (old_lp * b.response_mask).cpu()}  # (B, T)
    if values is not None:
        updates["values"] = (values * b.response_mask).cpu()  # (B, T)
    if ref_lm is not None:
        updates["ref_logprobs"] = response_logprobs(ref_lm, batch, temperature, device)  # (B, T)
    return replace(batch, **updates)

"""Per-token statistics of a causal LM on a padded batch: log-probs, entropy, values.

Token-aligned like `RolloutBatch`: position t holds the log-prob of input_ids[:, t] given the tokens
before it (position 0 holds 0). Logits are divided by the rollout temperature so that the ratio
pi / pi_old compares the same distributions the tokens were sampled from. `score_batch` returns a
sampled batch with its old log-probs and entropies (and values, reference log-probs) from this forward
pass, so nothing downstream depends on the generation engine's numerics; `logprob_mismatch` measures how
far the engine's log-probs were from the trainer's (the rollout/trainer mismatch).
With `response_mask`, the logits are computed only at the positions that predict a generated token of
some row (the model's `logits_to_keep`, where it has one): a single-turn batch is mostly prompt, and
the (B, T, V) logits, log-softmax and entropy at prompt positions were a quarter of the update's forward
and backward (docs/benchmarks.md). Log-probs and entropies are then 0 at the other positions.
Left out: importance-sampling corrections for that mismatch (the loss uses the trainer's log-probs).
"""

from __future__ import annotations

import inspect
from dataclasses import replace

import torch
from torch import nn

from agentbench_af.models.shared_prefix import shared_prefix_logits
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
    response_mask: torch.Tensor | None = None,  # (B, T)
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """Returns log-probs (B, T), entropy (B, T) or None, values (B, T) or None. `detach_value_input`: the
    value head reads a detached hidden state, so a value loss trains the head and not the trunk.
    `entropy_grad=False`: the entropy is a metric only (no graph, two fewer (B, T, V) tensors kept).
    `response_mask`: log-probs and entropies only where it is set in some row of the column."""
    mask = attention_mask.long()
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)  # (B, T); right padding keeps positions 0..n-1
    cols = _logit_columns(lm, response_mask)  # (K,) or None: every position
    shared = None
    if cols is not None and response_mask is not None and value_head is None and cols.numel():
        shared = shared_prefix_logits(lm, input_ids, mask, position_ids, cols, response_mask)  # (B, K, V) or None
    if shared is not None:
        out = None
        logits = shared.float()  # (B, K, V)
    else:
        out = lm(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=position_ids,
            output_hidden_states=value_head is not None,
            use_cache=False,
            **({} if cols is None else {"logits_to_keep": cols}),
        )
        logits = (out.logits[:, :-1] if cols is None else out.logits).float()  # (B, T-1 or K, V)
    targets = input_ids[:, 1:] if cols is None else input_ids[:, cols + 1]  # (B, T-1 or K)
    if temperature > 0 and temperature != 1.0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)  # (B, K, V)
    chosen = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (B, K)
    logprobs = _place(chosen, cols, input_ids.shape[1])  # (B, T)
    entropy = None
    if with_entropy:
        with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):
            ent = -(logp_all.exp() * logp_all).sum(-1)  # (B, K)
        entropy = _place(ent, cols, input_ids.shape[1])  # (B, T)
    values = None
    if value_head is not None:
        assert out is not None  # a value head turns the shared-prefix path off
        hidden = out.hidden_states[-1]  # (B, T, H)
        if detach_value_input:
            hidden = hidden.detach()
        # the value of generating token t is read at the position that predicts it (t - 1)
        v = value_head(hidden[:, :-1].float()).squeeze(-1)  # (B, T-1)
        values = torch.nn.functional.pad(v, (1, 0))  # (B, T)
    return logprobs, entropy, values


def _logit_columns(lm: nn.Module, response_mask: torch.Tensor | None) -> torch.Tensor | None:
    """(K,) positions t whose logits predict a generated token (t + 1 in `response_mask`) of some row;
    None (every position) without a mask or when the model's forward has no `logits_to_keep`."""
    if response_mask is None or "logits_to_keep" not in inspect.signature(lm.forward).parameters:
        return None
    return response_mask[:, 1:].any(0).nonzero().squeeze(-1)  # (K,)


def _place(values: torch.Tensor, cols: torch.Tensor | None, width: int) -> torch.Tensor:
    """(B, K) values predicting the tokens at cols + 1 (None: at 1..T-1) -> (B, T), 0 elsewhere."""
    if cols is None:
        return torch.nn.functional.pad(values, (1, 0))  # (B, T)
    out = values.new_zeros((values.shape[0], width))  # (B, T)
    return out.index_copy(1, cols + 1, values)


@torch.no_grad()
def response_logprobs(lm: nn.Module, batch: RolloutBatch, temperature: float,
                      device: torch.device | str) -> torch.Tensor:
    """(B, T) log-prob under `lm` of every generated token of `batch` (0 elsewhere), on CPU."""
    b = batch.to(device)
    logprobs, _, _ = token_stats(lm, b.input_ids, b.attention_mask, max(temperature, 1e-6), with_entropy=False,
                                 response_mask=b.response_mask)
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
    """A copy of `batch` whose `old_logprobs` and `entropy` come from the training forward pass (the same
    numerics as the update), with `values` (from a value head on the policy, or a separate `critic` network
    mapping (input_ids, attention_mask) -> (B, T) values) and `ref_logprobs` (from a reference model) when
    given; the new tensors are on CPU, `batch` itself is left unchanged."""
    b = batch.to(device)
    old_lp, entropy, values = token_stats(lm, b.input_ids, b.attention_mask, max(temperature, 1e-6),
                                          value_head=value_head,
                                          response_mask=b.response_mask)  # (B, T), (B, T), (B, T) or None
    assert entropy is not None  # token_stats computes it unless with_entropy=False
    if critic is not None:
        values = critic(b.input_ids, b.attention_mask)  # (B, T)
    updates = {"old_logprobs": (old_lp * b.response_mask).cpu(), "entropy": (entropy * b.response_mask).cpu()}  # (B, T) each
    if values is not None:
        updates["values"] = (values * b.response_mask).cpu()  # (B, T)
    if ref_lm is not None:
        updates["ref_logprobs"] = response_logprobs(ref_lm, batch, temperature, device)  # (B, T)
    return replace(batch, **updates)


def logprob_mismatch(engine_logprobs: torch.Tensor, trainer_logprobs: torch.Tensor, response_mask: torch.Tensor) -> float:
    """max |engine log-prob - trainer log-prob| over generated tokens ((B, T) each; 0.0 when none)."""
    gap = (engine_logprobs.float() - trainer_logprobs.float()).abs()[response_mask.bool()]  # (N,)
    return float(gap.max()) if gap.numel() else 0.0

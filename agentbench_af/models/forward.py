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
When those (B, K, V) fp32 logits would take more than `LOGITS_BYTES` (a large vocabulary: SmolLM2's
49,152 entries), the model's decoder gives the last hidden states instead, only the N hidden states
that predict a generated token are kept, and `models.chunked_logprobs` projects them `CHUNK_BYTES`
of logits at a time (recomputed in the backward pass): memory proportional to the generated tokens,
and log-probs and entropies exactly 0 at every other position. Below that size the one-tensor
computation runs as before, bit for bit (no tiny-family batch of the CPU presets reaches it: 64 rows
x 2,047 columns x 512 entries is just under it).
`generated_logprobs` is the SFT loss's forward: the one-tensor path over every position while its logits
are small (as before, bit for bit), the masked (chunked when large) path above `LOGITS_BYTES`.
The chunked path needs an unwrapped transformers model (a DDP or FSDP2 wrapper runs the one tensor).
Under activation checkpointing (`model.gradient_checkpointing`) the shared-prefix forward runs too
(`models.replay_cache`), except on a transformers that drops the cache in a recomputed layer.
Left out: importance-sampling corrections for that mismatch (the loss uses the trainer's log-probs).
"""

from __future__ import annotations

import inspect
from dataclasses import replace

import torch
from torch import nn

from agentbench_af.models.chunked_logprobs import chunked_token_stats, logit_stats
from agentbench_af.models.shared_prefix import shared_prefix_hidden, shared_prefix_logits
from agentbench_af.rollout.batch import RolloutBatch

#: the largest (B, K, V) fp32 logits tensor computed in one piece; above it, the chunked path
LOGITS_BYTES = 256 * 2**20
#: the fp32 logits of one chunk of the chunked path (SmolLM2: 341 tokens)
CHUNK_BYTES = 64 * 2**20


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
    share = value_head is None
    if cols is not None and response_mask is not None and _chunked(lm, input_ids.shape[0], cols.numel()):
        return _chunked_stats(lm, input_ids, mask, position_ids, cols, response_mask, temperature, value_head,
                              with_entropy, detach_value_input, entropy_grad, share)
    shared = None
    if cols is not None and response_mask is not None and share and cols.numel():
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
    chosen, ent = logit_stats(logits, targets, temperature, with_entropy, entropy_grad)  # (B, K) each
    logprobs = _place(chosen, cols, input_ids.shape[1])  # (B, T)
    entropy = None if ent is None else _place(ent, cols, input_ids.shape[1])  # (B, T)
    values = None
    if value_head is not None:
        assert out is not None  # a value head turns the shared-prefix path off
        values = _values(value_head, out.hidden_states[-1], detach_value_input)  # (B, T)
    return logprobs, entropy, values


def generated_logprobs(
    lm: nn.Module,
    input_ids: torch.Tensor,  # (B, T)
    attention_mask: torch.Tensor,  # (B, T)
    response_mask: torch.Tensor,  # (B, T)
) -> torch.Tensor:
    """(B, T) log-probs at temperature 1 of every token (with gradients), exact at the generated tokens of
    `response_mask` (the SFT loss reads only those). Below `LOGITS_BYTES` of (B, T-1, V) fp32 logits, the
    one-tensor forward over every position, bit for bit as before; above it, only the positions that
    predict a generated token are projected (`token_stats` with the mask: the chunked path when those
    logits are still large), and the other positions hold 0."""
    large = _chunked(lm, input_ids.shape[0], max(input_ids.shape[1] - 1, 0))
    logprobs, _, _ = token_stats(lm, input_ids, attention_mask, with_entropy=False,
                                 response_mask=response_mask if large else None)  # (B, T)
    return logprobs


def _values(value_head: nn.Module, hidden: torch.Tensor, detach: bool) -> torch.Tensor:
    """(B, T) values from the last hidden states (B, T, H): the value of generating token t is read at the
    position that predicts it (t - 1); position 0 holds 0."""
    if detach:
        hidden = hidden.detach()
    v = value_head(hidden[:, :-1].float()).squeeze(-1)  # (B, T-1)
    return torch.nn.functional.pad(v, (1, 0))  # (B, T)


def logits_bytes(rows: int, columns: int, vocab: int) -> int:
    """The size of (rows, columns, vocab) fp32 logits."""
    return rows * columns * vocab * 4


def _chunked(lm: nn.Module, rows: int, columns: int) -> bool:
    """Whether `token_stats` takes the chunked path: an unwrapped transformers causal LM whose (rows,
    columns, V) fp32 logits would exceed `LOGITS_BYTES`."""
    from transformers import PreTrainedModel

    if not isinstance(lm, PreTrainedModel) or _is_fsdp(lm):
        return False
    head = lm.get_output_embeddings()
    weight = getattr(head, "weight", None)
    return weight is not None and logits_bytes(rows, columns, int(weight.shape[0])) > LOGITS_BYTES


def _is_fsdp(lm: nn.Module) -> bool:
    try:
        from torch.distributed.fsdp import FSDPModule
    except ImportError:  # a torch built without distributed
        return False
    return isinstance(lm, FSDPModule)


def _chunked_stats(lm: nn.Module, input_ids: torch.Tensor, mask: torch.Tensor, position_ids: torch.Tensor,
                   cols: torch.Tensor, response_mask: torch.Tensor, temperature: float, value_head: nn.Module | None,
                   with_entropy: bool, detach_value_input: bool, entropy_grad: bool,
                   share: bool) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
    """`token_stats` from the N hidden states that predict a generated token, projected in chunks."""
    predicts = response_mask[:, 1:].bool()  # (B, T-1): position t predicts generated token t + 1
    hidden = None
    picked = None
    if share:
        at_cols = shared_prefix_hidden(lm, input_ids, mask, position_ids, cols, response_mask)  # (B, K, H) or None
        if at_cols is not None:
            picked = at_cols[predicts[:, cols]]  # (N, H), row-major like predicts
    if picked is None:
        decoder = lm.get_decoder()  # type: ignore[operator]  # a transformers PreTrainedModel (`_chunked`)
        hidden = decoder(input_ids=input_ids, attention_mask=mask, position_ids=position_ids,
                         use_cache=False).last_hidden_state  # (B, T, H)
        picked = hidden[:, :-1][predicts]  # (N, H)
    head = lm.get_output_embeddings()  # type: ignore[operator]
    chunk = max(1, CHUNK_BYTES // (4 * int(head.weight.shape[0])))
    chosen, ent = chunked_token_stats(picked, head, input_ids[:, 1:][predicts], temperature, with_entropy,
                                      entropy_grad, chunk)  # (N,) each
    values = None
    if value_head is not None:
        assert hidden is not None  # a value head turns the shared-prefix path off
        values = _values(value_head, hidden, detach_value_input)  # (B, T)
    return (_scatter(chosen, predicts), None if ent is None else _scatter(ent, predicts), values)


def _scatter(values: torch.Tensor, predicts: torch.Tensor) -> torch.Tensor:
    """(N,) values of the positions set in `predicts` (B, T-1), row-major -> (B, T) at the predicted
    tokens (one column later), 0 elsewhere."""
    out = values.new_zeros(predicts.shape).masked_scatter(predicts, values)  # (B, T-1)
    return torch.nn.functional.pad(out, (1, 0))  # (B, T)


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
    max_rows: int | None = None,
) -> RolloutBatch:
    """A copy of `batch` whose `old_logprobs` and `entropy` come from the training forward pass (the same
    numerics as the update), with `values` (from a value head on the policy, or a separate `critic` network
    mapping (input_ids, attention_mask) -> (B, T) values) and `ref_logprobs` (from a reference model) when
    given; the new tensors are on CPU, `batch` itself is left unchanged. `max_rows`: at most that many rows
    per forward, each chunk cropped to its own longest row (the activations of a forward grow with its rows
    x columns; None: every row in one forward, as the update's scoring pass)."""
    if max_rows is not None and max_rows < 1:
        raise ValueError(f"max_rows must be >= 1 or None, got {max_rows}")
    if max_rows is None or batch.batch_size <= max_rows:
        return _score_rows(lm, batch, temperature, device, value_head, ref_lm, critic)
    parts = [(rows, _score_rows(lm, batch.select(rows).crop(), temperature, device, value_head, ref_lm, critic))
             for rows in torch.arange(batch.batch_size).split(max_rows)]
    updates: dict[str, torch.Tensor] = {}
    for name in ("old_logprobs", "entropy", "values", "ref_logprobs"):
        if getattr(parts[0][1], name) is None:
            continue
        full = torch.zeros(batch.input_ids.shape, dtype=getattr(parts[0][1], name).dtype)  # (B, T)
        for rows, part in parts:
            chunk = getattr(part, name)  # (b, t): t <= T, padding beyond
            full[rows, :chunk.shape[1]] = chunk
        updates[name] = full
    return replace(batch, **updates)


def _score_rows(lm: nn.Module, batch: RolloutBatch, temperature: float, device: torch.device | str,
                value_head: nn.Module | None, ref_lm: nn.Module | None, critic: nn.Module | None) -> RolloutBatch:
    """`score_batch` in one forward over every row."""
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

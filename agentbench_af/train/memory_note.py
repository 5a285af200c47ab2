"""A note, before RL starts, when one no-grad forward over a step's rows would hold many GiB of logits.

With `rl.micro_batch_rows=0` the scoring pass (and the warm start's diagnostic batch) runs every row of a
step through one forward, whose fp32 logits take rows x tokens x vocabulary x 4 bytes. A 135M model with a
49,152-entry vocabulary reaches tens of GiB on 64 rows of 2,048 tokens and the kernel stops the process; a
tiny policy's 512 entries stay under 1 GiB. The estimate is an upper bound: rows are counted at
`rollout.max_context_tokens`.
"""

from __future__ import annotations

from agentbench_af.models.forward import logits_bytes
from agentbench_af.train.config import TrainConfig

#: the upper bound on one forward's logits above which the note is written
NOTE_ABOVE_BYTES = 4 * 2**30
#: what the suggested `rl.micro_batch_rows` keeps one forward's logits under
TARGET_BYTES = 2 * 2**30


def logits_memory_note(cfg: TrainConfig, vocab: int) -> str | None:
    """One line naming the estimate and a `rl.micro_batch_rows` that bounds it, or None when no note is due
    (micro-batches already set, or the estimate under `NOTE_ABOVE_BYTES`)."""
    if cfg.rl.micro_batch_rows:
        return None
    rows = cfg.rl.prompts_per_step * cfg.rollout.group_size
    tokens = cfg.rollout.max_context_tokens
    total = logits_bytes(rows, tokens, vocab)
    if total <= NOTE_ABOVE_BYTES:
        return None
    fit = max(1, TARGET_BYTES // logits_bytes(1, tokens, vocab))
    suggested = 1 << (int(fit).bit_length() - 1)  # the largest power of two that fits
    return (f"note: one forward over a step's {rows} rows of up to {tokens} tokens holds up to "
            f"{total / 2**30:.1f} GiB of fp32 logits (vocabulary {vocab:,}); set rl.micro_batch_rows={suggested} "
            "to bound each forward (gradient accumulation: the same step up to float rounding)")


def vocab_of(lm) -> int:
    """The output vocabulary of a causal LM (rows of its output embedding; a LoRA wrapper passes it on)."""
    return int(lm.get_output_embeddings().weight.shape[0])

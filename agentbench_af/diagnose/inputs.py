"""Token texts for the diagnostic's token page: from a policy's tokenizer, or ids when none is at hand.

    tokenizer = load_tokenizer(policy_dir)       # the tokenizer saved in a policy / Hugging Face folder
    texts = token_texts(tokenizer)               # ids -> one string per token (for the token page)
Reading a run directory (its config, saved rollouts, policy) is `train.bookkeeping.saved_run`'s job.
Left out: runs of other harnesses.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def load_tokenizer(policy_dir: Path):
    """The tokenizer saved in a policy or Hugging Face model directory (offline)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(policy_dir, local_files_only=True)


def token_texts(tokenizer) -> Callable[[list[int]], list[str]]:
    """A row's ids -> the text of each token alone (decode of one id, special tokens kept)."""
    return lambda ids: [tokenizer.decode([i], skip_special_tokens=False) for i in ids]


def id_texts(ids: list[int]) -> list[str]:
    """Token strings when no tokenizer is at hand: `#<id>` per token."""
    return [f"#{i} " for i in ids]

"""The project's own tokenizer for tiny policies: byte-level BPE trained on environment text.

- `build_tokenizer(texts, vocab_size=1024) -> PreTrainedTokenizerFast`: byte-level BPE (every string
  encodes with no unknown token and decodes back losslessly), trained with the `tokenizers` library.
  Special tokens (ids 0..5): `<|pad|> <|bos|> <|eos|> <|system|> <|user|> <|assistant|>`. `<|eos|>`
  also ends every chat message, so it is the assistant's end-of-turn token. The tags `<think>`,
  `</think>`, `<answer>`, `</answer>` are added as single, NON-special tokens (they survive
  `decode(skip_special_tokens=True)`); code elsewhere must not rely on tags being one id.
- `tokenizer_for_envs(env_ids, ...)`: the same, trained on `environment_corpus(env_ids, ...)`.
- `embedding_size(tokenizer)`: largest id + 1, the row count a model's embedding needs (`len()` can be
  smaller when the id space has holes).

The chat template (Jinja, saved with the tokenizer):
`<|bos|><|system|>{system}<|eos|><|user|>{user}<|eos|><|assistant|>{response}<|eos|>...` and, with
`add_generation_prompt=True`, a final `<|assistant|>`. No BOS/EOS is added by plain `encode`.
The vocabulary size is a cap: a small corpus (FrozenLake alone) stops merging earlier (~470 ids).
Left out: normalisation (none: byte-level text is kept exactly) and a pretrained vocabulary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from agentbench_af.formats.parse import ANSWER_CLOSE, ANSWER_OPEN, THINK_CLOSE, THINK_OPEN

PAD, BOS, EOS = "<|pad|>", "<|bos|>", "<|eos|>"
SYSTEM, USER, ASSISTANT = "<|system|>", "<|user|>", "<|assistant|>"
SPECIAL_TOKENS = (PAD, BOS, EOS, SYSTEM, USER, ASSISTANT)
TAG_TOKENS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)
DEFAULT_VOCAB_SIZE = 1024
MODEL_MAX_LENGTH = 4096

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('unknown chat role: ' + message['role']) }}"
    "{% endif %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + eos_token }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)


def build_tokenizer(
    texts: Sequence[str], vocab_size: int = DEFAULT_VOCAB_SIZE, min_frequency: int = 2
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE tokenizer on `texts` (deterministic for the same texts and settings)."""
    if vocab_size < 256 + len(SPECIAL_TOKENS) + len(TAG_TOKENS):
        raise ValueError(f"vocab_size {vocab_size} is below the byte alphabet plus special tokens (266)")
    if not texts:
        raise ValueError("build_tokenizer needs at least one text")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(TAG_TOKENS),
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer)
    # tags after training: added before, they collide with the trainer's special-token ids
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in TAG_TOKENS])
    return wrap_tokenizer(tok)


def wrap_tokenizer(tok: Tokenizer) -> PreTrainedTokenizerFast:
    """Wrap a `tokenizers.Tokenizer` holding the special tokens as a transformers tokenizer."""
    missing = [t for t in SPECIAL_TOKENS if tok.token_to_id(t) is None]
    if missing:
        raise ValueError(f"the tokenizer lacks the special tokens {missing}")
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token=PAD,
        bos_token=BOS,
        eos_token=EOS,
        extra_special_tokens=[SYSTEM, USER, ASSISTANT],
        model_max_length=MODEL_MAX_LENGTH,
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tokenizer_for_envs(
    env_ids: Sequence[str],
    episodes_per_env: int = 200,
    seed: int = 0,
    vocab_size: int = DEFAULT_VOCAB_SIZE,
    env_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
) -> PreTrainedTokenizerFast:
    """`build_tokenizer` on the expert-episode corpus of `env_ids` (built with `env_kwargs[env_id]`)."""
    from agentbench_af.models.corpus import environment_corpus

    corpus = environment_corpus(env_ids, episodes_per_env, seed, env_kwargs)
    return build_tokenizer(corpus, vocab_size=vocab_size)


def embedding_size(tokenizer) -> int:
    """Rows a model's embedding needs for `tokenizer`: the largest id + 1."""
    return max(tokenizer.get_vocab().values()) + 1

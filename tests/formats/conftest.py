"""Two tokenizers built here from FrozenLake text: ours (byte-level BPE, tags as single tokens) and a
SentencePiece-like Unigram with byte fallback and a ChatML template (tags split over several pieces,
Llama-style leading-space handling), standing in for a Hugging Face model's tokenizer."""

from __future__ import annotations

import json

import pytest
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from agentbench_af.models.corpus import environment_corpus
from agentbench_af.models.tokenizer import build_tokenizer

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are helpful.<|im_end|>\n{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
CHATML_SPECIALS = ["<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def build_chatml_unigram(texts: list[str]) -> PreTrainedTokenizerFast:
    """Unigram (pieces of at most 4 characters, so tags are split) + 256 byte-fallback pieces."""
    base = Tokenizer(models.Unigram())
    base.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    trainer = trainers.UnigramTrainer(
        vocab_size=300, special_tokens=CHATML_SPECIALS, unk_token="<unk>", show_progress=False, max_piece_length=4
    )
    base.train_from_iterator(texts, trainer)
    vocab = [tuple(v) for v in json.loads(base.to_str())["model"]["vocab"]]
    have = {piece for piece, _ in vocab}
    vocab += [(f"<0x{b:02X}>", -30.0) for b in range(256) if f"<0x{b:02X}>" not in have]
    tok = Tokenizer(models.Unigram(vocab, unk_id=0, byte_fallback=True))
    tok.pre_tokenizer = base.pre_tokenizer
    tok.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in CHATML_SPECIALS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<|endoftext|>", eos_token="<|im_end|>",
        extra_special_tokens=["<|im_start|>"], clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHATML_TEMPLATE
    return fast


@pytest.fixture(scope="session")
def corpus() -> list[str]:
    return environment_corpus(["FrozenLake-4x4-v0"], episodes_per_env=60, seed=0)


@pytest.fixture(scope="session")
def ours(corpus) -> PreTrainedTokenizerFast:
    return build_tokenizer(corpus)


@pytest.fixture(scope="session")
def chatml(corpus) -> PreTrainedTokenizerFast:
    return build_chatml_unigram(corpus)


@pytest.fixture(scope="session", params=["ours", "chatml"])
def any_tokenizer(request, ours, chatml) -> PreTrainedTokenizerFast:
    return {"ours": ours, "chatml": chatml}[request.param]

"""A small random-weight Qwen2 model with a ChatML tokenizer, made locally: the paper preset's path
(Qwen2.5-Instruct) exercised end to end without downloading anything.

- `chatml_tokenizer(texts, vocab_size=512, pad_to=None)`: a byte-level BPE trained on `texts` (e.g. the
  environments' text, `models.corpus.environment_corpus`), its vocabulary filled with unused entries
  `<|unused_i|>` up to `pad_to` ids when given (151,936 is Qwen2.5's embedding: the model then has Qwen's
  size, and every id it samples decodes; no merge produces them), with Qwen's special tokens `<|endoftext|>` (padding),
  `<|im_start|>` and `<|im_end|>` (end of every message, the assistant's end-of-turn token and EOS),
  wrapped as a `PreTrainedTokenizerFast` with a ChatML chat template written here in Qwen2.5's layout
  (a default system message when the conversation has none; `<|im_start|>assistant\\n` as the
  generation prompt).
- `random_qwen2(tokenizer, hidden=128, layers=2, heads=4, kv_heads=2, seed=0, intermediate=None)`: a
  `Qwen2ForCausalLM` with the 0.5B model's architecture choices (biases on the q/k/v projections, grouped-query attention
  with fewer key/value heads than query heads, tied input/output embeddings, RoPE base 1e6, RMSNorm
  eps 1e-6) at a tiny size; head dim = hidden / heads (>= 32 for vLLM's CPU attention); the MLP width is
  `intermediate` (default 5.5 x hidden; a real size's config value gives its exact shape).
- `save_random_qwen2(directory, texts, ...)`: both, written with `save_pretrained` (what `model.path` and
  `reproduce --model-dir` read).
Left out: Qwen's real vocabulary, merges and weights (the point is the architecture and the format).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

ENDOFTEXT, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
DEFAULT_SYSTEM = "You are a helpful assistant."

CHATML_TEMPLATE = (
    "{%- if messages[0]['role'] != 'system' %}"
    "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


def chatml_tokenizer(texts: Sequence[str], vocab_size: int = 512, pad_to: int | None = None) -> PreTrainedTokenizerFast:
    """A byte-level BPE on `texts` with Qwen's ChatML special tokens and chat template (`pad_to` ids)."""
    if not texts:
        raise ValueError("chatml_tokenizer needs at least one text")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[ENDOFTEXT, IM_START, IM_END],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(list(texts), trainer)
    if pad_to is not None:
        tok = _pad_vocabulary(tok, pad_to)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=IM_END, pad_token=ENDOFTEXT,
                                   extra_special_tokens=[IM_START], clean_up_tokenization_spaces=False,
                                   model_max_length=32768)
    fast.chat_template = CHATML_TEMPLATE
    return fast


def _pad_vocabulary(tok: Tokenizer, size: int) -> Tokenizer:
    """`tok` with unused BPE vocabulary entries appended up to `size` ids (model entries, not added tokens:
    a tokenizer with 150k added tokens takes seconds to load)."""
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    first = max(vocab.values()) + 1
    if size < first:
        raise ValueError(f"pad_to={size} is smaller than the trained vocabulary ({first} ids)")
    vocab.update({f"<|unused_{i}|>": first + i for i in range(size - first)})
    return Tokenizer.from_str(json.dumps(data))


def random_qwen2(tokenizer, hidden: int = 128, layers: int = 2, heads: int = 4, kv_heads: int = 2,
                 seed: int = 0, intermediate: int | None = None) -> Qwen2ForCausalLM:
    """A random-weight `Qwen2ForCausalLM` for `tokenizer` (same `seed` -> same weights; the global RNG is kept)."""
    if heads % kv_heads or hidden % heads:
        raise ValueError(f"hidden {hidden} must divide by heads {heads}, and heads by kv_heads {kv_heads}")
    if intermediate is not None and intermediate < 1:
        raise ValueError(f"intermediate must be positive, got {intermediate}")
    vocab = max(tokenizer.get_vocab().values()) + 1
    # rope_theta: transformers 5 takes it through **kwargs into `rope_parameters` (its signature omits it); 4.x names it
    config = Qwen2Config(  # type: ignore[call-arg]
        vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate or hidden * 11 // 2, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, max_position_embeddings=32768,
        rope_theta=1_000_000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, use_sliding_window=False,
        bos_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        do_sample=True, temperature=1.0, top_k=0, top_p=1.0, eos_token_id=[tokenizer.eos_token_id],
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.pad_token_id,
    )
    return model.eval()


def save_random_qwen2(directory: str | Path, texts: Sequence[str], vocab_size: int = 512, seed: int = 0,
                      **sizes: int) -> Path:
    """Write a `random_qwen2` model and its `chatml_tokenizer` to `directory` with `save_pretrained`."""
    directory = Path(directory)
    tokenizer = chatml_tokenizer(texts, vocab_size)
    random_qwen2(tokenizer, seed=seed, **sizes).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory

"""Convert a GGUF file into a plain Hugging Face model folder that loads like any local model.

`convert_gguf(gguf_path, out_dir, pad_token=None) -> Path` reads the file with transformers' GGUF reader
(it needs the `gguf` package), which dequantises every tensor to float32 and rebuilds the tokenizer
(BPE vocabulary, merges, special tokens) and its chat template from the file's metadata. A model loaded
that way refuses `save_pretrained` ("quantized with QuantizationMethod.GGUF and is not serializable"),
so its weights are copied into a plain model built from the same config (quantisation entry removed)
and saved as safetensors, with the tokenizer and a generation config for sampling that matches the
loss (do_sample, temperature 1, top_k 0, top_p 1, as the tiny family's). `pad_token` names a token
to pad with (e.g. "<|endoftext|>" where the file pads with the end-of-turn token).
The weights are a dequantised copy: a Q4_1/Q8_0 file holds a lossy copy of the original model.
`file_sha256(path)`: the file's hex digest (what a conversion is keyed by).
Left out: writing GGUF files, and architectures transformers' GGUF reader does not know.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import torch

CHUNK = 1 << 20


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def convert_gguf(gguf_path: str | Path, out_dir: str | Path, pad_token: str | None = None) -> Path:
    """Write `gguf_path` as a float32 Hugging Face folder (model.safetensors, config.json, tokenizer files
    with the chat template, generation_config.json) into `out_dir`; returns `out_dir`."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    gguf_path, out_dir = Path(gguf_path), Path(out_dir)
    if not gguf_path.is_file():
        raise FileNotFoundError(f"no GGUF file {gguf_path}")
    source = {"gguf_file": gguf_path.name, "local_files_only": True}
    tokenizer = AutoTokenizer.from_pretrained(str(gguf_path.parent), **source)
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"{gguf_path.name} has no tokenizer.chat_template: only chat models can be converted")
    if pad_token is not None:
        if pad_token not in tokenizer.get_vocab():
            raise ValueError(f"pad token {pad_token!r} is not in {gguf_path.name}'s vocabulary")
        tokenizer.pad_token = pad_token
    quantised = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), dtype=torch.float32, **source)
    config = AutoConfig.for_model(**{k: v for k, v in quantised.config.to_dict().items()
                                     if k not in ("quantization_config", "_name_or_path", "transformers_version")})
    config.pad_token_id = tokenizer.pad_token_id
    config.dtype = torch.float32
    with torch.device("meta"):
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(quantised.state_dict(), strict=False, assign=True)
    missing = [k for k in missing if not (config.tie_word_embeddings and k == "lm_head.weight")]
    if missing or unexpected:
        raise ValueError(f"{gguf_path.name}: weights do not match {type(plain).__name__} "
                         f"(missing {missing[:3]}, unexpected {unexpected[:3]})")
    plain.tie_weights()
    eos = tokenizer.eos_token_id
    plain.generation_config = GenerationConfig(
        do_sample=True, temperature=1.0, top_k=0, top_p=1.0, eos_token_id=[eos] if eos is not None else None,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    plain.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return out_dir

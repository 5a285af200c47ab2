"""Load a pretrained Hugging Face causal LM and its tokenizer, offline.

`load_pretrained(name_or_path, dtype=None, device=None, cache_dir=None, revision=None)
-> (model, tokenizer)` reads a local directory, or a hub id from the local Hugging Face cache
(`$HF_HOME/hub`, or `cache_dir`), always with `local_files_only=True`: this project never downloads
at run time. When the files are not there it raises `PretrainedNotFoundError`, one message that says
what to do. The tokenizer gets a pad token (its eos) when it has none, and must have a chat template
(`formats.chat.ChatFormat` is derived from it). Left out: quantisation, sharded device maps, remote code.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

#: the files that hold a saved model's weights (one of them must be present)
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")


class PretrainedNotFoundError(FileNotFoundError):
    """The model's files are not on this machine."""


def _not_found(name_or_path: str, cache_dir: str | Path | None, cause: BaseException) -> PretrainedNotFoundError:
    cache = cache_dir or os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME", os.path.expanduser("~/.cache/huggingface")), "hub"
    )
    return PretrainedNotFoundError(
        f"cannot load {name_or_path!r}: no local directory by that name and no copy in the Hugging Face "
        f"cache at {cache} (this project loads models with local_files_only=True; there is no network here). "
        "Do one of: (1) on a machine with internet run `hf download "
        f"{name_or_path}` (or `huggingface-cli download`) and copy the cache folder here, then set HF_HOME "
        "(or pass cache_dir) to it; (2) save the model with save_pretrained and pass that directory as "
        f"name_or_path. Underlying error: {type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}"
    )


def load_pretrained(
    name_or_path: str | Path,
    dtype: torch.dtype | str | None = None,
    device: str | torch.device | None = None,
    cache_dir: str | Path | None = None,
    revision: str | None = None,
):
    """`(model, tokenizer)` for a local directory or a cached hub id; raises `PretrainedNotFoundError`."""
    name = str(name_or_path)
    path = Path(name).expanduser()
    if path.exists() and not (path / "config.json").is_file():
        raise PretrainedNotFoundError(f"{path} exists but holds no model (config.json is missing)")
    if path.exists() and not any((path / f).is_file() for f in WEIGHT_FILES):
        raise PretrainedNotFoundError(f"{path} has config.json but no weights (none of {', '.join(WEIGHT_FILES)}): "
                                      "copy the model's weight files there, or save it with save_pretrained")
    if not path.exists() and (name.startswith(("/", ".", "~")) or name.count("/") > 1):
        raise PretrainedNotFoundError(
            f"no directory {path}: pass a directory written by save_pretrained (with config.json), "
            "or a hub id such as Qwen/Qwen2.5-0.5B-Instruct that is in the local Hugging Face cache"
        )
    kwargs = {"local_files_only": True, "cache_dir": str(cache_dir) if cache_dir else None, "revision": revision}
    source = str(path) if path.exists() else name
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype, **kwargs)
    except OSError as exc:  # transformers reports missing files (and malformed hub ids) as OSError
        raise _not_found(name, cache_dir, exc) from exc
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(f"{name!r} has no chat template; use an instruct model or set tokenizer.chat_template")
    if device is not None:
        model = model.to(device)  # type: ignore[arg-type]  # transformers types its wrapped `to` oddly
    return model.eval(), tokenizer

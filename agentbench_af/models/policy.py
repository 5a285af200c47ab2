"""`Policy`: a causal LM with its tokenizer, chat format and optional value head, saved as one folder.

Built from the tiny family (`agentbench_af.models`) on CPU, or loaded from a Hugging Face directory
(`model.path`) on a GPU; the rest of the harness only sees this bundle. The value head (for GAE) is a
linear layer on the last hidden state (`models.value`), saved beside the model. A policy whose model
carries LoRA adapters (`models.lora`) is saved with them merged into the weights: every saved policy
is a plain model. Left out: sharded models.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from agentbench_af.formats.chat import ChatFormat
from agentbench_af.io import atomic_write_json
from agentbench_af.models.lora import adapter_parameter_count, merged_copy
from agentbench_af.models.value import ValueHead, load_policy, save_policy


def is_model_dir(path: Path) -> bool:
    """A policy saved by this project (policy.json) or a Hugging Face model directory (config.json)."""
    return (path / "policy.json").is_file() or (path / "config.json").is_file()


@dataclass
class Policy:
    lm: nn.Module
    tokenizer: object
    chat: ChatFormat
    name: str
    value_head: ValueHead | None = None

    @property
    def num_params(self) -> int:
        """The model's parameters, LoRA adapters not counted (the size of the saved, merged model)."""
        return sum(p.numel() for p in self.lm.parameters()) - adapter_parameter_count(self.lm)

    @property
    def pad_token_id(self) -> int:
        pad = getattr(self.tokenizer, "pad_token_id", None)
        return int(pad if pad is not None else self.chat.end_of_turn_ids[0])

    def ensure_value_head(self, seed: int = 0) -> ValueHead:
        if self.value_head is None:
            hidden = int(self.lm.config.hidden_size)  # type: ignore[union-attr, arg-type]  # an HF model's config
            device = next(self.lm.parameters()).device
            self.value_head = ValueHead(hidden, seed=seed).to(device)
        return self.value_head

    def save(self, path: str | Path) -> Path:
        """Write model (LoRA adapters merged into a copy of it), tokenizer, value head and metadata into `path`
        (a directory)."""
        lm = merged_copy(self.lm)
        path = save_policy(path, lm, self.tokenizer, self.value_head)  # type: ignore[arg-type]  # an HF model
        atomic_write_json(path / "policy.json", {"name": self.name, "num_params": self.num_params})
        return path

    @classmethod
    def load(cls, path: str | Path, device: torch.device | str = "cpu", dtype: torch.dtype | None = None) -> Policy:
        """A policy saved by `save`, or any Hugging Face model directory/id available offline."""
        path = Path(path)
        if (path / "policy.json").exists():
            lm, tokenizer, head = load_policy(path, dtype=dtype)
            name = json.loads((path / "policy.json").read_text()).get("name", path.name)
        else:
            from agentbench_af.models.hf import load_pretrained

            lm, tokenizer = load_pretrained(str(path), dtype=dtype)
            head, name = None, str(path).rstrip("/").split("/")[-1]
        return cls(lm=lm.to(device), tokenizer=tokenizer, chat=ChatFormat.from_tokenizer(tokenizer), name=name,
                   value_head=head.to(device) if head is not None else None)


def build_policy(
    model_name: str, env_ids: list[str], vocab_size: int, tokenizer_episodes: int, seed: int,
    env_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
) -> Policy:
    """A freshly initialised tiny policy with a tokenizer trained on the environments' expert text
    (each environment built with its `env_kwargs` overrides, as the run builds it); a packaged pretrained
    name (`models.packaged`, e.g. smollm2-135m) loads that model and its own tokenizer instead."""
    from agentbench_af.models.packaged import PACKAGED_MODELS, load_packaged

    if model_name in PACKAGED_MODELS:
        lm, tokenizer = load_packaged(model_name)
        return Policy(lm=lm, tokenizer=tokenizer, chat=ChatFormat.from_tokenizer(tokenizer), name=model_name)
    from agentbench_af.models.tiny import build_tiny_policy
    from agentbench_af.models.tokenizer import tokenizer_for_envs

    tokenizer = tokenizer_for_envs(env_ids, vocab_size=vocab_size, episodes_per_env=tokenizer_episodes, seed=seed,
                                   env_kwargs=env_kwargs)
    lm = build_tiny_policy(model_name, tokenizer, seed=seed)
    return Policy(lm=lm, tokenizer=tokenizer, chat=ChatFormat.from_tokenizer(tokenizer), name=model_name)

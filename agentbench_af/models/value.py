"""A scalar value head for PPO/GAE, and saving/loading a policy with its tokenizer and value head.

Design choice: the critic reads the policy's trunk. `ValueHead` is a `Linear(hidden, 1)` read on the
LM's last hidden state (after the final norm: `out.hidden_states[-1]` in transformers), so a value
costs no extra forward pass. The trainer detaches that hidden state by default (`rl.critic: detached`),
so the value loss trains the head only; `shared` lets it train the trunk too. `PolicyWithValue(policy, seed)` bundles the two behind
`forward(input_ids, attention_mask) -> (logits (B, T, V), values (B, T))`; `values[:, t]` is read at
position t (the trainer decides which position scores which token). A separate critic network is
left out (build a second `PolicyWithValue` if one is wanted); so is a value-loss weighting: the
trainer owns the losses.

Files: `save_policy(dir, model, tokenizer, value_head=None)` writes the model (`save_pretrained`,
safetensors), the tokenizer (with its chat template) and `value_head.safetensors`;
`load_policy(dir) -> (model, tokenizer, value_head or None)` reads them back, offline.
"""

from __future__ import annotations

from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel

VALUE_HEAD_FILE = "value_head.safetensors"


class ValueHead(nn.Linear):
    """`Linear(hidden, 1)`: (..., H) -> (..., 1). Weights ~ N(0, 0.02^2) from `seed`, bias 0."""

    def __init__(self, hidden_size: int, seed: int = 0) -> None:
        super().__init__(hidden_size, 1)
        gen = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            self.weight.copy_(torch.randn(self.weight.shape, generator=gen) * 0.02)
            self.bias.zero_()


class PolicyWithValue(nn.Module):
    """A causal LM (`self.policy`) and a `ValueHead` (`self.value_head`) on its last hidden state."""

    def __init__(self, policy: PreTrainedModel, seed: int = 0, value_head: ValueHead | None = None) -> None:
        super().__init__()
        self.policy = policy
        self.value_head = value_head if value_head is not None else ValueHead(policy.config.hidden_size, seed)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kwargs
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`input_ids` (B, T) -> logits (B, T, V), values (B, T). Extra kwargs go to the LM."""
        out = self.policy(
            input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, use_cache=False, **kwargs
        )
        hidden = out.hidden_states[-1]  # (B, T, H), after the final norm
        values = self.value_head(hidden.to(self.value_head.weight.dtype)).squeeze(-1)  # (B, T)
        return out.logits, values

    def save_pretrained(self, directory: str | Path, tokenizer=None) -> None:
        save_policy(directory, self.policy, tokenizer, self.value_head)

    @classmethod
    def from_pretrained(cls, directory: str | Path, seed: int = 0) -> PolicyWithValue:
        """Load a saved policy; a new head from `seed` when the directory has none (e.g. after SFT)."""
        model, _, head = load_policy(directory)
        return cls(model, seed=seed, value_head=head)


def save_policy(directory: str | Path, model: PreTrainedModel, tokenizer=None, value_head: nn.Module | None = None) -> Path:
    """Write model, tokenizer (if given) and value head (if given) to `directory`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    if tokenizer is not None:
        tokenizer.save_pretrained(directory)
    head_path = directory / VALUE_HEAD_FILE
    if value_head is not None:
        save_file({k: v.detach().cpu().contiguous() for k, v in value_head.state_dict().items()}, str(head_path))
    elif head_path.exists():
        head_path.unlink()  # a stale head from an earlier save would be read back with the new model
    return directory


def load_policy(directory: str | Path, dtype: torch.dtype | None = None):
    """`(model, tokenizer or None, ValueHead or None)` from a directory written by `save_policy`."""
    directory = Path(directory)
    if not (directory / "config.json").is_file():
        raise FileNotFoundError(f"{directory} holds no saved model (config.json is missing)")
    model = AutoModelForCausalLM.from_pretrained(directory, local_files_only=True, dtype=dtype)
    tokenizer = None
    if (directory / "tokenizer.json").is_file() or (directory / "tokenizer_config.json").is_file():
        tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    head = None
    if (directory / VALUE_HEAD_FILE).is_file():
        state = load_file(str(directory / VALUE_HEAD_FILE))
        head = ValueHead(state["weight"].shape[1])
        head.load_state_dict(state)
    return model.eval(), tokenizer, head

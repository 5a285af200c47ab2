import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers import AutoTokenizer

from agentbench_af.formats.chat import ChatFormat
from agentbench_af.models.tokenizer import (
    SPECIAL_TOKENS,
    TAG_TOKENS,
    build_tokenizer,
    embedding_size,
    tokenizer_for_envs,
)


def test_special_and_tag_tokens(tok):
    assert [tok.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4, 5]
    assert (tok.pad_token_id, tok.bos_token_id, tok.eos_token_id) == (0, 1, 2)
    assert sorted(tok.all_special_ids) == [0, 1, 2, 3, 4, 5]
    for tag in TAG_TOKENS:  # one id each, and not special (kept by skip_special_tokens)
        ids = tok.encode(f"x{tag}y", add_special_tokens=False)
        assert tok.convert_tokens_to_ids(tag) in ids and len(ids) == 3
        assert tok.decode(ids, skip_special_tokens=True) == f"x{tag}y"
    assert len(tok) == embedding_size(tok)  # no holes in the id space
    assert tok.encode("Right", add_special_tokens=True) == tok.encode("Right", add_special_tokens=False)


def test_chat_template(tok):
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, {"role": "assistant", "content": "A"}]
    assert tok.apply_chat_template(msgs, tokenize=False) == "<|bos|><|system|>S<|eos|><|user|>U<|eos|><|assistant|>A<|eos|>"
    gen = tok.apply_chat_template(msgs[:2], tokenize=False, add_generation_prompt=True)
    assert gen == "<|bos|><|system|>S<|eos|><|user|>U<|eos|><|assistant|>"
    with pytest.raises(Exception, match="unknown chat role"):
        tok.apply_chat_template([{"role": "tool", "content": "x"}], tokenize=False)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_text_round_trips(tok, text):
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text
    assert tok.unk_token_id is None or tok.unk_token_id not in ids


def test_domain_text_is_compact(tok, corpus):
    response = next(t for t in corpus if t.startswith("<think>"))
    assert len(tok.encode(response, add_special_tokens=False)) < len(response) / 2.5


def test_deterministic_and_capped(corpus):
    assert build_tokenizer(corpus).get_vocab() == build_tokenizer(corpus).get_vocab()
    small = build_tokenizer(corpus, vocab_size=300)
    assert embedding_size(small) <= 300
    assert small.decode(small.encode("Turn 3: √ é", add_special_tokens=False)) == "Turn 3: √ é"


def test_bad_settings(corpus):
    with pytest.raises(ValueError, match="vocab_size"):
        build_tokenizer(corpus, vocab_size=100)
    with pytest.raises(ValueError, match="at least one"):
        build_tokenizer([])


def test_save_and_load_round_trip(tok, tmp_path):
    tok.save_pretrained(tmp_path)
    back = AutoTokenizer.from_pretrained(tmp_path, local_files_only=True)
    text = "<think>I go Down</think><answer>Down</answer>"
    assert back.encode(text, add_special_tokens=False) == tok.encode(text, add_special_tokens=False)
    assert back.get_vocab() == tok.get_vocab() and back.chat_template == tok.chat_template
    assert (back.pad_token_id, back.eos_token_id, sorted(back.all_special_ids)) == (0, 2, [0, 1, 2, 3, 4, 5])
    assert ChatFormat.from_tokenizer(back).end_of_turn_ids == (2,)


def test_tokenizer_for_envs():
    t = tokenizer_for_envs(["FrozenLake-4x4-v0"], episodes_per_env=5, seed=0)
    assert t.convert_tokens_to_ids("<answer>") > 5 and embedding_size(t) <= 1024


def test_tokenizer_corpus_uses_the_runs_variant_overrides():
    # Sudoku's `units` sentences ("row 3 has . 2 1 3: 4 goes at col 1.") are not in the default
    # expert's text: a tokenizer built without the override spells "goes" letter by letter
    env = "Sudoku-4x4-10clues-v0"
    plain = tokenizer_for_envs([env], episodes_per_env=40, vocab_size=512)
    units = tokenizer_for_envs([env], episodes_per_env=40, vocab_size=512,
                               env_kwargs={env: {"expert_reasoning": "units"}})
    assert len(plain.tokenize(" goes")) > 1 and len(units.tokenize(" goes")) == 1

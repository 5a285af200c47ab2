"""ChatFormat pieces must reproduce the tokenizer's own template rendering, as text and as ids."""

import pytest
from transformers import PreTrainedTokenizerFast

from agentbench_af.formats.chat import ChatFormat
from agentbench_af.models.corpus import expert_demonstrations


def _demo():
    demo = expert_demonstrations("FrozenLake-4x4-v0", [7])[0]
    assert len(demo.turns) >= 2
    return demo


def _pieces_text(cf: ChatFormat, system, turns, next_user, prefix=""):
    text = cf.prefix_text(system, turns[0][0], prefix)
    users = [u for u, _ in turns[1:]] + [next_user]
    for (_, response), user in zip(turns, users, strict=True):
        text += response[len(prefix) :] + cf.end_of_turn_text + cf.next_turn_text(user, prefix)
    return text


def _pieces_ids(cf: ChatFormat, tok, system, turns, next_user, prefix=""):
    ids = cf.prefix_ids(system, turns[0][0], prefix)
    users = [u for u, _ in turns[1:]] + [next_user]
    for (_, response), user in zip(turns, users, strict=True):
        ids += cf.response_ids(response[len(prefix) :], prefix) + list(cf.end_of_turn_ids)
        ids += cf.next_turn_ids(user, prefix)
    return ids


def _messages(system, turns, next_user):
    msgs = [{"role": "system", "content": system}] if system is not None else []
    for user, response in turns:
        msgs += [{"role": "user", "content": user}, {"role": "assistant", "content": response}]
    return msgs + [{"role": "user", "content": next_user}]


def test_end_of_turn_is_detected(ours, chatml):
    assert ChatFormat.from_tokenizer(ours).end_of_turn_ids == (ours.eos_token_id,)
    cf = ChatFormat.from_tokenizer(chatml)
    assert cf.end_of_turn_text == "<|im_end|>"
    assert cf.end_of_turn_ids == (chatml.convert_tokens_to_ids("<|im_end|>"),)
    assert (cf.turn_open, cf.turn_close) == ("\n<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize("system", ["sys", None])
def test_pieces_equal_the_template_rendering(any_tokenizer, system):
    tok = any_tokenizer
    cf = ChatFormat.from_tokenizer(tok)
    demo = _demo()
    system = demo.system if system else None
    rendered = tok.apply_chat_template(_messages(system, demo.turns, "Turn 9:\nlast"), add_generation_prompt=True, tokenize=False)
    assert _pieces_text(cf, system, demo.turns, "Turn 9:\nlast") == rendered
    # ids: every piece boundary in both templates sits next to a special token, so ids match too
    # (responses through `response_ids`: the Unigram tokenizer adds a leading "▁" to a text encoded alone)
    assert _pieces_ids(cf, tok, system, demo.turns, "Turn 9:\nlast") == tok.encode(rendered, add_special_tokens=False)


def test_forced_prefix_is_part_of_the_prompt(any_tokenizer):
    tok = any_tokenizer
    cf = ChatFormat.from_tokenizer(tok)
    demo = _demo()
    head = tok.apply_chat_template(_messages(demo.system, [], demo.turns[0][0]), add_generation_prompt=True, tokenize=False)
    assert cf.prefix_text(demo.system, demo.turns[0][0], "<think>") == head + "<think>"
    assert tok.decode(cf.prefix_ids(demo.system, demo.turns[0][0], "<think>")) == head + "<think>"
    # a whole conversation with the forced prefix renders as the template with responses starting "<think>"
    rendered = tok.apply_chat_template(_messages(demo.system, demo.turns, "u"), add_generation_prompt=True, tokenize=False)
    assert _pieces_text(cf, demo.system, demo.turns, "u", "<think>") == rendered + "<think>"
    assert tok.decode(_pieces_ids(cf, tok, demo.system, demo.turns, "u", "<think>")) == rendered + "<think>"
    assert cf.next_turn_text("u", "<think>").endswith("<think>")


def test_requires_a_chat_template(ours):
    bare = PreTrainedTokenizerFast(tokenizer_object=ours.backend_tokenizer, eos_token="<|eos|>")
    with pytest.raises(ValueError, match="no chat_template"):
        ChatFormat.from_tokenizer(bare)


def _with_template(tok, template: str) -> PreTrainedTokenizerFast:
    other = PreTrainedTokenizerFast(tokenizer_object=tok.backend_tokenizer, eos_token="<|eos|>", pad_token="<|pad|>")
    other.chat_template = template
    return other


def test_rejects_a_template_that_rewrites_history(ours):
    # drops every assistant message except the last one: contexts of sampled ids cannot follow it
    template = (
        "{% for m in messages %}{% if m['role'] != 'assistant' or loop.last %}"
        "{{ '<|' + m['role'] + '|>' + m['content'] + eos_token }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    with pytest.raises(ValueError, match="not incremental"):
        ChatFormat.from_tokenizer(_with_template(ours, template))


def test_plain_text_template_needs_an_explicit_end_of_turn(ours):
    template = (
        "{% for m in messages %}{{ m['role'] + ': ' + m['content'] + '\n\n' }}{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}"
    )
    tok = _with_template(ours, template)
    with pytest.raises(ValueError, match="end_of_turn"):
        ChatFormat.from_tokenizer(tok)
    cf = ChatFormat.from_tokenizer(tok, end_of_turn="\n\n")
    assert cf.end_of_turn_ids == tuple(tok.encode("\n\n", add_special_tokens=False))
    assert cf.next_turn_text("hi") == "user: hi\n\nassistant: "
    with pytest.raises(ValueError, match="does not follow"):
        ChatFormat.from_tokenizer(tok, end_of_turn="<|eos|>")


def test_response_ids_tokenise_in_place(chatml, ours):
    cf = ChatFormat.from_tokenizer(chatml)
    text = "I go Down."
    alone = chatml.encode(text, add_special_tokens=False)
    assert chatml.decode(alone) == text and chatml.convert_ids_to_tokens(alone)[0] == "\u2581"  # SentencePiece start
    in_place = cf.response_ids(text)
    assert chatml.convert_ids_to_tokens(in_place)[0] != "\u2581" and chatml.decode(in_place) == text
    assert ChatFormat.from_tokenizer(ours).response_ids(text) == ours.encode(text, add_special_tokens=False)

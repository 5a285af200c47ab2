"""The malformed-response corpus: deterministic, covers every kind, and never holds a usable turn."""

import random

from agentbench_af.api.malformed import (
    HUGE_CHARS,
    KINDS,
    MalformedResponse,
    malformed_responses,
    prefix_then_unknown,
)
from agentbench_af.formats.parse import MAX_PARSE_CHARS, parse_response

WORDS = ("Left", "Down", "Right", "Up")


def _corpus(n=400, seed=0, huge=True, max_actions=2):
    return malformed_responses(n, action_words=WORDS, max_actions_per_turn=max_actions, seed=seed, huge=huge)


def test_deterministic_in_seed():
    small = dict(huge=False)
    assert _corpus(seed=5, **small) == _corpus(seed=5, **small)
    assert _corpus(seed=5, **small) != _corpus(seed=6, **small)


def test_every_kind_appears_and_exactly_one_is_ten_megabytes():
    corpus = _corpus(n=len(KINDS) * 3)
    assert {m.kind for m in corpus} == set(KINDS)
    assert sum(len(m.text) >= HUGE_CHARS for m in corpus) == 1
    assert all(len(m.text) > MAX_PARSE_CHARS for m in corpus if m.kind == "huge")
    assert "huge" not in {m.kind for m in _corpus(n=60, huge=False)}


def test_too_many_actions_uses_only_real_words():
    for max_actions in (1, 2, 3):
        many = [m for m in _corpus(max_actions=max_actions, huge=False) if m.kind == "too_many_actions"]
        assert many
        for m in many:
            p = parse_response(m.text, max_actions=max_actions)
            assert p.error is not None and p.error.startswith("too many actions")
            assert len(p.actions) > max_actions and set(p.actions) <= set(WORDS)


def test_no_case_has_a_known_first_action():
    """Either the parser rejects the response, or its first action is not an action word."""
    known = {w.lower() for w in WORDS}
    for max_actions in (1, 2):
        for m in _corpus(n=1000, seed=3, max_actions=max_actions):
            p = parse_response(m.text, max_actions=max_actions)
            if p.error is None:
                first = p.actions[0]
                assert first.lower() not in known or not first.isprintable(), (m.kind, m.text[:80])


def test_control_characters_are_not_whitespace():
    for m in _corpus(n=600, huge=False):
        if m.kind == "control_chars":
            assert any(not c.isprintable() and not c.isspace() for c in m.text), repr(m.text)


def test_preview_is_short():
    m = MalformedResponse("huge", "x" * 1000)
    assert len(m.preview(20)) < 60 and "1000 chars" in m.preview(20)


def test_prefix_then_unknown_parses_to_prefix_and_an_unknown_word():
    text = prefix_then_unknown(["Up"], random.Random(0))
    p = parse_response(text, max_actions=2)
    assert p.error is None and p.actions[0] == "Up" and p.actions[1].lower() not in {w.lower() for w in WORDS}

"""Token roles from sampled ids: hand-checked sequences on three tokenizers, and properties."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentbench_af.formats import roles as roles_mod
from agentbench_af.formats.parse import find_spans
from agentbench_af.formats.roles import Role, token_pieces, token_roles
from agentbench_af.models.tokenizer import embedding_size

R, A, F = Role.REASONING, Role.ACTION, Role.FORMAT


def _ids(tok, text):
    return tok.encode(text, add_special_tokens=False)


def _roles(ids, tok, prefix=""):
    return token_roles(ids, tok, prompt_prefix=prefix)


# ---------------------------------------------------------------- ours: tags are single tokens
def test_ours_basic_response(ours):
    ids = _ids(ours, "<think>I go Right</think><answer>Right</answer>") + [ours.eos_token_id]
    pieces = ["<think>", "I", " go", " Right", "</think>", "<answer>", "Right", "</answer>", ""]
    assert token_pieces(ids, ours) == pieces
    assert _roles(ids, ours) == [F, R, R, R, F, F, A, F, F]  # format stays format: credit decides where it counts


def test_ours_forced_think_prefix(ours):
    ids = _ids(ours, "I go Right</think><answer>Up</answer>")
    assert _roles(ids, ours, prefix="<think>") == [R, R, R, F, F, A, F]
    assert _roles(ids, ours) == [F, F, F, F, F, A, F]  # without the prefix there is no reasoning span


def test_ours_missing_close_tags_and_trailing_text(ours):
    eos = ours.eos_token_id
    # no </think>: reasoning runs to the answer tag
    assert _roles(_ids(ours, "<think>I go<answer>Up</answer>"), ours) == [F, R, R, F, A, F]
    # no </answer> (cut by the token limit or ended early): the answer runs to the end; eos is format
    assert _roles(_ids(ours, "<think>I go</think><answer>Up Left") + [eos], ours) == [F, R, R, F, F, A, A, F]
    # text after </answer>, and no tags at all, are format
    ids = _ids(ours, "<answer>Up</answer> then")
    assert token_pieces(ids, ours)[-1] == " then" and _roles(ids, ours) == [F, A, F, F]
    assert _roles(_ids(ours, "Right Down"), ours) == [F, F]


def test_ours_partial_utf8_bytes(ours):
    # "é" and "世" are not in the FrozenLake vocabulary: byte-level ids that end inside a character get an
    # empty piece and the role of the character they belong to
    ids = _ids(ours, "<think>é世</think><answer>Up</answer>")
    assert token_pieces(ids, ours) == ["<think>", "", "é", "", "", "世", "</think>", "<answer>", "Up", "</answer>"]
    assert _roles(ids, ours) == [F, R, R, R, R, R, F, F, A, F]
    # a response cut inside a character ends with a replacement character, still reasoning
    cut = ids[:4]
    assert "".join(token_pieces(cut, ours)) == ours.decode(cut) and _roles(cut, ours) == [F, R, R, R]
    # an unfinished character at the very end of an open answer takes the answer's role
    assert _roles(_ids(ours, "<answer>Up") + ids[3:4], ours) == [F, A, A]


def test_special_ids_are_format_anywhere(ours):
    mid = _ids(ours, "<think>I go") + [ours.convert_tokens_to_ids("<|user|>")] + _ids(ours, "on</think>")
    assert token_pieces(mid, ours) == ["<think>", "I", " go", "", "o", "n", "</think>"]
    assert _roles(mid, ours) == [F, R, R, F, R, R, F]
    pads = _ids(ours, "<answer>Up") + [ours.pad_token_id, ours.eos_token_id]
    assert _roles(pads, ours) == [F, A, F, F]


# ---------------------------------------------------------------- ChatML Unigram: tags split over pieces
def _from_pieces(tok, pieces):
    ids = tok.convert_tokens_to_ids(pieces)
    assert tok.unk_token_id not in ids, "a piece is missing from the trained vocabulary"
    return ids


def test_chatml_split_tags(chatml):
    pieces = ["<", "th", "ink>", "I", "\u2581go\u2581", "R", "ight", ".</", "th", "ink>", "<", "a", "ns", "wer>",
              "R", "ight", "\u2581||\u2581", "Down", "</", "a", "ns", "wer>", "<|im_end|>"]
    ids = _from_pieces(chatml, pieces)
    assert "".join(token_pieces(ids, chatml)) == "<think>I go Right.</think><answer>Right || Down</answer>"
    expected = [F, F, F, R, R, R, R, F, F, F, F, F, F, F, A, A, A, A, F, F, F, F, F]
    assert _roles(ids, chatml) == expected  # ".</" holds 1 reasoning and 2 tag characters: format


def test_chatml_forced_prefix_and_missing_tags(chatml):
    ids = _from_pieces(chatml, ["I", "\u2581go", "</", "th", "ink>", "<", "a", "ns", "wer>", "U", "p"])
    assert _roles(ids, chatml, prefix="<think>") == [R, R, F, F, F, F, F, F, F, A, A]
    # "<think>Up<answer>Up</answer> th": no </think>, and text after </answer>
    pieces = ["<", "th", "ink>", "U", "p", "<", "a", "ns", "wer>", "U", "p", "</", "a", "ns", "wer>", "\u2581th"]
    assert _roles(_from_pieces(chatml, pieces), chatml) == [F, F, F, R, R, F, F, F, F, A, A, F, F, F, F, F]


def test_chatml_byte_fallback_pieces(chatml):
    # "<think>é</think>" with "é" as two byte-fallback pieces: the first decodes to half a character
    ids = _from_pieces(chatml, ["<", "th", "ink>", "<0xC3>", "<0xA9>", "</", "th", "ink>"])
    assert token_pieces(ids, chatml) == ["<", "th", "ink>", "", "é", "</", "th", "ink>"]
    assert _roles(ids, chatml) == [F, F, F, R, R, F, F, F]
    # a lone continuation byte can never complete: it decodes to U+FFFD and keeps its place
    ids = _from_pieces(chatml, ["<", "a", "ns", "wer>", "<0xA9>", "U", "p"])
    assert token_pieces(ids, chatml) == ["<", "a", "ns", "wer>", "\ufffd", "U", "p"]
    assert _roles(ids, chatml) == [F, F, F, F, A, A, A]


# ---------------------------------------------------------------- a tokenizer with straddling pieces
class PieceTokenizer:
    """A slow (no Rust backend) tokenizer over a fixed list of pieces; id 0 is a special end token."""

    def __init__(self, pieces):
        self.pieces = ["<end>", "a", *pieces]
        self.all_special_ids = [0]

    def encode(self, text, add_special_tokens=False):
        return [self.pieces.index(text)] if text in self.pieces else []

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=False):
        return "".join(self.pieces[i] for i in ids if i < len(self.pieces) and not (skip_special_tokens and i == 0))


def test_majority_rule_on_straddling_pieces():
    tok = PieceTokenizer(
        ["<think>a", "bc</", "think><answer>U", "p</answer>", "xyz</think>", "<answer>Lef", "t</an", "Rightward</a"]
    )
    # "<think>abc</think><answer>Up</answer>": "<think>a" is 7 tag chars vs 1 -> format; "bc</" is 2 vs 2,
    # a tie -> reasoning; "think><answer>U" holds 1 answer char of 15 -> format; "p</answer>" 1 of 10 -> format
    assert _roles([2, 3, 4, 5, 0], tok) == [F, R, F, F, F]
    # forced "<think>": "xyz</think>" is 3 reasoning vs 8 tag chars -> format; "<answer>Lef" 3 of 11 -> format;
    # an answer never closed runs to the end, so the partial tag in "t</an" is answer text
    assert _roles([6, 7, 8], tok, prefix="<think>") == [F, F, A]
    assert _roles([9], tok, prefix="<answer>") == [A]
    assert _roles([9, 0], tok) == [F, F]  # no tags at all


class StripTokenizer(PieceTokenizer):
    """Decoding drops one leading space of the whole text (as Llama's decoder does), and "a" is not one
    id, so pieces decoded in isolation are wrong and the windowed tier must take over."""

    def __init__(self, pieces):
        super().__init__(pieces)
        self.pieces[1] = "b"

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=False):
        text = super().decode(ids, skip_special_tokens)
        return text[1:] if text.startswith(" ") else text


def test_windowed_tier_handles_context_dependent_decoders(monkeypatch):
    tok = StripTokenizer(["<think>", " go", " right", "</think>"])

    def fail(*args):
        raise AssertionError("the exact tier should not be needed")

    monkeypatch.setattr(roles_mod, "_pieces_exact", fail)
    ids = [3, 4, 2, 3, 5]  # " go right<think> go</think>"
    assert token_pieces(ids, tok) == ["go", " right", "<think>", " go", "</think>"]
    assert _roles(ids, tok) == [F, F, F, R, F]
    assert token_pieces([2, 3], tok) == ["<think>", " go"]


# ---------------------------------------------------------------- properties
def _reference_roles(ids, tok, prefix):
    """Slow reference: a role per character, then a majority vote per piece (ties: action, reasoning)."""
    pieces = token_pieces(ids, tok)
    text = prefix + "".join(pieces)
    reasoning, answer = find_spans(text)
    char_roles = []
    for i in range(len(text) + 1):
        in_a = answer is not None and (answer.start <= i < answer.end or i == len(text) == answer.end)
        in_r = reasoning is not None and (reasoning.start <= i < reasoning.end or i == len(text) == reasoning.end)
        char_roles.append(A if in_a else R if in_r else F)
    special = set(tok.all_special_ids)
    out, pos = [], len(prefix)
    for t, piece in zip(ids, pieces, strict=True):
        if t in special:
            out.append(F)
            continue
        span = char_roles[pos : pos + len(piece)] if piece else [char_roles[pos]]
        pos += len(piece)
        counts = {role: span.count(role) for role in (A, R, F)}
        out.append(max((A, R, F), key=lambda r: counts[r]))  # max keeps the first of equal counts
    return out


PREFIXES = st.sampled_from(["", "<think>", "<answer>", "<think>x</think><answer>"])


def _id_strategy(tok):
    """Any id (including a few past the vocabulary), with single bytes and characters drawn often."""
    short = sorted(i for t, i in tok.get_vocab().items() if t.startswith("<0x") or len(t) == 1)
    return st.one_of(st.integers(0, embedding_size(tok) + 3), st.sampled_from(short))


@settings(max_examples=150, deadline=None)
@given(data=st.data(), prefix=PREFIXES, which=st.sampled_from(["ours", "chatml"]))
def test_roles_never_raise_and_match_the_reference(data, prefix, which, ours, chatml):
    tok = {"ours": ours, "chatml": chatml}[which]
    ids = data.draw(st.lists(_id_strategy(tok), max_size=40))
    roles = _roles(ids, tok, prefix)
    assert len(roles) == len(ids) and set(roles) <= {R, A, F}
    pieces = token_pieces(ids, tok)
    assert "".join(pieces) == tok.backend_tokenizer.decode(ids, skip_special_tokens=True)
    assert roles == _reference_roles(ids, tok, prefix)


@settings(max_examples=100, deadline=None)
@given(data=st.data(), which=st.sampled_from(["ours", "chatml"]))
def test_fast_pieces_equal_the_exact_prefix_decoding(data, which, ours, chatml):
    tok = {"ours": ours, "chatml": chatml}[which]
    dt = roles_mod._detokenizer(tok)
    ids = [t for t in data.draw(st.lists(_id_strategy(tok), min_size=1, max_size=30)) if t not in dt.special]
    if not ids:
        return
    full = dt.decode(ids)
    exact = roles_mod._pieces_exact(ids, dt, full)
    assert "".join(exact) == full
    assert roles_mod._text_pieces(ids, dt) == exact
    # the windowed (vLLM-style) tier, when its concatenation check passes, agrees with the exact pieces
    # (up to where it places a U+FFFD of a byte that never completes)
    windowed = roles_mod._pieces_windowed(ids, dt)
    if windowed is not None and "".join(windowed) == full and "\ufffd" not in full:
        assert windowed == exact


def test_text_tokens_never_hit_the_slow_paths(ours, chatml, corpus, monkeypatch):
    def fail(*args):
        raise AssertionError("fell back to a slower path")

    monkeypatch.setattr(roles_mod, "_pieces_windowed", fail)
    monkeypatch.setattr(roles_mod, "_pieces_exact", fail)
    for tok in (ours, chatml):
        for text in corpus[:40]:
            ids = _ids(tok, text)
            assert "".join(token_pieces(ids, tok)) == tok.decode(ids)


def test_bad_arguments(ours):
    with pytest.raises(ValueError, match="token ids"):
        token_roles([-1], ours)
    assert token_roles([], ours) == []


def test_speed_per_100_token_response(ours, chatml):
    """Prints microseconds per 100-token response (run with -s); the bound only catches an O(n^2) path."""
    text = "<think>" + " ".join(["I am at row 2 col 3 and the goal is at row 4 col 4."] * 6) + "</think><answer>Down || Right</answer>"
    for name, tok in (("ours", ours), ("chatml", chatml)):
        ids = _ids(tok, text)[:99] + [tok.eos_token_id]
        token_roles(ids, tok)
        n = 300
        start = time.perf_counter()
        for _ in range(n):
            token_roles(ids, tok)
        us = (time.perf_counter() - start) / n * 1e6
        print(f"token_roles {name}: {us:.0f} us per 100-token response")
        assert us < 5_000

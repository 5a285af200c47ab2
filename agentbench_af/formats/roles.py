"""Token roles of one generated response, from the token ids that were actually sampled.

`token_roles(token_ids, tokenizer, prompt_prefix="") -> list[Role]` labels each
generated id (one turn's response, end-of-turn id included) as reasoning, action or format
(docs/method.md, "Token roles"):

1. Incremental detokenisation (`token_pieces`), in three tiers, each checked to concatenate to the
   full decode: (a) each id decoded after one fixed context id (memoised), with runs of ids that end
   inside a multi-byte character (byte-level or byte-fallback) decoded together; (b) vLLM-style: the
   difference between decoding a window of `WINDOW` preceding ids with and without the id, trailing
   U+FFFD held back; (c) exact: where the decode of each prefix stops agreeing with the full text.
   An id ending inside a character gets an empty piece; the id completing it gets the character.
   Special ids (end-of-turn, padding, chat markers) get empty pieces and are always `format`.
2. `formats.parse.find_spans` on `prompt_prefix + text` (the prefix is text forced into the prompt, such
   as "<think>", so a response that starts inside the reasoning span is read correctly).
3. Each id gets the role of the span holding most of its characters: inside `<think>..</think>` ->
   reasoning, inside `<answer>..</answer>` -> action, tag characters and anything outside -> format.
   Ties go to action, then reasoning, then format. An empty piece takes the role of the character
   position it sits at (at the end of the text: the role of a span left open there).
Format ids keep `Role.FORMAT`: where credit assignment counts them (`credit.format_role`) is decided in
`credit.roles`, nowhere else.

Tags split over several ids, a missing `</think>` or `</answer>`, and text after `</answer>` are all
handled by step 3. Each id's piece is memoised per tokenizer object, and so are the pieces of short runs
of ids that end inside a character (so do not add tokens to a tokenizer after its first use here).
Left out: prompt tokens (the caller marks them `Role.PROMPT`) and batching over responses.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Sequence
from enum import IntEnum
from typing import Any

from agentbench_af.formats.parse import Span, find_spans


class Role(IntEnum):
    """Token roles (docs/method.md). Stored as int8 in `RolloutBatch.roles`."""

    PROMPT = 0
    REASONING = 1
    ACTION = 2
    FORMAT = 3


ROLE_NAMES = {r.value: r.name.lower() for r in Role}

WINDOW = 4  # preceding ids decoded with each id: enough for any 4-byte UTF-8 character
MEMO_RUN = 8  # runs of ids without context-free pieces up to this length are memoised
_REPLACEMENT = "\ufffd"


class _Detokenizer:
    """Decoding functions, special ids and context-free pieces of one tokenizer (cached per tokenizer)."""

    def __init__(self, tokenizer: Any) -> None:
        backend = getattr(tokenizer, "backend_tokenizer", None)
        special = set(getattr(tokenizer, "all_special_ids", []) or [])
        if backend is not None:  # a fast tokenizer: call the Rust decoder directly (no Python cleanup)
            special |= {i for i, tok in backend.get_added_tokens_decoder().items() if tok.special}
            self.decode = lambda ids: backend.decode(ids, skip_special_tokens=False)
            self.decode_batch = lambda seqs: backend.decode_batch(seqs, skip_special_tokens=False)
        else:
            self.decode = lambda ids: tokenizer.decode(
                ids, skip_special_tokens=False, clean_up_tokenization_spaces=False
            )
            self.decode_batch = lambda seqs: [self.decode(s) for s in seqs]
        self.special = frozenset(special)
        context = list(tokenizer.encode("a", add_special_tokens=False))
        self.context = context if len(context) == 1 and self.decode(context) == "a" else []
        self.piece: dict[int, str | None] = {}  # id -> its text after the context id; None: not context-free
        self.run: dict[tuple[int, ...], list[str]] = {}  # short runs without context-free pieces -> their pieces

    def cached_pieces(self, ids: list[int]) -> list[str]:
        """Each id's memoised context-free piece (the first id decoded alone); runs of ids without one
        (bytes of an unfinished character, and empty pieces among them) are decoded together and split
        by `_pieces_exact`. The caller checks that the pieces concatenate to the full decode."""
        missing = list({t for t in ids[1:] if t not in self.piece})
        if missing:
            lead = "a" if self.context else ""
            for t, text in zip(missing, self.decode_batch([self.context + [t] for t in missing]), strict=True):
                ok = text.startswith(lead) and _REPLACEMENT not in text
                self.piece[t] = text[len(lead) :] if ok else None
        first = self.decode(ids[:1])
        pieces = [None if _REPLACEMENT in first else first] + [self.piece[t] for t in ids[1:]]
        i, n = 0, len(ids)
        while i < n:
            if pieces[i] is not None:
                i += 1
                continue
            j = i  # the run also takes in empty pieces (unknown ids), which a byte decoder skips over
            while j < n and not pieces[j]:
                j += 1
            pieces[i:j] = self.run_pieces(ids[i:j])
            i = j
        return pieces  # type: ignore[return-value]  # the loop above replaced every None


    def run_pieces(self, run: list[int]) -> list[str]:
        """`_pieces_exact` of a run, memoised for runs of up to `MEMO_RUN` ids (the bytes of one
        multi-byte character, typically); the pieces of a run depend on its ids only."""
        key = tuple(run)
        found = self.run.get(key)
        if found is None:
            found = _pieces_exact(run, self, self.decode(run))
            if len(run) <= MEMO_RUN:
                self.run[key] = found
        return list(found)


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _detokenizer(tokenizer: Any) -> _Detokenizer:
    try:
        found = _CACHE.get(tokenizer)
    except TypeError:  # not weak-referenceable or unhashable
        return _Detokenizer(tokenizer)
    if found is None:
        found = _Detokenizer(tokenizer)
        _CACHE[tokenizer] = found
    return found


def _pieces_windowed(ids: list[int], dt: _Detokenizer) -> list[str] | None:
    """Pieces from windowed decodes; None when a window is not consistent with the one before."""
    n = len(ids)
    with_id = dt.decode_batch([ids[max(0, i - WINDOW) : i + 1] for i in range(n)])
    without = dt.decode_batch([ids[max(0, i - WINDOW) : i] for i in range(n)])
    pieces = []
    for i in range(n):
        a = with_id[i] if i == n - 1 else with_id[i].rstrip(_REPLACEMENT)
        b = without[i].rstrip(_REPLACEMENT)
        if not a.startswith(b):
            return None
        pieces.append(a[len(b) :])
    return pieces


def _pieces_exact(ids: list[int], dt: _Detokenizer, full: str) -> list[str]:
    """Pieces from the decodes of every prefix (O(n^2) decoding): id i ends where the decode of ids[:i+1]
    stops agreeing with `full`, so an unfinished character waits for the id that completes it, and a
    byte that never completes keeps its U+FFFD. Always concatenates to `full`."""
    prefixes = dt.decode_batch([ids[: i + 1] for i in range(len(ids))])
    pieces, start = [], 0
    for d in prefixes:
        end = len(d) if full.startswith(d) else len(os.path.commonprefix([d, full]))
        end = max(end, start)
        pieces.append(full[start:end])
        start = end
    pieces[-1] += full[start:]
    return pieces


def _text_pieces(ids: list[int], dt: _Detokenizer) -> list[str]:
    if not ids:
        return []
    full = dt.decode(ids)
    pieces = dt.cached_pieces(ids)
    if "".join(pieces) == full:
        return pieces
    if _REPLACEMENT not in full:  # the windowed tier guesses where a never-completed byte's U+FFFD goes
        windowed = _pieces_windowed(ids, dt)
        if windowed is not None and "".join(windowed) == full:
            return windowed
    return _pieces_exact(ids, dt, full)


def _as_ids(token_ids: Any) -> list[int]:
    ids = token_ids.tolist() if hasattr(token_ids, "tolist") else list(token_ids)
    ids = [int(t) for t in ids]
    if any(t < 0 or t >= 2**32 for t in ids):
        raise ValueError("token ids must be in [0, 2**32)")
    return ids


def _pieces_with_specials(ids: list[int], dt: _Detokenizer) -> list[str]:
    kept = [i for i, t in enumerate(ids) if t not in dt.special]
    if len(kept) == len(ids):
        return _text_pieces(ids, dt)
    out = [""] * len(ids)
    for i, piece in zip(kept, _text_pieces([ids[i] for i in kept], dt), strict=True):
        out[i] = piece
    return out


def token_pieces(token_ids: Sequence[int], tokenizer: Any) -> list[str]:
    """The text piece of each id; special ids give "". `"".join` equals decode(skip_special_tokens=True)."""
    return _pieces_with_specials(_as_ids(token_ids), _detokenizer(tokenizer))


def _bounds(span: Span | None) -> tuple[int, int]:
    return (span.start, span.end) if span is not None else (0, 0)


def _role_at(p: int, length: int, reasoning: Span | None, answer: Span | None) -> Role:
    for span, role in ((answer, Role.ACTION), (reasoning, Role.REASONING)):
        if span is not None and (span.start <= p < span.end or (p == length == span.end and span.start <= p)):
            return role
    return Role.FORMAT


def token_roles(token_ids: Sequence[int], tokenizer: Any, prompt_prefix: str = "") -> list[Role]:
    """The role of each generated id (same length as `token_ids`); see the module docstring."""
    fmt = Role.FORMAT
    reasoning_role, action_role = Role.REASONING, Role.ACTION
    ids = _as_ids(token_ids)
    dt = _detokenizer(tokenizer)
    pieces = _pieces_with_specials(ids, dt)
    text = prompt_prefix + "".join(pieces)
    reasoning, answer = find_spans(text)
    (rs, re_), (as_, ae) = _bounds(reasoning), _bounds(answer)
    special = dt.special
    roles: list[Role] = []
    a = len(prompt_prefix)
    for t, piece in zip(ids, pieces, strict=True):
        if t in special:
            roles.append(fmt)
            continue
        b = a + len(piece)
        if a == b:
            role = _role_at(a, len(text), reasoning, answer)
            roles.append(fmt if role is Role.FORMAT else role)
            continue
        if rs <= a and b <= re_:  # the common cases first: wholly inside one span, or outside both
            roles.append(reasoning_role)
        elif as_ <= a and b <= ae:
            roles.append(action_role)
        elif (b <= rs or a >= re_) and (b <= as_ or a >= ae):
            roles.append(fmt)
        else:
            n_r = max(0, min(b, re_) - max(a, rs))
            n_a = max(0, min(b, ae) - max(a, as_))
            n_f = (b - a) - n_r - n_a
            if n_a and n_a >= n_r and n_a >= n_f:
                roles.append(action_role)
            elif n_r and n_r >= n_f:
                roles.append(reasoning_role)
            else:
                roles.append(fmt)
        a = b
    return roles

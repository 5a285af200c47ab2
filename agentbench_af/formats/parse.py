"""Parse a model response into its reasoning and answer spans, with character offsets.

The parser never raises: any string (empty, huge, control characters, unicode noise) yields a
`ParsedResponse`, whose `error` says in one line what was wrong when no usable answer was found.
The tags and their grammar are a format concern, so they live in `formats`, below `api`: the environment
contract (`api.env.TextEnv.step`) reads a response with `parse_response`, the prompts (`formats.prompts`)
teach the tags, and the token roles (`formats.roles`) follow the spans `find_spans` finds.
Left out on purpose: nested tags and several answer spans (the first complete one wins, as RAGEN).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
ACTION_SEPARATOR = "||"
MAX_PARSE_CHARS = 20_000  # longer responses are cut before parsing (a 10 MB string is invalid, not slow)

_ANSWER_RE = re.compile(re.escape(ANSWER_OPEN) + r"(.*?)" + re.escape(ANSWER_CLOSE), re.DOTALL)
_THINK_RE = re.compile(re.escape(THINK_OPEN) + r"(.*?)(?:" + re.escape(THINK_CLOSE) + r"|$)", re.DOTALL)


@dataclass(frozen=True)
class Span:
    """Half-open character range [start, end) of a span's inner text (tags excluded)."""

    start: int
    end: int

    def text(self, source: str) -> str:
        return source[self.start : self.end]


@dataclass(frozen=True)
class ParsedResponse:
    text: str
    reasoning: Span | None
    answer: Span | None
    actions: tuple[str, ...] = field(default_factory=tuple)
    error: str | None = None

    @property
    def reasoning_text(self) -> str:
        return self.reasoning.text(self.text) if self.reasoning else ""

    @property
    def answer_text(self) -> str:
        return self.answer.text(self.text) if self.answer else ""


def _clean_action(raw: str) -> str:
    return " ".join(raw.split())


def find_spans(text: str) -> tuple[Span | None, Span | None]:
    """Locate the reasoning span and the first complete answer span of `text`.

    A `<think>` without `</think>` runs to the answer tag (or to the end). An `<answer>` without
    `</answer>` is still returned as a span running to the end, so token roles can mark it, but
    `parse_response` treats it as invalid.
    """
    answer: Span | None = None
    m = _ANSWER_RE.search(text)
    if m:
        answer = Span(m.start(1), m.end(1))
    else:
        open_at = text.find(ANSWER_OPEN)
        if open_at >= 0:
            answer = Span(open_at + len(ANSWER_OPEN), len(text))
    reasoning: Span | None = None
    think_limit = text.find(ANSWER_OPEN) if answer is not None else len(text)
    if think_limit < 0:
        think_limit = len(text)
    t = _THINK_RE.search(text, 0, think_limit)
    if t:
        reasoning = Span(t.start(1), t.end(1))
    return reasoning, answer


def parse_response(text: object, max_actions: int | None = None) -> ParsedResponse:
    """Parse `text`; `actions` holds the `||`-separated, whitespace-normalised actions.

    `error` is set (and `actions` may still hold what was readable) when: the input is not a
    string, has no complete answer span, the answer is empty, or holds more than `max_actions`.
    """
    if not isinstance(text, str):
        return ParsedResponse(text="", reasoning=None, answer=None, error="response is not text")
    if len(text) > MAX_PARSE_CHARS:
        return ParsedResponse(
            text=text[:MAX_PARSE_CHARS], reasoning=None, answer=None,
            error=f"response too long ({len(text)} characters, limit {MAX_PARSE_CHARS})",
        )
    reasoning, answer = find_spans(text)
    if answer is None or _ANSWER_RE.search(text) is None:
        return ParsedResponse(text, reasoning, answer, error="no <answer>...</answer> found")
    inner = answer.text(text)
    actions = tuple(a for a in (_clean_action(p) for p in inner.split(ACTION_SEPARATOR)) if a)
    if not actions:
        return ParsedResponse(text, reasoning, answer, error="the answer is empty")
    if max_actions is not None and len(actions) > max_actions:
        return ParsedResponse(
            text, reasoning, answer, actions,
            error=f"too many actions ({len(actions)}; at most {max_actions} per turn)",
        )
    return ParsedResponse(text, reasoning, answer, actions)


def format_response(reasoning: str, actions: list[str] | tuple[str, ...]) -> str:
    """The canonical response text for a turn (used for expert demonstrations)."""
    joined = f" {ACTION_SEPARATOR} ".join(actions)
    return f"{THINK_OPEN}{reasoning}{THINK_CLOSE}{ANSWER_OPEN}{joined}{ANSWER_CLOSE}"

"""A seeded generator of malformed model responses, for the contract checker and tests.

Every response in `malformed_responses` must leave an environment's state unchanged: it has no
complete answer span, an empty answer, more actions than the variant allows (built from real action
words, so only the count is wrong), an unknown first action, or characters no action can hold.
Cases where a valid action comes before an invalid one (`Up || Fly`) apply the valid prefix by the
spec, so they are not in this corpus; `prefix_then_unknown` builds them for a separate check.

Left out: non-text inputs (None, bytes), which the checker steps separately; responses that are
valid for some environments and not others (e.g. a free-text command), which no generic corpus can
label.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agentbench_af.formats.parse import ACTION_SEPARATOR, MAX_PARSE_CHARS

HUGE_CHARS = 10 * 1024 * 1024  # the one ~10 MB response of a corpus

#: words no environment accepts as an action (no brackets, digits or game verbs like "look"/"wait")
UNKNOWN_WORDS: tuple[str, ...] = (
    "Fly",
    "Teleport",
    "Moonwalk",
    "xyzzy",
    "Upp",
    "Lefft",
    "Norht",
    "Dwon",
    "Rihgt",
    "UpDown",
    "qwerty",
    "None",
    "null",
    "undefined",
    "NaN",
    "???",
    "...",
    "Up Up Up Up",
    "Left-Right",
    "the best move",
    "I do not know",
    "ACTION",
    "<action>",
    "{}",
)
_NON_SPACE_CONTROLS = tuple(
    chr(c) for c in (*range(0x00, 0x09), *range(0x0E, 0x1C), 0x7F, *range(0x80, 0x85))
)
_WHITESPACE = (" ", "\t", "\n", "\r\n", "\u3000", "\u00a0", "\u2028", "\x0b", "\x0c", "\x1c")
_NOISE_RANGES = (
    (0x21, 0x7E),
    (0xA1, 0x24F),
    (0x370, 0x3FF),
    (0x400, 0x4FF),
    (0x4E00, 0x4FFF),
    (0x1F300, 0x1F64F),
)


@dataclass(frozen=True)
class MalformedResponse:
    """One malformed response and the kind of mistake it makes (for error messages)."""

    kind: str
    text: str

    def preview(self, width: int = 80) -> str:
        """A short printable view of the text (huge or binary-looking texts stay readable)."""
        shown = repr(self.text[:width])
        return shown + (f"... ({len(self.text)} chars)" if len(self.text) > width else "")


def _ans(inner: str) -> str:
    return f"<answer>{inner}</answer>"


def _think(rng: random.Random) -> str:
    return "<think>" + rng.choice(("I should move.", "Let me think step by step.", "", "hmm")) + "</think>"


def _join(words: Sequence[str]) -> str:
    return f" {ACTION_SEPARATOR} ".join(words)


def _noise(rng: random.Random, n: int) -> str:
    """`n` random characters that always include at least one non-ASCII one."""
    chars = []
    for _ in range(n):
        lo, hi = rng.choice(_NOISE_RANGES)
        chars.append(chr(rng.randint(lo, hi)))
    chars[rng.randrange(n)] = chr(rng.randint(0xA1, 0x24F))
    return "".join(chars).replace("<", "‹").replace("|", "¦")  # no accidental tags or separators


def unknown_word(rng: random.Random) -> str:
    """An action word that no environment accepts."""
    return rng.choice(UNKNOWN_WORDS)


class _Builders:
    """One builder per kind: `(rng) -> text`. Real action words come from `words`."""

    def __init__(self, words: Sequence[str], max_actions: int) -> None:
        self.words = tuple(w for w in words if w.strip()) or ("Up",)
        self.max_actions = max_actions
        self.huge_made = False

    def word(self, rng: random.Random) -> str:
        return rng.choice(self.words)

    def missing_tags(self, rng: random.Random) -> str:
        w = self.word(rng)
        return rng.choice(
            (w, _join([w, self.word(rng)]), f"I will go {w}.", f"{_think(rng)}{w}", f"answer: {w}")
        )

    def think_only(self, rng: random.Random) -> str:
        return rng.choice((f"<think>{self.word(rng)}</think>", f"<think>I choose {self.word(rng)}"))

    def unclosed_answer(self, rng: random.Random) -> str:
        w = self.word(rng)
        return _think(rng) + rng.choice(
            (f"<answer>{w}", f"<answer>{w}</answer", f"<answer>{w}</ answer>", f"<answer>{w}<answer>")
        )

    def unopened_answer(self, rng: random.Random) -> str:
        return rng.choice(
            (f"{self.word(rng)}</answer>", f"{_think(rng)}{self.word(rng)}</answer>", "answer>Up</answer>")
        )

    def empty_answer(self, rng: random.Random) -> str:
        inner = rng.choice(("", " ", "\n\t ", ACTION_SEPARATOR, " || || ", "||||", "\u3000"))
        return _think(rng) + _ans(inner)

    def unknown_action(self, rng: random.Random) -> str:
        first = unknown_word(rng)
        if self.max_actions >= 2 and rng.random() < 0.4:  # an unknown first action: nothing is applied
            return _think(rng) + _ans(_join([first, self.word(rng)]))
        return _think(rng) + _ans(first)

    def too_many_actions(self, rng: random.Random) -> str:
        n = self.max_actions + 1 + rng.randrange(3)
        return _think(rng) + _ans(_join([self.word(rng) for _ in range(n)]))

    def empty_string(self, rng: random.Random) -> str:
        return ""

    def whitespace_only(self, rng: random.Random) -> str:
        return "".join(rng.choice(_WHITESPACE) for _ in range(rng.randint(1, 40)))

    def none_like(self, rng: random.Random) -> str:
        return rng.choice(
            ("None", "null", "undefined", "NaN", "[]", "{}", "<answer>None</answer>", "<answer>null</answer>")
        )

    def huge(self, rng: random.Random) -> str:
        if not self.huge_made:  # the first one is ~10 MB, with a valid answer in front (still too long)
            self.huge_made = True
            return _ans(self.word(rng)) + "x" * HUGE_CHARS
        n = MAX_PARSE_CHARS + 1 + rng.randrange(4 * MAX_PARSE_CHARS)
        body = rng.choice(("a", "ab ", "||", "<think>", "\u00e9"))
        return (_think(rng) + _ans(self.word(rng)) + body * n)[: max(n, MAX_PARSE_CHARS + 1)]

    def control_chars(self, rng: random.Random) -> str:
        c = rng.choice(_NON_SPACE_CONTROLS)
        w = self.word(rng)
        inner = rng.choice((w + c, c + w, w[: len(w) // 2] + c + w[len(w) // 2 :], c * 5))
        return rng.choice((_think(rng) + _ans(inner), c * 10, f"{w}{c}"))

    def unicode_noise(self, rng: random.Random) -> str:
        noise = _noise(rng, rng.randint(1, 200))
        return rng.choice((noise, _ans(noise), _think(rng) + _ans(_noise(rng, rng.randint(1, 40)))))

    def wrong_order(self, rng: random.Random) -> str:
        w = self.word(rng)
        return rng.choice(
            (f"</answer>{w}<answer>", f"</think>{w}<think>", f"</answer><think>x</think>{w}<answer>")
        )

    def nested_tags(self, rng: random.Random) -> str:
        w = self.word(rng)
        return rng.choice(
            (_ans(_ans(w)), _ans(f"<think>{w}</think>"), _ans(f"<answer>{w}"), f"<answer><think>{w}</answer>")
        )

    def wrong_tag_case(self, rng: random.Random) -> str:
        w = self.word(rng)
        return rng.choice(
            (
                f"<Answer>{w}</Answer>",
                f"<ANSWER>{w}</ANSWER>",
                f"<answer >{w}</answer>",
                f"[answer]{w}[/answer]",
                f"<ans>{w}</ans>",
            )
        )

    def bad_separator(self, rng: random.Random) -> str:
        """`A | B |`: a separator that is not `||`, and a trailing one, so no bracketed argument can swallow it."""
        sep = rng.choice((" | ", " ; ", " && ", " / ", "|"))
        return _think(rng) + _ans(sep.join([self.word(rng), self.word(rng)]) + sep.rstrip())


KINDS: tuple[str, ...] = (
    "missing_tags",
    "think_only",
    "unclosed_answer",
    "unopened_answer",
    "empty_answer",
    "unknown_action",
    "too_many_actions",
    "empty_string",
    "whitespace_only",
    "none_like",
    "huge",
    "control_chars",
    "unicode_noise",
    "wrong_order",
    "nested_tags",
    "wrong_tag_case",
    "bad_separator",
)


def malformed_responses(
    n: int, *, action_words: Sequence[str], max_actions_per_turn: int, seed: int = 0, huge: bool = True
) -> list[MalformedResponse]:
    """`n` malformed responses cycling through `KINDS` (all kinds appear once `n >= len(KINDS)`).

    Deterministic in `seed`. With `huge`, the first `huge` case is ~10 MB and later ones are a few
    times `MAX_PARSE_CHARS`; without it, that kind is left out (for fast, small corpora).
    """
    rng = random.Random(seed)
    builders = _Builders(action_words, max_actions_per_turn)
    kinds = KINDS if huge else tuple(k for k in KINDS if k != "huge")
    out: list[MalformedResponse] = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        build: Callable[[random.Random], str] = getattr(builders, kind)
        out.append(MalformedResponse(kind, build(rng)))
    return out


def prefix_then_unknown(valid_actions: Sequence[str], rng: random.Random) -> str:
    """`<answer>valid... || Unknown</answer>`: the valid prefix is applied, then the turn is invalid."""
    return _ans(_join([*valid_actions, unknown_word(rng)]))

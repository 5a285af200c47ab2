"""Multi-turn contexts as token ids, built from a tokenizer's chat template without re-tokenising output.

`ChatFormat.from_tokenizer(tokenizer)` renders the tokenizer's own Jinja chat template (ours, or a
Hugging Face model's such as Qwen2.5's ChatML) on placeholder messages and cuts the rendering at the
placeholders, so the pieces of any template are found the same way. A context for turn k is then

    prefix_ids(system, user_1) + response_1 + next_turn_ids(user_2) + response_2 + ... + next_turn_ids(user_k)

where each `response_i` is the list of ids the policy actually sampled, ending with one of
`end_of_turn_ids` (append `end_of_turn_ids` yourself when a response was cut by the token limit).

- `prefix_ids(system, first_user, prompt_prefix="")`: the template up to and including the first
  assistant header, then `prompt_prefix` (text forced at the start of every response, e.g. "<think>";
  it is part of the prompt, and `formats.roles.token_roles` must get the same string).
- `next_turn_ids(user, prompt_prefix="")`: what follows the assistant's end-of-turn token: the rest of
  the assistant message's closing (ChatML's newline), the user message, the next assistant header,
  then `prompt_prefix`.
- `end_of_turn_ids`: the ids that end an assistant message (`<|im_end|>` for Qwen, `<|eos|>` for ours);
  pass them as the generation's stop ids.

- `response_ids(text, prompt_prefix="")`: a demonstration's response text as ids, tokenised in the
  position it takes in the rendered conversation (for SFT; sampled responses keep their own ids).

The `*_text` methods return the same pieces as text. Every piece is tokenised as it reads after the
text before it (the end-of-turn token, or the assistant header), so that SentencePiece-style
tokenizers do not add their start-of-input space; a piece boundary is a token boundary, which matches
tokenising the whole rendering wherever the template puts a special token there (ours and ChatML do). Left out: tool calls, multimodal content, and
templates that rewrite earlier turns (e.g. dropping past reasoning): `from_tokenizer` detects those
and raises, since a context made of sampled ids cannot follow them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_SYS, _USER1, _ASSISTANT, _USER2 = "zqSYSTEMzq", "zqUSERONEzq", "zqASSISTANTzq", "zqUSERTWOzq"


def _render(tokenizer: Any, messages: list[dict[str, str]], add_generation_prompt: bool) -> str:
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=add_generation_prompt, tokenize=False)
    if not isinstance(text, str):
        raise TypeError(f"apply_chat_template(tokenize=False) returned {type(text).__name__}, not text")
    return text


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False)) if text else []


def _encode_after(tokenizer: Any, context: str, text: str) -> list[int]:
    """Ids of `text` as tokenised right after `context` (SentencePiece-style tokenizers treat the start
    of an input specially, e.g. a leading "\u2581"); plain encoding when the context ids do not split off."""
    head = _encode(tokenizer, context)
    both = _encode(tokenizer, context + text)
    return both[len(head) :] if both[: len(head)] == head else _encode(tokenizer, text)


def _find_end_of_turn(tokenizer: Any, rest: str) -> str:
    """The longest special or added token that starts `rest` (the text right after an assistant reply)."""
    candidates = set(getattr(tokenizer, "all_special_tokens", []))
    candidates |= set(tokenizer.get_added_vocab())
    found = [t for t in candidates if t and rest.startswith(t)]
    if not found:
        raise ValueError(
            "the chat template puts no special token right after an assistant message "
            f"(it continues with {rest[:40]!r}); pass end_of_turn=... to ChatFormat.from_tokenizer"
        )
    return max(found, key=len)


@dataclass(frozen=True, eq=False)
class ChatFormat:
    """Token-id pieces of one tokenizer's chat template (build with `ChatFormat.from_tokenizer`)."""

    tokenizer: Any
    end_of_turn_text: str  # the text of the token(s) that end an assistant message
    end_of_turn_ids: tuple[int, ...]
    turn_open: str  # after the end-of-turn token, up to the user content
    turn_close: str  # after the user content, up to and including the assistant header

    @classmethod
    def from_tokenizer(cls, tokenizer: Any, end_of_turn: str | None = None) -> ChatFormat:
        """Derive the pieces from `tokenizer.chat_template`; `end_of_turn` overrides the detected token."""
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("the tokenizer has no chat_template; set one (a Jinja string) before using ChatFormat")
        head_msgs = [{"role": "system", "content": _SYS}, {"role": "user", "content": _USER1}]
        head = _render(tokenizer, head_msgs, True)
        full = _render(
            tokenizer,
            head_msgs + [{"role": "assistant", "content": _ASSISTANT}, {"role": "user", "content": _USER2}],
            True,
        )
        if not full.startswith(head + _ASSISTANT):
            raise ValueError(
                "the chat template is not incremental: rendering a later turn changes the text before it "
                "(or the assistant content is not placed right after the generation prompt)"
            )
        rest = full[len(head) + len(_ASSISTANT) :]
        eot = end_of_turn if end_of_turn is not None else _find_end_of_turn(tokenizer, rest)
        if not eot or not rest.startswith(eot):
            raise ValueError(f"end_of_turn {eot!r} does not follow the assistant message (text: {rest[:40]!r})")
        after = rest[len(eot) :]
        if after.count(_USER2) != 1:
            raise ValueError("the chat template does not place the user message verbatim")
        turn_open, turn_close = after.split(_USER2)
        eot_ids = tuple(_encode(tokenizer, eot))
        return cls(tokenizer, eot, eot_ids, turn_open, turn_close)

    # ----------------------------------------------------------------- text pieces
    def prefix_text(self, system: str | None, first_user: str, prompt_prefix: str = "") -> str:
        messages = [{"role": "system", "content": system}] if system is not None else []
        messages.append({"role": "user", "content": first_user})
        return _render(self.tokenizer, messages, True) + prompt_prefix

    def next_turn_text(self, user: str, prompt_prefix: str = "") -> str:
        return self.turn_open + user + self.turn_close + prompt_prefix

    # ----------------------------------------------------------------- id pieces
    def prefix_ids(self, system: str | None, first_user: str, prompt_prefix: str = "") -> list[int]:
        """Ids of the conversation start through the first assistant header (and `prompt_prefix`)."""
        return _encode(self.tokenizer, self.prefix_text(system, first_user, prompt_prefix))

    def next_turn_ids(self, user: str, prompt_prefix: str = "") -> list[int]:
        """Ids to append after a response's end-of-turn id to start the next turn."""
        return _encode_after(self.tokenizer, self.end_of_turn_text, self.next_turn_text(user, prompt_prefix))

    def response_ids(self, text: str, prompt_prefix: str = "") -> list[int]:
        """Ids of a response text written by someone else (an expert demonstration), tokenised as it
        reads after the assistant header and `prompt_prefix` (`text` excludes the prefix), without the
        end-of-turn ids. Never use it on sampled text: keep the sampled ids."""
        return _encode_after(self.tokenizer, self.turn_close + prompt_prefix, text)

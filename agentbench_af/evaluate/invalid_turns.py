"""Why turns were invalid: the environment's reasons counted, and the responses cut at the token limit.

    b = invalid_breakdown(trajs, max_new_tokens=96)
    b.by_reason     # {"no <answer>...</answer> found": 216, "row # col # holds the given #, ...": 69}
    b.at_limit      # responses that used every one of the max_new_tokens (cut before they ended)
Digits in a reason become `#`, so reasons that differ only in a cell or a number count together. A
response at the limit was cut, whatever its text: a turn with no `<answer>` and at the limit ran out of
tokens rather than forgetting the tag.
Left out: reasons of other languages' parsers; per-seed breakdowns.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from agentbench_af.rollout.types import Trajectory

_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class InvalidBreakdown:
    turns: int
    invalid: int
    at_limit: int  # responses with max_new_tokens tokens, valid or not
    invalid_at_limit: int
    by_reason: dict[str, int] = field(default_factory=dict)  # most frequent first

    def to_dict(self) -> dict:
        return {"turns": self.turns, "invalid": self.invalid, "at_limit": self.at_limit,
                "invalid_at_limit": self.invalid_at_limit, "by_reason": dict(self.by_reason)}


def reason_key(reason: str) -> str:
    """An invalid reason with each run of digits replaced by `#`."""
    return _DIGITS.sub("#", reason.strip()) or "(no reason given)"


def invalid_breakdown(trajs: list[Trajectory], max_new_tokens: int) -> InvalidBreakdown:
    turns = [t for tr in trajs for t in tr.turns]
    cut = [len(t.response_ids) >= max_new_tokens for t in turns]
    reasons = Counter(reason_key(t.invalid_reason) for t in turns if not t.valid)
    return InvalidBreakdown(
        turns=len(turns), invalid=sum(not t.valid for t in turns), at_limit=sum(cut),
        invalid_at_limit=sum(c and not t.valid for t, c in zip(turns, cut, strict=True)),
        by_reason=dict(reasons.most_common()))

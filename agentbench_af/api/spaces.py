"""A Gymnasium space of arbitrary strings (gymnasium's `Text` only admits a fixed charset)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


class TextSpace(gym.Space[str]):
    """Any Python `str`. `sample()` returns a short random ASCII string."""

    def __init__(self, max_length: int = 1 << 24, seed: int | None = None) -> None:
        self.max_length = max_length
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        n = int(self.np_random.integers(0, 32))
        codes = self.np_random.integers(32, 127, size=n)
        return "".join(chr(int(c)) for c in codes)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return "TextSpace()"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TextSpace)

"""One generated TextWorld game in play: textworld's engine with the infos the text env needs.

`TextWorldGame` wraps the environment `textworld.start` builds (a Z-machine via jericho plus
textworld's state tracking), keeps it across games (loading another game file into the same engine),
seeds the emulator, and cleans the text (the ASCII-art banner, runs of blank lines, the prompt and
status line, the closing "RESTART, RESTORE ..." question). Left out: textworld's gym wrapper, batched envs, and the
intermediate-reward shaping (the score delta is the reward).
"""

from __future__ import annotations

import contextlib
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import textworld

from agentbench_af.api.command_env import GameState

INFOS = textworld.EnvInfos(
    admissible_commands=True, won=True, lost=True, score=True, max_score=True, policy_commands=True,
    objective=True,
)
EMULATOR_SEED = 1  # the Z-machine's random generator: fixed, so a command sequence replays exactly
_BANNER = re.compile(r"\A(?:[ \t_|$\\/<>]*\n)+")  # leading blank or ASCII-art lines
_BLANKS = re.compile(r"\n[ \t]*(?:\n[ \t]*)+\n")
_CLOSING = re.compile(r"\s*Would you like to RESTART, RESTORE.*\Z", re.S)
_PROMPT = re.compile(r"\n>[^\n]*\Z")  # the trailing prompt, with the status line (room, score/moves) after it


@contextlib.contextmanager
def quiet_engine() -> Iterator[None]:
    """Silence jericho's warning that textworld games are not in its list of fully supported games."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is not fully supported", category=UserWarning)
        yield


def clean_text(text: str) -> str:
    """Game text without the banner, the end-of-game prompt, trailing spaces and extra blank lines."""
    text = _PROMPT.sub("", _CLOSING.sub("", _BANNER.sub("", "\n" + text.rstrip())))
    return _BLANKS.sub("\n\n", "\n".join(line.rstrip() for line in text.splitlines())).strip()


class TextWorldGame(GameState):
    """Load a game file (`.z8` with its `.json` beside it), start it, step it by exact command."""

    def __init__(self) -> None:
        self._env: Any = None
        self._state: Any = None
        self.path = ""

    def load(self, path: str | Path) -> None:
        """Start the game at `path` from its beginning (the engine is reused across games)."""
        path = str(path)
        with quiet_engine():
            if self._env is None:
                self._env = textworld.start(path, INFOS)
            elif path != self.path:
                self._env.load(path)
            self.path = path
            self._env.seed(EMULATOR_SEED)  # jericho forgets the seed on load; it takes effect at reset
            self._state = self._env.reset()

    def _clean_feedback(self, raw: Any) -> str:
        return clean_text(str(raw or ""))

    @property
    def objective(self) -> str:
        return clean_text(str(self._require()["objective"] or ""))

    @property
    def policy(self) -> list[str]:
        """textworld's winning commands from the current state ([] when won, lost or out of reach)."""
        return list(self._require()["policy_commands"] or [])

    @property
    def lost(self) -> bool:
        return bool(self._require()["lost"])

    @property
    def score(self) -> int:
        return int(self._require()["score"] or 0)

    @property
    def max_score(self) -> int:
        return int(self._require()["max_score"] or 0)

    def step(self, command: str) -> bool:
        """Apply an admissible command (exact text); return whether a fact of the world changed."""
        state = self._require()
        if state["won"] or state["lost"]:
            raise RuntimeError("the game is over")
        if command not in state["admissible_commands"]:
            raise ValueError(f"{command!r} is not admissible")
        before = frozenset(state["_facts"])
        self._state, _, _ = self._env.step(command)
        return frozenset(self._state["_facts"]) != before

    def close(self) -> None:
        """Stop the engine (idempotent)."""
        if self._env is not None:
            self._env.close()
        self._env, self._state, self.path = None, None, ""

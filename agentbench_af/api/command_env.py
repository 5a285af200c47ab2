"""Environments over a text game that lists its admissible commands (TextWorld, ALFWorld).

One command per turn, matched case-insensitively (whitespace collapsed) against the game's admissible
commands; any other text is an invalid turn that never reaches the game. The reward is the change of
`_score(game)` (default: 1 when the game becomes won); success is `game.won`, failure `game.lost` where
the game has it. Subclasses say which game file a seed plays (`_game_file`), build the engine wrapper
(`_make_game`), and render the state and the expert. Left out: free-text commands outside the
admissible list (every such game here lists its commands).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Protocol, TypeVar

from agentbench_af.api.env import TextEnv
from agentbench_af.api.types import ActionOutcome, Variant

V = TypeVar("V", bound=Variant)


class CommandGame(Protocol):
    """What `CommandGameEnv` needs of a game wrapper."""

    @property
    def loaded(self) -> bool: ...

    @property
    def admissible(self) -> list[str]: ...

    @property
    def won(self) -> bool: ...

    def load(self, path: str | Path) -> None: ...

    def step(self, command: str) -> bool: ...

    def close(self) -> None: ...


class GameState(ABC):
    """The state half of a game wrapper over a textworld-style engine, whose state is a mapping with
    `feedback`, `admissible_commands` and `won`: `_state` is None until a game is loaded. Subclasses load,
    step and close the engine and say how the engine's feedback text is cleaned."""

    _state: Any = None

    def _require(self) -> Any:
        if self._state is None:
            raise RuntimeError("no game started: call load() first")
        return self._state

    @abstractmethod
    def _clean_feedback(self, raw: Any) -> str:
        """The engine's raw feedback as the observation text."""

    @property
    def loaded(self) -> bool:
        return self._state is not None

    @property
    def feedback(self) -> str:
        return self._clean_feedback(self._require().feedback)

    @property
    def admissible(self) -> list[str]:
        return list(self._require()["admissible_commands"])

    @property
    def won(self) -> bool:
        return bool(self._require()["won"])


def normalise_command(text: str) -> str:
    return " ".join(text.lower().split())


class CommandGameEnv(TextEnv[V]):
    def __init__(self, variant: V, render_mode: str | None = "ansi") -> None:
        super().__init__(variant, render_mode)
        self._game: CommandGame | None = None
        self._lookup: dict[str, str] = {}  # normalised command -> the game's spelling
        self.game_file = ""

    @abstractmethod
    def _game_file(self, seed: int) -> str | Path:
        """The game file seed `seed` plays (generated or cached on first use)."""

    @abstractmethod
    def _make_game(self) -> CommandGame:
        """A fresh engine wrapper (built once per environment and reused across games)."""

    def _score(self, game: CommandGame) -> float:
        return 1.0 if game.won else 0.0

    def _new_game(self, seed: int) -> None:
        path = self._game_file(seed)
        if self._game is None:
            self._game = self._make_game()
        self._game.load(path)
        self.game_file = str(path)
        self._lookup = {normalise_command(c): c for c in self._game.admissible}

    def _loaded(self) -> CommandGame | None:
        return self._game if self._game is not None and self._game.loaded else None

    def _apply_action(self, action: str) -> ActionOutcome:
        game = self._loaded()
        command = self._lookup.get(normalise_command(action))
        if game is None or command is None:
            return ActionOutcome.invalid(f"{action[:60]!r} is not one of the available actions")
        before = self._score(game)
        changed = game.step(command)
        self._lookup = {normalise_command(c): c for c in game.admissible}
        return ActionOutcome(valid=True, reward=float(self._score(game) - before), effective=changed)

    @property
    def is_success(self) -> bool:
        game = self._loaded()
        return bool(game is not None and game.won)

    @property
    def is_failure(self) -> bool:
        game = self._loaded()
        return bool(game is not None and getattr(game, "lost", False))

    def admissible_actions(self) -> list[str] | None:
        game = self._loaded()
        return game.admissible if game is not None else None

    def close(self) -> None:
        if self._game is not None:
            self._game.close()
            self._game = None
        super().close()

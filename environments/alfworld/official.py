"""The official ALFWorld task files, when a user has them (`alfworld-download`, which needs a network).

Layout: `$ALFWORLD_DATA/json_2.1.1/{train,valid_seen,valid_unseen}/<task>/<trial>/game.tw-pddl`, with
`traj_data.json` beside each game (its `task_type`; without it the type is the `<task>` folder name
up to the first "-"). Like ALFWorld's own loader, games under a folder naming `movable` or `Sliced`
(task kinds the text game does not support) and games marked `"solvable": false` are skipped.
`ALFWORLD_DATA` defaults to `~/.cache/alfworld`, as in alfworld. Left out: re-generating game files
from `initial_state.pddl` (alfworld-generate does that) and human-annotated goal sentences.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

from agentbench_af.api import DataUnavailable
from agentbench_af.api.game_cache import read_json

DATA_FOLDER = "json_2.1.1"


def official_root() -> Path:
    base = os.environ.get("ALFWORLD_DATA") or os.path.join(os.path.expanduser("~"), ".cache", "alfworld")
    return Path(base).expanduser() / DATA_FOLDER


def _task_type(game: Path) -> str:
    traj = game.parent / "traj_data.json"
    if traj.exists():
        try:
            return str(json.loads(traj.read_text())["task_type"])
        except (OSError, ValueError, KeyError):
            pass
    return game.parent.parent.name.split("-", 1)[0]


@functools.cache
def _index(split_dir: str) -> tuple[tuple[str, str], ...]:
    """(task type, game file) for every supported game of a split folder, sorted by path."""
    root = Path(split_dir)
    games = sorted(p for p in root.glob("*/*/game.tw-pddl") if "movable" not in str(p) and "Sliced" not in str(p))
    return tuple((_task_type(p), str(p)) for p in games)


def official_games(split: str, task_type: str | None = None, root: Path | None = None) -> list[Path]:
    """The game files of a split (optionally of one ALFWorld task type), sorted by path."""
    split_dir = (root or official_root()) / split
    if not split_dir.is_dir():
        raise DataUnavailable(
            f"no official ALFWorld games at {split_dir}: set ALFWORLD_DATA to the folder that holds "
            f"{DATA_FOLDER}/ (alfworld-download puts it in ~/.cache/alfworld), or use source='generated'"
        )
    return [Path(p) for t, p in _index(str(split_dir)) if task_type is None or t == task_type]


def official_game(split: str, task_type: str | None, index: int, root: Path | None = None) -> Path:
    """The `index`-th (modulo the count) solvable game, skipping files marked unsolvable."""
    games = official_games(split, task_type, root)
    if not games:
        raise FileNotFoundError(f"no official {task_type or 'ALFWorld'} games in split {split!r}")
    for k in range(len(games)):
        path = games[(index + k) % len(games)]
        data = read_json(path)
        if data is not None and data.get("solvable") is not False and data.get("pddl_problem"):
            return path
    raise FileNotFoundError(f"every official {task_type or 'ALFWorld'} game in split {split!r} is unsolvable")

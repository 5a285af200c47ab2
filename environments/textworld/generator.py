"""Generate TextWorld games with textworld's challenge generators, checked winnable, cached on disk.

For (challenge, level, seed): derive textworld's seed from (seed, challenge, level, attempt,
`GENERATOR_VERSION`), call the challenge's `make(settings, options)`, compile the game with the
Inform7 compiler that ships in the textworld wheel, and play textworld's winning policy in the
compiled game. A draw textworld cannot build (no quest of that length from the drawn map) or whose
policy does not win within `plan_limit(challenge, level)` commands is drawn again (the next attempt).

Cache: `$AGENTBENCH_AF_CACHE/textworld/gen-v1/<challenge>/L<level>/<seed>/` holding `game.z8`, the
`game.json` textworld reads beside it, and `meta.json` (written last). A folder is built under a
temporary name and renamed into place, so workers that generate the same game at once each end up
with one whole folder. Generation is deterministic per seed in what is played; textworld orders
some equivalent rules by Python's string hashing, so files from two processes can differ in bytes.
Left out: tw-cooking's food splits (train/valid/test foods) and its limited-inventory (`drop`)
skill, for which textworld builds no walkthrough.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import numpy as np
import textworld
import textworld.challenges
from textworld.generator import QuestGenerationError, compile_game

from agentbench_af.api.game_cache import cache_root, discard_dir, read_json, write_dir_atomic
from agentbench_af.environments.textworld.game import TextWorldGame, quiet_engine
from agentbench_af.environments.textworld.variants import CHALLENGES, challenge_settings, plan_limit

GENERATOR_VERSION = 1
MAX_DRAWS = 20
GAME_FILE, META_FILE = "game.z8", "meta.json"
_CHALLENGE_INDEX = {c: i for i, c in enumerate(CHALLENGES)}
_LOCK = threading.Lock()  # textworld's generator uses a global random generator: one game at a time


def textworld_seed(challenge: str, level: int, seed: int, attempt: int) -> int:
    """The seed handed to textworld (it draws its map, object, quest and grammar seeds from it)."""
    entropy = [int(seed), _CHALLENGE_INDEX[challenge], int(level), int(attempt), GENERATOR_VERSION]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0] % (2**31))


def _make(challenge: str, level: int, tw_seed: int, folder: Path) -> Path:
    """Generate and compile one draw into `folder/game.z8` (and `game.json`)."""
    name, settings = challenge_settings(challenge, level)
    options = textworld.GameOptions()
    options.seeds = tw_seed
    options.path = str(folder / GAME_FILE)
    options.force_recompile = True
    textworld.g_rng.set_seed(tw_seed)
    with quiet_engine():  # tw-cooking plays its walkthrough in a compiled copy while building the quest
        game = textworld.challenges.CHALLENGES[name][1](dict(settings), options)
    path = Path(compile_game(game, options))
    path.with_suffix(".ni").unlink(missing_ok=True)  # the Inform7 source: not needed to play
    return path


def _policy_run(path: Path, max_steps: int) -> tuple[bool, list[str], int]:
    """(won, commands played, max score) when following textworld's winning policy from the start."""
    game, played = TextWorldGame(), []
    try:
        game.load(path)
        while not (game.won or game.lost) and game.policy and len(played) < max_steps:
            played.append(game.policy[0])
            game.step(played[-1])
        return game.won, played, game.max_score
    finally:
        game.close()


def generate_game(challenge: str, level: int, seed: int, folder: Path) -> dict[str, Any]:
    """Write the game for (challenge, level, seed) into `folder`; return its metadata (also in meta.json)."""
    challenge_settings(challenge, level)  # checks the level
    max_steps = plan_limit(challenge, level)
    with _LOCK:
        for attempt in range(MAX_DRAWS):
            tw_seed = textworld_seed(challenge, level, seed, attempt)
            try:
                path = _make(challenge, level, tw_seed, folder)
            except QuestGenerationError:
                continue
            won, plan, max_score = _policy_run(path, max_steps)
            if won and plan:
                meta = {
                    "challenge": challenge, "level": int(level), "seed": int(seed), "version": GENERATOR_VERSION,
                    "attempt": attempt, "textworld_seed": tw_seed, "textworld": textworld.__version__,
                    "walkthrough": plan, "max_score": max_score, "plan_limit": max_steps,
                }
                (folder / META_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")
                return meta
    raise RuntimeError(f"no winnable {challenge} level {level} game for seed {seed} in {MAX_DRAWS} draws")


def game_dir(challenge: str, level: int, seed: int) -> Path:
    return cache_root("textworld") / f"gen-v{GENERATOR_VERSION}" / challenge / f"L{int(level)}" / str(int(seed))


def cached_meta(folder: Path, challenge: str, level: int, seed: int) -> dict[str, Any] | None:
    """The metadata of a complete cached game for these keys (None: missing, damaged or another game)."""
    meta = read_json(folder / META_FILE)
    if not meta or not (folder / GAME_FILE).is_file() or not (folder / "game.json").is_file():
        return None
    keys = (meta.get("challenge"), meta.get("level"), meta.get("seed"), meta.get("version"))
    return meta if keys == (challenge, int(level), int(seed), GENERATOR_VERSION) else None


def get_game_file(challenge: str, level: int, seed: int) -> Path:
    """The cached `game.z8` for (challenge, level, seed), generated and published atomically when missing."""
    folder = game_dir(challenge, level, seed)
    if cached_meta(folder, challenge, level, seed) is None:
        if folder.exists() and cached_meta(folder, challenge, level, seed) is None:
            discard_dir(folder)  # damaged or stale (a whole folder is never half written)
        write_dir_atomic(folder, lambda tmp: generate_game(challenge, level, seed, tmp))
        if cached_meta(folder, challenge, level, seed) is None:
            raise RuntimeError(f"the cached game at {folder} is not valid after generation")
    return folder / GAME_FILE

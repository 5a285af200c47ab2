"""TextWorld: generated games (determinism, cache reuse, two processes racing), the expert, invalid
turns, losing, the text, and the missing-extra message. Games are generated into a temporary cache."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("textworld")

from agentbench_af.api import list_envs, make  # noqa: E402
from agentbench_af.environments.textworld import generator  # noqa: E402
from agentbench_af.environments.textworld.env import TextWorldEnv  # noqa: E402
from agentbench_af.environments.textworld.game import TextWorldGame, clean_text  # noqa: E402
from agentbench_af.environments.textworld.generator import (  # noqa: E402
    cached_meta,
    game_dir,
    generate_game,
    get_game_file,
)
from agentbench_af.environments.textworld.variants import CHALLENGES, TextWorldVariant  # noqa: E402
from agentbench_af.formats.parse import format_response  # noqa: E402

pytestmark = pytest.mark.textworld
#: the cheapest level of each challenge, and one training and one evaluation seed
EASY = {"cooking": "TextWorld-cooking-L1-v0", "treasure_hunter": "TextWorld-treasure-L5-v0",
        "coin_collector": "TextWorld-coin-L5-v0"}
SEEDS = (0, 1_000_000)


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AGENTBENCH_AF_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def envs():
    built = {c: make(env_id) for c, env_id in EASY.items()}
    yield built
    for env in built.values():
        env.close()


def play_expert(env: TextWorldEnv, seed: int) -> tuple[bool, float, int, list[str]]:
    """(success, total reward, turns, observations) of one expert episode."""
    obs, _ = env.reset(seed=seed)
    total, turns, done, info, seen = 0.0, 0, False, {}, [obs]
    while not done:
        turn = env.expert_turn()
        obs, reward, terminated, truncated, info = env.step(format_response(turn.reasoning, list(turn.actions)))
        total, turns, done = total + reward, turns + 1, terminated or truncated
        seen.append(obs)
    return bool(info["success"]), total, turns, seen


def policy_transcript(path: Path) -> list[str]:
    """The text seen when following textworld's winning policy in a game file (ends with the win)."""
    game, seen = TextWorldGame(), []
    try:
        game.load(path)
        seen.append(game.feedback)
        while not game.won and game.policy:
            seen.append(game.policy[0])
            game.step(game.policy[0])
            seen.append(game.feedback)
        assert game.won
        return seen
    finally:
        game.close()


def test_ids_listed_and_variant_checked() -> None:
    ids = [i for i in list_envs() if i.startswith("TextWorld-")]
    assert set(EASY.values()) <= set(ids) and len(ids) == 9
    for short in ("cooking", "treasure", "coin"):
        assert sum(i.startswith(f"TextWorld-{short}-L") for i in ids) == 3
    for bad in ({"challenge": "zork"}, {"challenge": "cooking", "level": 9}, {"challenge": "treasure_hunter",
                "level": 31}, {"challenge": "coin_collector", "level": 260}, {"max_actions_per_turn": 2}):
        with pytest.raises(ValueError):
            TextWorldVariant(**bad)


def test_ids_list_without_the_extra_and_make_says_what_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['textworld'] = None  # as if the extra were not installed\n"
        "from agentbench_af.api import list_envs, make\n"
        "assert 'TextWorld-coin-L5-v0' in list_envs()\n"
        "try:\n    make('TextWorld-coin-L5-v0')\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'agentbench-af[textworld]'" in out.stdout


@pytest.mark.parametrize("challenge", list(CHALLENGES))
def test_expert_wins_and_reward_is_the_score(envs, challenge: str) -> None:
    env = envs[challenge]
    for seed in SEEDS:
        success, total, turns, _ = play_expert(env, seed)
        meta = cached_meta(game_dir(challenge, env.variant.level, seed), challenge, env.variant.level, seed)
        assert meta is not None and env.game_file == str(game_dir(challenge, env.variant.level, seed) / "game.z8")
        assert success and total == meta["max_score"] > 0, (challenge, seed)
        assert turns == len(meta["walkthrough"]) <= env.variant.max_actions_per_episode


def test_generation_is_deterministic_per_seed(envs, tmp_path: Path) -> None:
    """The same (challenge, level, seed) gives the same game, in this process and in one with another
    string-hash seed; another seed gives another game."""
    for challenge, env in envs.items():
        level = env.variant.level
        cached = get_game_file(challenge, level, 0)
        fresh = tmp_path / challenge
        fresh.mkdir()
        meta = generate_game(challenge, level, 0, fresh)
        assert meta == cached_meta(cached.parent, challenge, level, 0)
        assert policy_transcript(fresh / "game.z8") == policy_transcript(cached)
        assert policy_transcript(get_game_file(challenge, level, 1)) != policy_transcript(cached)
    code = (
        "import sys, json\n"
        "from pathlib import Path\n"
        "from agentbench_af.environments.textworld.generator import generate_game\n"
        "print(json.dumps(generate_game('cooking', 1, 0, Path(sys.argv[1]))))\n"
    )
    other = tmp_path / "other"
    other.mkdir()
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code, str(other)], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.splitlines()[-1]) == cached_meta(game_dir("cooking", 1, 0), "cooking", 1, 0)
    assert policy_transcript(other / "game.z8") == policy_transcript(get_game_file("cooking", 1, 0))


def test_cache_hit_reuses_the_file_and_damage_is_regenerated(envs, monkeypatch: pytest.MonkeyPatch) -> None:
    path = get_game_file("coin_collector", 5, 0)
    stamp = path.stat().st_mtime_ns
    calls: list[tuple] = []
    real = generator.generate_game
    monkeypatch.setattr(generator, "generate_game", lambda *a: calls.append(a) or real(*a))
    assert get_game_file("coin_collector", 5, 0) == path and path.stat().st_mtime_ns == stamp and calls == []
    envs["coin_collector"].reset(seed=0)  # a reset on a cached seed generates nothing either
    assert calls == []
    (path.parent / "meta.json").write_text("{ truncated")
    assert get_game_file("coin_collector", 5, 0) == path and len(calls) == 1
    assert cached_meta(path.parent, "coin_collector", 5, 0) is not None
    assert sorted(p.name for p in path.parent.iterdir()) == ["game.json", "game.z8", "meta.json"]
    assert [p.name for p in path.parent.parent.iterdir() if p.name.startswith(".")] == []  # no leftovers


def _race(barrier, key: tuple[str, int, int]) -> tuple[str, bool, bool]:
    """In a fresh process: wait for the other one, then get the same game; (path, was missing, wins)."""
    missing = cached_meta(game_dir(*key), *key) is None
    barrier.wait()
    path = get_game_file(*key)
    return str(path), missing, policy_transcript(path)[-1].find("*** The End ***") >= 0


def test_two_processes_generating_one_game_both_get_a_valid_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("AGENTBENCH_AF_CACHE", str(tmp_path))  # spawned workers inherit it
    key = ("treasure_hunter", 5, 7)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager, ctx.Pool(2) as pool:
        barrier = manager.Barrier(2)
        results = pool.starmap(_race, [(barrier, key), (barrier, key)], chunksize=1)
    (path_a, missing_a, won_a), (path_b, missing_b, won_b) = results
    assert missing_a and missing_b  # both generated it
    assert path_a == path_b == str(game_dir(*key) / "game.z8") and won_a and won_b
    assert cached_meta(game_dir(*key), *key) is not None and policy_transcript(Path(path_a))
    assert [p.name for p in game_dir(*key).parent.iterdir()] == ["7"]  # no temporary folders left behind


def test_invalid_command_never_reaches_the_game(envs, monkeypatch: pytest.MonkeyPatch) -> None:
    env = envs["treasure_hunter"]
    env.reset(seed=1_000_000)  # generates the game first if it is not cached (generation plays its policy)
    calls: list[str] = []
    real_step = TextWorldGame.step
    monkeypatch.setattr(TextWorldGame, "step", lambda self, c: calls.append(c) or real_step(self, c))
    env.reset(seed=1_000_000)
    first = env.expert_turn().actions[0]
    _, _, _, _, info = env.step(f"<answer>  {first.upper()} </answer>")  # case and spaces do not matter
    assert info["action_is_valid"] and info["num_actions"] == 1 and calls == [first]
    before = (env.render(), env.admissible_actions(), env.actions_left)
    for text in ("<answer>fly to the moon</answer>", "go north", "<answer>look || inventory</answer>", "", "<answer>"):
        obs, reward, terminated, truncated, info = env.step(text)
        assert not info["action_is_valid"] and info["num_actions"] == 0 and not info["action_is_effective"]
        assert reward == env.variant.format_penalty and not terminated and not truncated
        assert obs.startswith("Invalid: ") and (env.render(), env.admissible_actions(), env.actions_left) == before
    assert calls == [first]
    _, _, _, _, info = env.step("<answer>look</answer>")  # valid, but it changes no fact of the world
    assert info["action_is_valid"] and not info["action_is_effective"]


@pytest.mark.parametrize("challenge", ["treasure_hunter", "coin_collector"])
def test_expert_wins_from_the_middle_of_an_episode(envs, challenge: str) -> None:
    """The expert recomputes textworld's policy from the current state: after random moves it still wins."""
    env, rng = envs[challenge], random.Random(0)
    for seed in SEEDS:
        env.reset(seed=seed)
        for _ in range(4):
            moves = [c for c in env.admissible_actions() or () if c.split()[0] in ("go", "open", "close", "look")]
            env.step(f"<answer>{rng.choice(moves)}</answer>")
        done, info = False, {}
        while not done:
            _, _, terminated, truncated, info = env.step(f"<answer>{env.expert_turn().actions[0]}</answer>")
            done = terminated or truncated
        assert info["success"], (challenge, seed)


def test_eating_an_ingredient_loses_the_cooking_game(envs) -> None:
    env, lost = envs["cooking"], 0
    for seed in SEEDS:
        env.reset(seed=seed)
        taken = ""
        while not taken:
            command = env.expert_turn().actions[0]
            env.step(f"<answer>{command}</answer>")
            taken = command.removeprefix("take ").split(" from ")[0] if command.startswith("take ") else ""
        eat = [c for c in env.admissible_actions() or () if c in (f"eat {taken}", f"drink {taken}")]
        if eat:
            _, _, terminated, truncated, info = env.step(f"<answer>{eat[0]}</answer>")
            assert terminated and not truncated and not info["success"] and env.is_failure
            lost += 1
    assert lost >= 1


def test_text_and_seeded_reset(envs) -> None:
    env = envs["coin_collector"]
    first = env.reset(seed=0)
    assert env.reset(seed=1_000_000) != first and env.reset(seed=0) == first
    obs = first[0]
    assert "$$" not in obs and "\n\n\n" not in obs and "-= " in obs and not obs.startswith("\n")
    assert obs.splitlines()[-1] == "Available actions: " + ", ".join(first[1]["admissible_actions"])
    objective = env._game.objective
    assert obs.startswith(objective)
    turn = env.expert_turn()
    obs, *_ = env.step(f"<answer>{turn.actions[0]}</answer>")
    assert f"Objective: {objective}" in obs and ">" not in obs.splitlines()[-2]
    assert clean_text("\n\n  _$$ |\n\nHi.\n\n\n\nThere.  \n\n>  -= Room =-0/1") == "Hi.\n\nThere."

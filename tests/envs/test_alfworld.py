"""ALFWorld: generated tasks, the planner expert, the cache under concurrency, invalid turns, the
official-data loader (on a small folder in the official layout built here), seeded resets."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("alfworld")
pytest.importorskip("textworld")

from agentbench_af.api import list_envs, make  # noqa: E402
from agentbench_af.environments.alfworld.env import ALFWorldEnv, task_for_seed  # noqa: E402
from agentbench_af.environments.alfworld.game import PddlGame, display_names  # noqa: E402
from agentbench_af.environments.alfworld.generator import game_path, get_game_file  # noqa: E402
from agentbench_af.environments.alfworld.official import official_games  # noqa: E402
from agentbench_af.environments.alfworld.variants import TASK_TYPES, ALFWorldVariant  # noqa: E402
from agentbench_af.formats.parse import format_response  # noqa: E402

pytestmark = pytest.mark.alfworld
SEEDS = (0, 1_000_000)  # one training seed (seen floor plans), one evaluation seed (unseen floor plans)


@pytest.fixture(scope="module", autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AGENTBENCH_AF_CACHE", str(root))
        yield root


def play_expert(env: ALFWorldEnv, seed: int) -> tuple[bool, float, int]:
    env.reset(seed=seed)
    total, turns, done, info = 0.0, 0, False, {}
    while not done:
        turn = env.expert_turn()
        _, reward, terminated, truncated, info = env.step(format_response(turn.reasoning, list(turn.actions)))
        total, turns, done = total + reward, turns + 1, terminated or truncated
    return bool(info["success"]), total, turns


def test_ids_listed_and_variant_checked() -> None:
    ids = [i for i in list_envs() if i.startswith("ALFWorld-")]
    assert sorted(ids) == sorted([f"ALFWorld-{k}-v0" for k in TASK_TYPES] + ["ALFWorld-all-v0", "ALFWorld-official-v0"])
    with pytest.raises(ValueError, match="task_type"):
        ALFWorldVariant(task_type="juggle")
    with pytest.raises(ValueError, match="source"):
        ALFWorldVariant(source="web")


def test_ids_list_without_the_extra_and_make_says_what_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['alfworld'] = sys.modules['textworld'] = None  # as if the extra were not installed\n"
        "from agentbench_af.api import list_envs, make\n"
        "assert 'ALFWorld-pick-v0' in list_envs()\n"
        "try:\n    make('ALFWorld-pick-v0')\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "pip install 'agentbench-af[alfworld]'" in out.stdout


@pytest.mark.parametrize("key", list(TASK_TYPES))
def test_generated_tasks_are_won_by_the_expert(key: str) -> None:
    env = make(f"ALFWorld-{key}-v0")
    try:
        for seed in SEEDS:
            success, total, turns = play_expert(env, seed)
            data = json.loads(Path(env.game_file).read_text())
            assert success and total == 1.0, (key, seed)
            assert data["solvable"] and turns == len(data["walkthrough"]) <= env.variant.max_actions_per_episode
            assert data["agentbench_af"]["scenes"] == ("seen" if seed == 0 else "unseen")
    finally:
        env.close()


def test_reduced_planner_matches_the_full_planner() -> None:
    """The expert plans on the goal-relevant part of the state; its plans are as short as the full ones."""
    game = PddlGame()
    try:
        for key in ("look", "pick"):
            game.load(get_game_file(key, 0))
            assert len(game.plan()) == len(game.full_plan()) > 0
            game.step(game.admissible[0])  # off the walkthrough: a fresh reduced plan
            assert len(game.plan()) == len(game.full_plan())
    finally:
        game.close()


_RACE = """
import hashlib, json, os, sys, time
from agentbench_af.environments.alfworld.generator import get_game_file
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
path = get_game_file("pick2", 7)
print(path, hashlib.sha1(path.read_bytes()).hexdigest())
"""


def test_concurrent_generation_gives_one_valid_file(tmp_path: Path) -> None:
    go = tmp_path / "go"
    env = {**os.environ, "AGENTBENCH_AF_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-c", _RACE, str(go)], env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    go.touch()
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    (path_a, hash_a), (path_b, hash_b) = outs
    assert path_a == path_b and hash_a == hash_b  # deterministic, and neither saw a partial file
    path = Path(path_a)
    assert hashlib.sha1(path.read_bytes()).hexdigest() == hash_a
    assert json.loads(path.read_text())["solvable"] is True
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary files left behind


def test_invalid_command_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    env = make("ALFWorld-pick-v0")
    calls: list[str] = []
    real_step = PddlGame.step
    monkeypatch.setattr(PddlGame, "step", lambda self, c: calls.append(c) or real_step(self, c))
    try:
        env.reset(seed=0)
        first = env.expert_turn().actions[0]
        _, _, _, _, info = env.step(f"<answer>  {first.upper()} </answer>")  # case and spaces do not matter
        assert info["action_is_valid"] and info["action_is_effective"] and calls == [first]
        before = (env.render(), env.admissible_actions(), env.actions_left)
        for text in ("<answer>fly to the moon</answer>", "go to bed 1", "<answer>look || inventory</answer>", ""):
            obs, reward, terminated, truncated, info = env.step(text)
            assert not info["action_is_valid"] and info["num_actions"] == 0 and not info["action_is_effective"]
            assert reward == env.variant.format_penalty and not terminated and not truncated
            assert obs.startswith("Invalid: ") and (env.render(), env.admissible_actions(), env.actions_left) == before
        assert calls == [first]  # the game engine was never stepped by an invalid turn
    finally:
        env.close()


def test_seeded_reset_is_deterministic() -> None:
    env = make("ALFWorld-all-v0")
    try:
        first = env.reset(seed=0)
        assert env.task_key == task_for_seed(0)
        other = env.reset(seed=1_000_000)
        assert env.reset(seed=0) == first and first != other
        assert [task_for_seed(s) for s in range(600)].count("heat") > 60  # every type is drawn
    finally:
        env.close()


def test_display_names_of_generated_and_official_ids() -> None:
    ids = ["apple_2", "apple_1", "loc_3", "agent1", "sink_bar__plus_00_dot_10_bar_sinkbasin",
           "cabinet_bar__minus_01_dot_00", "cabinet_bar__plus_02_dot_00"]
    names = display_names(ids)
    assert names["apple_1"] == "apple 1" and names["apple_2"] == "apple 2" and names["agent1"] == "agent1"
    assert names["sink_bar__plus_00_dot_10_bar_sinkbasin"] == "sinkbasin 1"
    # official ids: numbered per class over the sorted ids from the highest number down (ALFWorld's order)
    assert names["cabinet_bar__minus_01_dot_00"] == "cabinet 2" and names["cabinet_bar__plus_02_dot_00"] == "cabinet 1"


def _officialize(data: dict) -> dict:
    """A generated game with ALFRED-style ids (Class_bar_x_bar_y...), as the official files have."""
    def mangle(m: re.Match) -> str:
        cls, n = m.group(1), int(m.group(2))
        base = "sink" if cls == "sinkbasin" else cls
        tail = "_bar_sinkbasin" if cls == "sinkbasin" else ""
        return f"{base}_bar__plus_0{n}_dot_25_bar__minus_00_dot_50{tail}"

    ids = r"\b(?!loc_)([a-z]+)_(\d+)\b"
    problem = re.sub(ids, mangle, data["pddl_problem"])
    return {k: data[k] for k in ("pddl_domain", "grammar")} | {"pddl_problem": problem, "solvable": True, "walkthrough": None}


def test_official_loader_on_a_sample_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "json_2.1.1"
    for split, key, seed, folder in [
        ("train", "pick", 0, "pick_and_place_simple-Laptop-None-Bed-322/trial_T1"),
        ("train", "look", 0, "look_at_obj_in_light-Book-None-DeskLamp-328/trial_T1"),
        ("valid_unseen", "pick", 1_000_000, "pick_and_place_simple-X-None-Y-1/trial_T1"),
        ("train", "pick", 0, "pick_and_place_with_movable_recep-A-Pan-B-1/trial_T1"),  # not supported: skipped
        ("train", "pick", 0, "pick_and_place_simple-AppleSliced-None-Y-1/trial_T1"),  # not supported: skipped
    ]:
        pool = "seen" if seed < 1_000_000 else "unseen"
        data = _officialize(json.loads(get_game_file(key, seed, pool).read_text()))
        (root / split / folder).mkdir(parents=True)
        (root / split / folder / "game.tw-pddl").write_text(json.dumps(data))
        (root / split / folder / "traj_data.json").write_text(json.dumps({"task_type": TASK_TYPES[key]}))
    broken = root / "train" / "pick_and_place_simple-Z-None-Y-2" / "trial_T1"
    broken.mkdir(parents=True)
    (broken / "game.tw-pddl").write_text(json.dumps({"solvable": False, "pddl_problem": "x"}))

    assert len(official_games("train", root=root)) == 3
    assert [p.parent.parent.name.split("-")[1] for p in official_games("train", TASK_TYPES["look"], root)] == ["Book"]
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))
    env = make("ALFWorld-official-v0")
    try:
        obs, _ = env.reset(seed=0)  # train games sorted by path: look, pick (Laptop), the unsolvable one
        assert "look at book under the desklamp" in obs and "_bar_" not in obs
        assert play_expert(env, 0)[:2] == (True, 1.0)
        assert play_expert(env, 1)[:2] == (True, 1.0) and "-Laptop-" in env.game_file
        assert play_expert(env, 2)[:2] == (True, 1.0) and "-Book-" in env.game_file  # unsolvable: next game
        assert play_expert(env, 1_000_000)[:2] == (True, 1.0) and "valid_unseen" in env.game_file
    finally:
        env.close()
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path / "nothing"))
    with pytest.raises(FileNotFoundError, match="ALFWORLD_DATA"):
        make("ALFWorld-official-v0").reset(seed=0)


def test_cache_is_keyed_by_task_seed_and_pool(cache: Path) -> None:
    path = get_game_file("look", 0)
    assert path == game_path("look", 0, "seen") and cache in path.parents
    path.write_text("{ truncated")  # a damaged file is regenerated
    assert json.loads(get_game_file("look", 0).read_text())["agentbench_af"]["seed"] == 0

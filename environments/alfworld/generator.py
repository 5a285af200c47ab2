"""Generate ALFWorld tasks of the six types from the shipped layouts, checked solvable by the planner.

For (task type, seed, scene pool): draw a floor plan whose room suits the task type (ALFRED's
`GOALS_VALID`) and that has what the task needs (sink, microwave, fridge, a lamp on furniture); draw
the target object class and the receptacle class to put it in from ALFRED's object/receptacle
compatibility table; put 1-3 targets (2-3 for pick-two) in compatible receptacles of another class,
add distractor objects of the scene's other classes in compatible receptacles (up to `MAX_OBJECTS`
objects in all), write the PDDL problem, and ask fast-downward for a plan. A draw the goal already
holds in, or without a plan of at most `MAX_PLAN` steps, is redrawn (the next attempt's seed).
Every draw is a function of (seed, task type, pool, attempt, `GENERATOR_VERSION`).
Left out: ALFRED's object positions (objects sit in receptacles only), sliced objects and knives,
movable receptacles as containers, and "already cold in the fridge" initial states.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from agentbench_af.api.game_cache import cache_root, read_json, write_json_atomic
from agentbench_af.environments.alfworld.assets import (
    CAN_HOLD,
    CLEANABLE,
    COOLABLE,
    GOAL_ROOMS,
    HEATABLE,
    LAMP_SUPPORTS,
    Scene,
    domain_text,
    grammar_text,
    load_scene,
    scene_pool,
)
from agentbench_af.environments.alfworld.game import PddlGame
from agentbench_af.environments.alfworld.problem import TOOLS, TaskSpec, game_data
from agentbench_af.environments.alfworld.variants import SCENE_POOLS, TASK_TYPES

GENERATOR_VERSION = 1
MAX_OBJECTS = 20  # objects one can pick up, targets included (more makes the planner slow)
MAX_PLAN = 50  # the default action budget
MAX_DRAWS = 20
_TASK_INDEX = {k: i for i, k in enumerate(TASK_TYPES)}
_KINDS = {"clean": CLEANABLE, "heat": HEATABLE, "cool": COOLABLE}


def _targets(scene: Scene, task: str) -> list[tuple[str, tuple[str, ...]]]:
    """(target object class, receptacle classes it may be put in) the scene allows for a task type."""
    present = sorted(set(scene.receptacles))
    tool = TOOLS.get(task)
    if tool is not None and tool not in present:
        return []
    if task == "look" and not (scene.lamps and any(r in LAMP_SUPPORTS for r in present)):
        return []
    out = []
    for obj in scene.objects:
        if task in _KINDS and obj not in _KINDS[task]:
            continue
        starts = [r for r in present if obj in CAN_HOLD[r]]
        if task == "look":
            if starts:
                out.append((obj, ()))
            continue
        parents = tuple(r for r in present if r != tool and obj in CAN_HOLD[r] and any(s != r for s in starts))
        if parents:
            out.append((obj, parents))
    return out


@functools.cache
def eligible_scenes(task: str, pool: str) -> tuple[int, ...]:
    rooms = GOAL_ROOMS[TASK_TYPES[task]]
    return tuple(n for n in scene_pool(pool) if load_scene(n).room in rooms and _targets(load_scene(n), task))


def _pick(rng: np.random.Generator, items: list[Any] | tuple[Any, ...]) -> Any:
    return items[int(rng.integers(len(items)))]


def sample_spec(task: str, scene_number: int, rng: np.random.Generator) -> TaskSpec:
    """One random task of type `task` in a floor plan (not yet checked by the planner)."""
    scene = load_scene(scene_number)
    counts: dict[str, int] = {}
    receptacles = []
    for cls in scene.receptacles:
        counts[cls] = counts.get(cls, 0) + 1
        receptacles.append((f"{cls.lower()}_{counts[cls]}", cls))
    target, parents = _pick(rng, _targets(scene, task))
    parent = _pick(rng, parents) if parents else None
    objects: list[tuple[str, str, str]] = []

    def add(cls: str, n: int, exclude: str | None = None) -> None:
        places = [rid for rid, rc in receptacles if cls in CAN_HOLD[rc] and rc != exclude]
        for k in range(n if places else 0):
            objects.append((f"{cls.lower()}_{k + 1}", cls, _pick(rng, places)))

    add(target, int(rng.integers(2, 4)) if task == "pick2" else int(rng.integers(1, 4)), exclude=parent)
    lamp = None
    if task == "look":
        lamp = _pick(rng, scene.lamps)
        objects.append((f"{lamp.lower()}_1", lamp, _pick(rng, [rid for rid, rc in receptacles if rc in LAMP_SUPPORTS])))
    others = [o for o in scene.objects if o != target]
    for i in rng.permutation(len(others)):
        room = MAX_OBJECTS - sum(1 for _, c, _ in objects if c != lamp)
        if room <= 0:
            break
        add(others[int(i)], min(room, int(rng.integers(1, 3))))
    return TaskSpec(task, scene_number, tuple(receptacles), tuple(objects), target, parent, lamp)


@functools.cache
def _checker() -> PddlGame:
    return PddlGame()


def generate_game(task: str, seed: int, pool: str = "seen") -> dict[str, Any]:
    """The `.tw-pddl` data of task type `task` (a key of TASK_TYPES) for `seed`, planner-checked."""
    if task not in TASK_TYPES or pool not in SCENE_POOLS:
        raise ValueError(f"unknown task type {task!r} or scene pool {pool!r}")
    scenes = eligible_scenes(task, pool)
    for attempt in range(MAX_DRAWS):
        entropy = [int(seed), _TASK_INDEX[task], SCENE_POOLS.index(pool), attempt, GENERATOR_VERSION]
        rng = np.random.default_rng(np.random.SeedSequence(entropy))
        spec = sample_spec(task, _pick(rng, scenes), rng)
        meta = {"version": GENERATOR_VERSION, "seed": int(seed), "scenes": pool, "attempt": attempt,
                "target": spec.target, "parent": spec.parent, "lamp": spec.lamp}
        data = game_data(spec, domain_text(), grammar_text(), meta)
        won, plan = _checker().initial_plan(data)
        if not won and 0 < len(plan) <= MAX_PLAN:
            data["solvable"], data["walkthrough"] = True, plan
            return data
    raise RuntimeError(f"no solvable {task} task for seed {seed} in {MAX_DRAWS} draws")


def game_path(task: str, seed: int, pool: str = "seen") -> Path:
    return cache_root() / f"gen-v{GENERATOR_VERSION}" / pool / TASK_TYPES[task] / f"{int(seed)}.tw-pddl"


def _is_ours(data: dict[str, Any] | None, task: str, seed: int, pool: str) -> bool:
    meta = (data or {}).get("agentbench_af") or {}
    return (
        bool(data and data.get("solvable") and data.get("pddl_problem"))
        and meta.get("task") == task and meta.get("seed") == int(seed) and meta.get("scenes") == pool
        and meta.get("version") == GENERATOR_VERSION
    )


def get_game_file(task: str, seed: int, pool: str = "seen") -> Path:
    """The cached game file for (task, seed, pool), generated and written atomically when missing."""
    path = game_path(task, seed, pool)
    if not _is_ours(read_json(path), task, seed, pool):
        write_json_atomic(path, generate_game(task, seed, pool))
    return path

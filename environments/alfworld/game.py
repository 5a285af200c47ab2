"""One ALFWorld game in play: textworld's PDDL engine with readable names and an on-demand planner.

`PddlGame` wraps `textworld.envs.pddl.PddlEnv` (one fast-downward library copy per instance, reused
across games) and adds what the text env needs: entity names ("cabinet 3"), the facts for telling
whether a command changed anything, and the planner's plan from the current state (fast-downward on
the goal-relevant part of the state, see planner.py; memoised per state, and the rest of a plan is
reused after its first step). It touches PddlEnv's `_entity_infos` and `_pddl_state` (as alfworld's
own wrappers do). Left out: the hand-coded expert, human goal annotations, domain randomisation.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from textworld import EnvInfos
from textworld.envs.pddl import PddlEnv
from textworld.envs.pddl import logic as pddl_logic

from agentbench_af.api.command_env import GameState
from agentbench_af.environments.alfworld.planner import ReducedPlanner, goal_section, reduced_problem

_BANNER = re.compile(r"^-= Welcome to TextWorld, ALFRED! =-\s*")
_TASK = re.compile(r"Your task is to: (.*)")
_GENERATED_ID = re.compile(r"^([a-z]+)_(\d+)$")
_PLAN_CACHE: OrderedDict[tuple[str, str], tuple[str, ...]] = OrderedDict()  # (game, state digest) -> plan
_PLAN_CACHE_SIZE = 4096
#: engines of closed games, reused by new ones: unloading a fast-downward library copy (dlclose) and
#: loading another one later crashes the process, so copies are kept for the life of the process
_IDLE: list[tuple[PddlEnv, ReducedPlanner]] = []
_IDLE_LOCK = threading.Lock()
#: held while PddlEnv builds a state (load, reset), so that _reuse_state's swap is seen by no other thread
_BUILD_LOCK = threading.Lock()
#: predicates that looking, examining or asking for help set; they do not count as a state change
_OBSERVATION_PREDICATES = frozenset({"checked", "examined"})


def display_names(ids: Iterable[str]) -> dict[str, str]:
    """Readable names for PDDL ids (lower case, as fast-downward gives them).

    Our ids `class_n` become "class n". Official ALFRED ids (`Class_bar_x_bar_y_bar_z[_bar_SinkBasin]`)
    become "class n", numbered per class over the sorted ids from the highest number down (the order
    ALFWorld's text game uses, so official games read the same). Other ids are kept as they are.
    """
    ids = sorted(set(ids))
    names: dict[str, str] = {}
    official: dict[str, str] = {}
    for i in ids:
        if "_bar_" in i:
            cls = i.split("_bar_", 1)[0]
            official[i] = cls + "basin" if "basin" in i else cls
        elif m := _GENERATED_ID.match(i):
            names[i] = f"{m.group(1)} {int(m.group(2))}"
        else:
            names[i] = i
    left = Counter(official.values())
    for i in ids:
        if i in official:
            cls = official[i]
            names[i] = f"{cls} {left[cls]}"
            left[cls] -= 1
    return names


def _digest(facts: frozenset[str]) -> str:
    return hashlib.sha1("\n".join(sorted(facts)).encode()).hexdigest()


@contextlib.contextmanager
def _reuse_state(state: Any) -> Iterator[None]:
    """Make PddlEnv.reset() take `state` (the one load() just built) instead of translating again.

    PddlEnv.load() and PddlEnv.reset() each translate the problem (twice: plain and for the planner),
    which is most of the time a game takes to start; a fresh state from load() is what reset() builds.
    The caller holds _BUILD_LOCK.
    """
    original = pddl_logic.PddlState
    pddl_logic.PddlState = lambda *args, **kwargs: state  # type: ignore[assignment, misc]
    try:
        yield
    finally:
        pddl_logic.PddlState = original  # type: ignore[misc]


@contextlib.contextmanager
def _keep_argv() -> Iterator[None]:
    """fast-downward's translator overwrites `sys.argv`; put it back."""
    saved = list(sys.argv)
    try:
        yield
    finally:
        sys.argv[:] = saved


def read_game(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(source, Mapping):
        return dict(source)
    with open(source, encoding="utf-8") as fh:
        return json.load(fh)


class PddlGame(GameState):
    """Load a `.tw-pddl` game (path or dict), list admissible commands, step, and plan."""

    def __init__(self) -> None:
        self._engines: tuple[PddlEnv, ReducedPlanner] | None = None
        self._env, self._planner = self._acquire()
        self._state: Any = None
        self._goal = ""
        self._fresh = False
        self._key = ""
        self.data: dict[str, Any] = {}
        self.intro = ""

    # ------------------------------------------------------------- loading
    def _acquire(self) -> tuple[PddlEnv, ReducedPlanner]:
        if self._engines is None:
            with _IDLE_LOCK:
                engines = _IDLE.pop() if _IDLE else None
            self._engines = engines or (PddlEnv(EnvInfos(admissible_commands=True, won=True)), ReducedPlanner())
        return self._engines

    def _load(self, source: str | Path | Mapping[str, Any]) -> None:
        """Load a game into the engine (skipped when the engine holds this very game already)."""
        self._env, self._planner = self._acquire()
        data = read_game(source)
        key = hashlib.sha1((data["pddl_problem"] + data["grammar"]).encode()).hexdigest()
        self._state = None
        if key == self._key:
            return
        self._key, self.data, self._fresh = "", data, False
        self._goal = goal_section(data["pddl_problem"])
        with _BUILD_LOCK, _keep_argv():
            self._env.load(data)
        names = display_names(self._env._entity_infos)
        for eid, info in self._env._entity_infos.items():
            info.name = names[eid]
        self._key, self._fresh = key, True

    def load(self, source: str | Path | Mapping[str, Any]) -> None:
        """Load a game and start it."""
        self._load(source)
        reuse = _reuse_state(self._env._pddl_state) if self._fresh else contextlib.nullcontext()
        self._fresh = False
        with _BUILD_LOCK, _keep_argv(), reuse:
            self._state = self._env.reset()
        self.intro = self.feedback
        walkthrough = self.data.get("walkthrough")
        if self.data.get("agentbench_af") and isinstance(walkthrough, list) and walkthrough:
            self._remember((self._key, _digest(self._facts())), walkthrough)  # our files store the planner's plan

    def initial_plan(self, source: str | Path | Mapping[str, Any]) -> tuple[bool, list[str]]:
        """(won at the start, the planner's plan) for a game, without starting it (for the generator)."""
        self._key = ""  # load afresh: the engine's state must be the initial one
        self._load(source)
        self._fresh = False  # planning reads the state but a later load() starts from a clean one
        return bool(self._env._pddl_state.check_goal()), self.reduced_plan()

    # ------------------------------------------------------------- playing
    def _clean_feedback(self, raw: Any) -> str:
        return _BANNER.sub("", str(raw)).strip()

    @property
    def task(self) -> str:
        m = _TASK.search(self.intro)
        return m.group(1).strip().rstrip(".") if m else ""

    def _facts(self) -> frozenset[str]:
        return frozenset(str(f) for f in self._require()["_facts"] if f.name not in _OBSERVATION_PREDICATES)

    def step(self, command: str) -> bool:
        """Apply an admissible command (exact text); return whether the state changed."""
        if command not in self.admissible:
            raise ValueError(f"{command!r} is not admissible")
        before = self._facts()
        plan = _PLAN_CACHE.get((self._key, _digest(before)))
        with _keep_argv():
            self._state, _, _ = self._env.step(command)
        after = self._facts()
        if plan and plan[0] == command and after != before and not self.won:
            self._remember((self._key, _digest(after)), plan[1:])  # the rest of a plan is a plan from here
        return after != before

    def plan(self) -> list[str]:
        """The planner's commands from the current state ([] when won or when no plan exists)."""
        if self.won:
            return []
        key = (self._key, _digest(self._facts()))
        if key not in _PLAN_CACHE:
            self._remember(key, self.reduced_plan())
        _PLAN_CACHE.move_to_end(key)
        return list(_PLAN_CACHE[key])

    def full_plan(self) -> list[str]:
        """fast-downward's plan on the whole state (slow on big rooms; for cross-checks)."""
        with _keep_argv():
            return list(self._env._pddl_state.replan(self._env._entity_infos))

    def reduced_plan(self) -> list[str]:
        """Plan on the goal-relevant part of the current state (see planner.py); [] when none."""
        state = self._env._pddl_state
        facts = [(f.name, tuple(a.name for a in f.arguments)) for f in state.facts if "@" not in f.name]
        declared = {o.name: o.type_name for o in state.task.objects}
        with _keep_argv():
            ops = self._planner.plan(self.data["pddl_domain"], reduced_problem(facts, declared, self._goal))
        return list(state.plan_to_templated_actions(ops, self._env._entity_infos)) if ops else []

    @staticmethod
    def _remember(key: tuple[str, str], plan: Iterable[str]) -> None:
        _PLAN_CACHE[key] = tuple(plan)
        _PLAN_CACHE.move_to_end(key)
        if len(_PLAN_CACHE) > _PLAN_CACHE_SIZE:
            _PLAN_CACHE.popitem(last=False)

    def close(self) -> None:
        """End the game and hand its engines to the next PddlGame (idempotent)."""
        self._state, self._key = None, ""
        if self._engines is not None:
            with _IDLE_LOCK:
                _IDLE.append(self._engines)
            self._engines = None

"""The expert's planner: fast-downward on the part of the current state that the goal can use.

fast-downward's search on a whole ALFWorld room (30-50 receptacles, 20+ objects) takes seconds to
tens of seconds per plan. Every receptacle is one `go to` away, so an optimal plan only ever visits
receptacles that hold goal objects, the goal's receptacle classes (tools included), the one the agent
stands at, and places for a held object; receptacles of one class that are closed and hold nothing
relevant are interchangeable, so one of them stands for all. The reduced problem keeps those
receptacles, the goal's objects and the held object, with all their facts, and the full goal; its
plans run unchanged in the full game and are as short as the full problem's (tests compare both).
Left out: a general relevance analysis (this one knows ALFRED's predicates), plan costs other than 1.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

import fast_downward

#: the receptacle type a goal's state predicate needs (the domain's Clean/Heat/CoolObject actions)
_TOOL_TYPES = {"isclean": "sinkbasintype", "ishot": "microwavetype", "iscool": "fridgetype"}
_WORD = re.compile(r"[a-z0-9_]+")


def goal_section(problem: str) -> str:
    """The `(:goal ...)` text of a PDDL problem (balanced parentheses)."""
    start = problem.lower().find("(:goal")
    if start < 0:
        raise ValueError("the PDDL problem has no (:goal ...) section")
    depth = 0
    for i in range(start, len(problem)):
        depth += {"(": 1, ")": -1}.get(problem[i], 0)
        if depth == 0:
            return problem[start : i + 1]
    raise ValueError("unbalanced parentheses in the (:goal ...) section")


def reduced_problem(facts: Iterable[tuple[str, tuple[str, ...]]], declared: dict[str, str], goal: str) -> str:
    """A PDDL problem on the goal-relevant part of a state.

    `facts`: (predicate, argument ids), lower case; `declared`: every declared object -> its type;
    `goal`: the original `(:goal ...)` text.
    """
    facts = list(facts)
    by_pred: dict[str, list[tuple[str, ...]]] = defaultdict(list)
    for name, args in facts:
        by_pred[name].append(args)
    goal_words = set(_WORD.findall(goal.lower()))
    wanted = {w for w in goal_words if declared.get(w) in ("otype", "rtype")}
    wanted |= {t for pred, t in _TOOL_TYPES.items() if pred in goal_words}
    otype = {o: t for o, t in by_pred["objecttype"]}
    rtype = {r: t for r, t in by_pred["receptacletype"]}
    inside = {o: r for o, r in by_pred["inreceptacle"]}
    place = {r: loc for r, loc in by_pred["receptacleatlocation"]}
    here = {loc for _, loc in by_pred["atlocation"]}
    opened = {args[0] for args in by_pred["opened"]}
    held = {o for _, o in by_pred["holds"]}
    can_contain = {(rt, ot) for rt, ot in by_pred["cancontain"]}

    objects = {o for o, t in otype.items() if t in wanted}
    keep = {inside[o] for o in objects if o in inside} | {r for r, loc in place.items() if loc in here}
    classes = {t for t in rtype.values() if t in wanted}
    for o in held - objects:  # a held object the goal does not use must be put down somewhere
        classes |= {rt for rt, ot in can_contain if ot == otype.get(o)}
    objects |= held
    for cls in sorted(classes):
        members = sorted(r for r, t in rtype.items() if t == cls)
        special = [r for r in members if r in keep or r in opened]
        plain = [r for r in members if r not in special]
        keep |= set(special) | set(plain[:1])
    locations = {place[r] for r in keep if r in place} | here
    entities = {e for e, t in declared.items() if t in ("agent", "otype", "rtype")} | objects | keep | locations
    decl = "\n  ".join(f"{e} - {declared[e]}" for e in sorted(entities))
    init = "\n  ".join(
        f"({name} {' '.join(args)})" for name, args in sorted(set(facts)) if all(a in entities for a in args)
    )
    return f"(define (problem reduced)\n (:domain alfred)\n (:objects\n  {decl})\n (:init\n  {init})\n {goal})\n"


class ReducedPlanner:
    """Plans on reduced problems with a private copy of fast-downward's library."""

    def __init__(self) -> None:
        self._lib = fast_downward.load_lib()  # never unloaded: see game.py

    def plan(self, domain: str, problem: str) -> list[str] | None:
        """Operator names of a plan ("pickupobject agent1 loc_3 apple_1 countertop_1"), or None."""
        _, sas = fast_downward.pddl2sas(domain, problem, optimize=True)
        if not self._lib.solve_sas(sas.encode("utf-8"), False):
            return None
        ops = (fast_downward.Operator * self._lib.get_last_plan_length())()
        self._lib.get_last_plan(ops)
        return [op.name for op in ops]

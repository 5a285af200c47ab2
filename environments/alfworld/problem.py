"""A task as data (`TaskSpec`), its PDDL problem on the ALFRED domain, and its `.tw-pddl` game file.

The `.tw-pddl` file is what ALFWorld plays: a JSON object with the domain, the grammar (the task
sentence written into its intro), the problem, and `solvable` / `walkthrough` (the planner's plan).
Our files add an `agentbench_af` record (task type, seed, scene, generator version).
Left out: distances between places (every `go to` costs 1), sliced objects, knives, ALFRED's
human-written goal sentences (the sentence is templated).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentbench_af.environments.alfworld.assets import (
    CAN_HOLD,
    CLEANABLE,
    COOLABLE,
    HEATABLE,
    OPENABLE,
    TOGGLEABLE,
)

AGENT = "agent1"
START = "loc_0"
#: the receptacle class each state-changing task type uses as its tool
TOOLS = {"clean": "SinkBasin", "heat": "Microwave", "cool": "Fridge"}
#: receptacle and object type constants the domain's actions name (they must be declared)
_DOMAIN_RTYPES = ("SinkBasin", "Microwave", "Fridge")
_DOMAIN_OTYPES = ("Knife", "ButterKnife")
_STATE_PREDICATE = {"clean": "isClean", "heat": "isHot", "cool": "isCool"}
_SENTENCES = {
    "pick": "put a {obj} in {recep}",
    "look": "look at {obj} under the {lamp}",
    "clean": "put a clean {obj} in {recep}",
    "heat": "put a hot {obj} in {recep}",
    "cool": "put a cool {obj} in {recep}",
    "pick2": "put two {obj} in {recep}",
}


@dataclass(frozen=True)
class TaskSpec:
    """A generated task. Ids are PDDL names `class_n` (shown to the player as "class n")."""

    task: str  # a key of variants.TASK_TYPES
    scene: int
    receptacles: tuple[tuple[str, str], ...]  # (id, receptacle class), one place each
    objects: tuple[tuple[str, str, str], ...]  # (id, object class, id of the receptacle it is in)
    target: str  # object class the goal is about
    parent: str | None  # receptacle class to put it in (None for look)
    lamp: str | None  # lamp class to turn on (look only)

    @property
    def sentence(self) -> str:
        recep = (self.parent or "").lower()
        return _SENTENCES[self.task].format(obj=self.target.lower(), recep=recep, lamp=(self.lamp or "").lower())


def _goal(spec: TaskSpec) -> str:
    obj = f"{spec.target}Type"
    if spec.task == "look":
        return (
            "(and"
            f" (exists (?t - object ?r - receptacle ?l - location) (and (objectType ?t {spec.lamp}Type)"
            f" (isToggled ?t) (inReceptacle ?t ?r) (receptacleAtLocation ?r ?l) (atLocation {AGENT} ?l)))"
            f" (exists (?o - object) (and (objectType ?o {obj}) (holds {AGENT} ?o))))"
        )
    recep = f"{spec.parent}Type"
    if spec.task == "pick2":
        return (
            "(exists (?r - receptacle ?o1 - object ?o2 - object) (and"
            f" (receptacleType ?r {recep}) (objectType ?o1 {obj}) (objectType ?o2 {obj}) (not (= ?o1 ?o2))"
            " (inReceptacle ?o1 ?r) (inReceptacle ?o2 ?r)))"
        )
    state = f" ({_STATE_PREDICATE[spec.task]} ?o)" if spec.task in _STATE_PREDICATE else ""
    return (
        "(exists (?r - receptacle ?o - object) (and"
        f" (receptacleType ?r {recep}) (objectType ?o {obj}) (inReceptacle ?o ?r){state}))"
    )


def problem_pddl(spec: TaskSpec) -> str:
    """The PDDL problem: every receptacle at its own place, the agent in the middle of the room."""
    place = {rid: f"loc_{i + 1}" for i, (rid, _) in enumerate(spec.receptacles)}
    rtypes = sorted({c for _, c in spec.receptacles} | set(_DOMAIN_RTYPES) | ({spec.parent} if spec.parent else set()))
    otypes = sorted({c for _, c, _ in spec.objects} | set(_DOMAIN_OTYPES))
    decl = [f"{AGENT} - agent", f"{START} - location"] + [f"{loc} - location" for loc in place.values()]
    decl += [f"{rid} - receptacle" for rid, _ in spec.receptacles]
    decl += [f"{oid} - object" for oid, _, _ in spec.objects]
    decl += [f"{t}Type - rtype" for t in rtypes] + [f"{t}Type - otype" for t in otypes]
    init = [f"(atLocation {AGENT} {START})"]
    for rid, cls in spec.receptacles:
        init += [f"(receptacleAtLocation {rid} {place[rid]})", f"(receptacleType {rid} {cls}Type)"]
        if cls in OPENABLE:
            init.append(f"(openable {rid})")
    for oid, cls, rid in spec.objects:
        init += [f"(objectType {oid} {cls}Type)", f"(inReceptacle {oid} {rid})", f"(objectAtLocation {oid} {place[rid]})"]
        if cls in TOGGLEABLE:
            init.append(f"(toggleable {oid})")
            continue  # lamps stay where they are
        init.append(f"(pickupable {oid})")
        for flag, kinds in (("heatable", HEATABLE), ("coolable", COOLABLE), ("cleanable", CLEANABLE)):
            if cls in kinds:
                init.append(f"({flag} {oid})")
    init += [f"(canContain {r}Type {o}Type)" for r in rtypes for o in otypes if o in CAN_HOLD.get(r, ())]
    return (
        f"(define (problem agentbench_af_{spec.task}_{spec.scene})\n (:domain alfred)\n (:objects\n  "
        + "\n  ".join(decl)
        + ")\n (:init\n  "
        + "\n  ".join(init)
        + f")\n (:goal {_goal(spec)}))\n"
    )


def game_data(spec: TaskSpec, domain: str, grammar: str, meta: dict[str, Any]) -> dict[str, Any]:
    """The `.tw-pddl` JSON object (without `solvable`/`walkthrough`, which the planner fills in)."""
    if "UNKNOWN GOAL" not in grammar:
        raise ValueError("the grammar has no 'UNKNOWN GOAL' slot for the task sentence")
    return {
        "pddl_domain": domain,
        "grammar": grammar.replace("UNKNOWN GOAL", spec.sentence, 1),
        "pddl_problem": problem_pddl(spec),
        "solvable": None,
        "walkthrough": None,
        "agentbench_af": {**meta, "task": spec.task, "scene": spec.scene, "sentence": spec.sentence},
    }

"""What the alfworld package ships: the PDDL domain, the text grammar, floor-plan layouts, object tables.

A scene is one AI2-THOR floor plan: its receptacle instances come from the layout's receptacle
interaction points (`FloorPlanN-openable.json`, keyed by real receptacle ids), plus one instance for
each receptacle class the scene's object list (`FloorPlanN-objects.json`) names but the interaction
points lack (garbage cans, sinks, stove burners, toasters, coffee machines, towel holders...).
Left out: positions and distances (every receptacle is one `go to` away, as in ALFWorld's text game),
sliced objects, and movable receptacles used as containers (the shipped grammar has no working
put-into-object action, so bowls, mugs, pans... are ordinary objects here).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path

import alfworld.gen.constants as C

#: layout receptacle names that the domain calls differently
_RECEPTACLE_ALIASES = {"Sink": "SinkBasin", "Bathtub": "BathtubBasin"}
#: object classes that are lamps one can turn on (a lamp stands on or next to a piece of furniture)
LAMPS = ("DeskLamp", "FloorLamp")
LAMP_SUPPORTS = ("SideTable", "Desk", "Dresser", "Shelf", "CoffeeTable", "DiningTable", "TVStand", "ArmChair", "Sofa", "Bed")
OPENABLE = frozenset(C.OPENABLE_CLASS_SET)
CAN_HOLD: dict[str, frozenset[str]] = {r: frozenset(objs) for r, objs in C.VAL_RECEPTACLE_OBJECTS.items()}
MOVABLE_RECEPTACLES = frozenset(C.MOVABLE_RECEPTACLES)
HEATABLE = frozenset(C.VAL_ACTION_OBJECTS["Heatable"])
COOLABLE = frozenset(C.VAL_ACTION_OBJECTS["Coolable"])
CLEANABLE = frozenset(C.VAL_ACTION_OBJECTS["Cleanable"])
TOGGLEABLE = frozenset(C.VAL_ACTION_OBJECTS["Toggleable"])
#: objects that can be put somewhere (and so picked up), without sliced pieces
PLACEABLE = frozenset(o for objs in CAN_HOLD.values() for o in objs if "Sliced" not in o)
#: receptacles that are static furniture or appliances (targets and start places of objects)
STATIC_RECEPTACLES = frozenset(r for r in CAN_HOLD if r not in MOVABLE_RECEPTACLES)
#: the room types each task type is generated in (ALFRED's own table)
GOAL_ROOMS: dict[str, frozenset[str]] = {g: frozenset(rooms) for g, rooms in C.GOALS_VALID.items()}
SEEN_SCENES = tuple(C.TRAIN_SCENE_NUMBERS)
UNSEEN_SCENES = tuple(C.TEST_SCENE_NUMBERS)


def _package_dir() -> Path:
    spec = importlib.util.find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the alfworld package is not installed", name="alfworld")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.cache
def domain_text() -> str:
    return (_package_dir() / "data" / "alfred.pddl").read_text()


@functools.cache
def grammar_text() -> str:
    return (_package_dir() / "data" / "alfred.twl2").read_text()


def room_of(scene: int) -> str:
    return next(room for room, numbers in C.SCENE_TYPE.items() if scene in numbers)


@dataclass(frozen=True)
class Scene:
    """One floor plan: receptacle classes (one entry per instance, in layout-id order), objects, lamps."""

    number: int
    room: str
    receptacles: tuple[str, ...]
    objects: tuple[str, ...]
    lamps: tuple[str, ...]

    def has(self, receptacle_class: str) -> bool:
        return receptacle_class in self.receptacles


@functools.cache
def load_scene(number: int) -> Scene:
    layouts = _package_dir() / "gen" / "layouts"
    points = json.loads((layouts / f"FloorPlan{number}-openable.json").read_text())
    listed = json.loads((layouts / f"FloorPlan{number}-objects.json").read_text())
    receptacles = [_RECEPTACLE_ALIASES.get(k.split("|")[0], k.split("|")[0]) for k in sorted(points)]
    for name in sorted(set(listed)):
        name = _RECEPTACLE_ALIASES.get(name, name)
        if name in STATIC_RECEPTACLES and name not in receptacles:
            receptacles.append(name)
    receptacles = [r for r in receptacles if r in STATIC_RECEPTACLES]
    objects = tuple(sorted({o for o in listed if o in PLACEABLE}))
    lamps = tuple(sorted({o for o in listed if o in LAMPS}))
    return Scene(number, room_of(number), tuple(receptacles), objects, lamps)


def scene_pool(pool: str) -> tuple[int, ...]:
    """Floor plans of a pool: "seen" (ALFRED's training plans) or "unseen" (its held-out plans)."""
    if pool == "seen":
        return SEEN_SCENES
    if pool == "unseen":
        return UNSEEN_SCENES
    raise ValueError(f"scene pool {pool!r} must be 'seen' or 'unseen'")

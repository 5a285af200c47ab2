"""ALFWorld variants (ids registered on import; nothing here imports alfworld or textworld)."""

from __future__ import annotations

from dataclasses import dataclass

from agentbench_af.api import Variant, register

#: short name (used in ids and variant fields) -> ALFWorld task type
TASK_TYPES: dict[str, str] = {
    "pick": "pick_and_place_simple",
    "look": "look_at_obj_in_light",
    "clean": "pick_clean_then_place_in_recep",
    "heat": "pick_heat_then_place_in_recep",
    "cool": "pick_cool_then_place_in_recep",
    "pick2": "pick_two_obj_and_place",
}
SOURCES = ("generated", "official")
SCENE_POOLS = ("seen", "unseen")
OFFICIAL_SPLITS = ("train", "valid_seen", "valid_unseen")


@dataclass(frozen=True)
class ALFWorldVariant(Variant):
    """`task_type` is a key of TASK_TYPES or "all" (the type is then drawn from the seed).

    `source="generated"`: tasks generated from the shipped layouts; training seeds use the 96 training
    floor plans, evaluation seeds the pool named by `eval_scenes` ("unseen": the 24 held-out floor
    plans, like ALFWorld's valid_unseen). `source="official"`: the official task files under
    `$ALFWORLD_DATA/json_2.1.1`; training seeds index the train split, evaluation seeds `official_eval_split`.
    """

    task_type: str = "all"
    source: str = "generated"
    eval_scenes: str = "unseen"
    official_eval_split: str = "valid_unseen"
    max_turns: int = 50
    max_actions_per_turn: int = 1
    max_actions_per_episode: int = 50

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.task_type != "all" and self.task_type not in TASK_TYPES:
            raise ValueError(f"task_type {self.task_type!r} must be 'all' or one of {sorted(TASK_TYPES)}")
        if self.source not in SOURCES:
            raise ValueError(f"source {self.source!r} must be one of {SOURCES}")
        if self.eval_scenes not in SCENE_POOLS:
            raise ValueError(f"eval_scenes {self.eval_scenes!r} must be one of {SCENE_POOLS}")
        if self.official_eval_split not in OFFICIAL_SPLITS[1:]:
            raise ValueError(f"official_eval_split {self.official_eval_split!r} must be one of {OFFICIAL_SPLITS[1:]}")


_ENTRY = "agentbench_af.environments.alfworld.env:ALFWorldEnv"
_DESCRIPTIONS = {
    "pick": "Find an object and put it in or on a receptacle.",
    "look": "Find an object and examine it under a lamp (pick it up, turn the lamp on).",
    "clean": "Clean an object in the sink, then put it in or on a receptacle.",
    "heat": "Heat an object in the microwave, then put it in or on a receptacle.",
    "cool": "Cool an object in the fridge, then put it in or on a receptacle.",
    "pick2": "Find two objects of one kind and put both in or on a receptacle.",
}

VARIANTS: dict[str, tuple[ALFWorldVariant, str]] = {
    f"ALFWorld-{key}-v0": (ALFWorldVariant(task_type=key), f"Generated ALFWorld task: {desc}")
    for key, desc in _DESCRIPTIONS.items()
}
VARIANTS["ALFWorld-all-v0"] = (
    ALFWorldVariant(task_type="all"),
    "Generated ALFWorld task of one of the six types (drawn from the seed).",
)
VARIANTS["ALFWorld-official-v0"] = (
    ALFWorldVariant(task_type="all", source="official"),
    "Official ALFWorld task files from $ALFWORLD_DATA (train split; eval seeds: valid_unseen).",
)

for _id, (_variant, _desc) in VARIANTS.items():
    register(_id, _ENTRY, _variant, _desc, extra="alfworld")

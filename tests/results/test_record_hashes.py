"""A committed record's config, read by today's code, hashes to the record's `config_hash`: new config
fields at their defaults must not split today's runs from the committed ones (`HASH_DROP_AT_DEFAULT`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentbench_af.config import config_hash
from agentbench_af.train.config import train_config_from_dict

ROOT = Path(__file__).resolve().parents[2] / "leaderboards"
# the studies written with fingerprints; the older learning checks predate later config changes
STUDIES = ("cpu-quick-v3", "cpu-confirm", "cpu-confirm-lr", "cpu-confirm-sudoku")


@pytest.mark.parametrize("study", STUDIES)
def test_committed_records_keep_their_config_hash(study):
    records = sorted((ROOT / study / "runs").glob("*/record.json"))
    assert records, f"no records under {study}"
    differ = []
    for path in records:
        data = json.loads(path.read_text())
        if config_hash(train_config_from_dict(data["config"])) != data["config_hash"]:
            differ.append(path.parent.name)
    assert not differ, f"{len(differ)} of {len(records)} records hash differently now: {differ[:3]}"


def test_a_new_field_away_from_its_default_changes_the_hash():
    data = json.loads(next((ROOT / "cpu-quick-v3" / "runs").glob("*/record.json")).read_text())
    cfg = train_config_from_dict(data["config"])
    moved = train_config_from_dict({**data["config"], "loss": {**data["config"]["loss"], "policy": "gspo"}})
    assert config_hash(cfg) == data["config_hash"] != config_hash(moved)
    bf16 = train_config_from_dict({**data["config"], "rollout": {**data["config"]["rollout"], "sampler_dtype": "bfloat16"}})
    assert config_hash(bf16) != data["config_hash"]

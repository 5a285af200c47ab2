"""The registry: ids, Gymnasium mirroring, unknown ids, variant overrides."""

import re

import gymnasium as gym
import pytest

import agentbench_af
import agentbench_af.environments  # noqa: F401  (registers every id, also in Gymnasium)
from agentbench_af.api.registry import register
from agentbench_af.api.types import Variant

FROZENLAKE_IDS = {
    "FrozenLake-4x4-v0",
    "FrozenLake-4x4-slippery-v0",
    "FrozenLake-6x6-v0",
    "FrozenLake-8x8-v0",
    "FrozenLake-4x4-randstart-v0",
}


def test_ids_are_sorted_versioned_and_include_frozenlake():
    ids = agentbench_af.list_envs()
    assert ids == sorted(set(ids))
    assert FROZENLAKE_IDS <= set(ids)
    assert all(re.fullmatch(r"[A-Za-z][A-Za-z0-9_.\-]*-v\d+", i) for i in ids)
    assert all(agentbench_af.spec(i).description for i in ids)


def test_gymnasium_make():
    env = gym.make("agentbench_af/FrozenLake-4x4-v0")
    assert isinstance(env.unwrapped, agentbench_af.TextEnv)
    obs, info = env.reset(seed=3)
    assert obs == agentbench_af.make("FrozenLake-4x4-v0").reset(seed=3)[0]
    _, reward, terminated, truncated, info = env.step("<answer>Down</answer>")
    assert info["action_is_valid"] and isinstance(reward, float) and not truncated
    env.close()


def test_gymnasium_module_prefix_loads_the_suite():
    env = gym.make("agentbench_af.environments:agentbench_af/FrozenLake-6x6-v0")
    assert env.unwrapped.variant.size == 6


def test_unknown_id_message():
    with pytest.raises(KeyError, match=r"unknown environment id 'FrozenLake-5x5-v0'; did you mean one of \["):
        agentbench_af.make("FrozenLake-5x5-v0")
    with pytest.raises(KeyError, match="see `agentbench-af envs`"):
        agentbench_af.make("Chess-v0")


def test_gym_prefix_is_accepted_by_make():
    assert agentbench_af.spec("agentbench_af/FrozenLake-4x4-v0").id == "FrozenLake-4x4-v0"


def test_variant_override_changes_the_limit():
    env = agentbench_af.make("FrozenLake-4x4-v0", max_turns=3)
    assert env.variant.max_turns == 3
    assert (
        agentbench_af.make("FrozenLake-4x4-v0").variant.max_turns == 5
    )  # the registered variant is untouched
    env.reset(seed=0)
    flags = [env.step("<answer></answer>")[3] for _ in range(3)]
    assert flags == [False, False, True]


def test_bad_override_key():
    with pytest.raises(TypeError, match=r"FrozenLake-4x4-v0 has no variant field\(s\) \['max_turn'\]"):
        agentbench_af.make("FrozenLake-4x4-v0", max_turn=3)


def test_bad_override_value_is_rejected_by_the_variant():
    with pytest.raises(ValueError, match="limits must be >= 1"):
        agentbench_af.make("FrozenLake-4x4-v0", max_turns=0)


def test_register_rejects_bad_and_duplicate_ids():
    entry = "agentbench_af.environments.frozenlake.env:FrozenLakeEnv"
    with pytest.raises(ValueError, match="must look like Name-variant-v0"):
        register("no_version", entry, Variant(), "x")
    with pytest.raises(ValueError, match="already registered"):
        register("FrozenLake-4x4-v0", entry, Variant(), "x")
